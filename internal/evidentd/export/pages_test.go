package export

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// pagedStore serves Entries of a chain of n synthetic entries; the read from failAt (when
// set) fails. Only Entries is implemented.
type pagedStore struct {
	store.Store
	n      uint64
	failAt int64 // -1: never
	reads  atomic.Int64
}

var errRead = errors.New("read failed")

func (s *pagedStore) Entries(ctx context.Context, chain string, f store.Filter) ([]store.Entry, error) {
	s.reads.Add(1)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.failAt >= 0 && f.From == uint64(s.failAt) {
		return nil, errRead
	}
	var out []store.Entry
	for q := f.From; q < s.n && len(out) < f.Limit; q++ {
		out = append(out, store.Entry{Chain: chain, Seq: q, Link: ledger.Link{byte(q), byte(q >> 8), byte(q >> 16)}, Record: []byte(`{}`)})
	}
	return out, nil
}

// TestEntryPages: every entry below size comes once, in order, whatever the chain's length
// against the page size; a failed read ends the pages with its error.
func TestEntryPages(t *testing.T) {
	for _, tc := range []struct {
		name     string
		n, size  uint64
		failAt   int64
		wantSeqs uint64
		wantErr  error
	}{
		{"empty", 0, 0, -1, 0, nil},
		{"no entries stored", 0, 10, -1, 0, nil},
		{"one short page", 7, 7, -1, 7, nil},
		{"exactly one page", pageSize, pageSize, -1, pageSize, nil},
		{"pages and a part", 3*pageSize + 11, 3*pageSize + 11, -1, 3*pageSize + 11, nil},
		{"exactly four pages", 4 * pageSize, 4 * pageSize, -1, 4 * pageSize, nil},
		{"size below the chain's", 3 * pageSize, 2*pageSize + 1, -1, 2*pageSize + 1, nil},
		{"chain shorter than size", pageSize + 3, 5 * pageSize, -1, pageSize + 3, nil},
		{"third page fails", 5 * pageSize, 5 * pageSize, 2 * pageSize, 2 * pageSize, errRead},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &pagedStore{n: tc.n, failAt: tc.failAt}
			var next uint64
			var gotErr error
			for es, err := range entryPages(context.Background(), st, "c", tc.size) {
				if err != nil {
					gotErr = err
					continue
				}
				for _, e := range es {
					if e.Seq != next {
						t.Fatalf("seq %d where %d was expected", e.Seq, next)
					}
					next++
				}
			}
			if next != tc.wantSeqs || !errors.Is(gotErr, tc.wantErr) {
				t.Fatalf("%d entries, error %v; want %d, %v", next, gotErr, tc.wantSeqs, tc.wantErr)
			}
		})
	}
}

// TestEntryPagesStopsReaders: a caller that stops after the first page leaves no reader
// behind, and no reader reads far past what it was asked for.
func TestEntryPagesStopsReaders(t *testing.T) {
	st := &pagedStore{n: 100 * pageSize, failAt: -1}
	for range entryPages(context.Background(), st, "c", st.n) {
		break
	}
	// entryPages returns only once its readers have, so no read can follow; each reader got
	// at most three pages in: one taken, one in its channel, one waiting to be sent.
	if r := st.reads.Load(); r > 3*pageReaders {
		t.Errorf("%d reads after stopping at the first page", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := 0
	for _, err := range entryPages(ctx, st, "c", st.n) {
		if n++; !errors.Is(err, context.Canceled) {
			t.Fatalf("page read under an ended context: %v", err)
		}
	}
	if n != 1 {
		t.Errorf("%d pages under an ended context, want the one error", n)
	}
}

// TestWriteEntries: lines for every entry, the prover fed every link, a gap refused.
func TestWriteEntries(t *testing.T) {
	st := &pagedStore{n: pageSize + 5, failAt: -1}
	var out bytes.Buffer
	p := ledger.NewProver()
	if err := p.PlanRoot(st.n); err != nil {
		t.Fatal(err)
	}
	n, head, err := writeEntries(&out, entryPages(context.Background(), st, "c", st.n), p)
	if err != nil || n != st.n || head != (ledger.Link{byte(n - 1), byte((n - 1) >> 8)}) {
		t.Fatalf("%d entries, head %s, %v", n, head, err)
	}
	lines := bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n"))
	if uint64(len(lines)) != n || p.Size() != n {
		t.Fatalf("%d lines, prover at %d, for %d entries", len(lines), p.Size(), n)
	}
	var e bundle.EntryLine
	if err := json.Unmarshal(lines[n-1], &e); err != nil || e.Seq != n-1 || string(e.Record) != `{}` {
		t.Fatalf("last line %s: %+v, %v", lines[n-1], e, err)
	}
	gap := func(yield func([]store.Entry, error) bool) {
		yield([]store.Entry{{Seq: 0, Record: []byte(`{}`)}, {Seq: 2, Record: []byte(`{}`)}}, nil)
	}
	if _, _, err := writeEntries(&out, gap, ledger.NewProver()); err == nil || !strings.Contains(err.Error(), "entry 2 where 1 was expected") {
		t.Errorf("a gap: %v", err)
	}
}
