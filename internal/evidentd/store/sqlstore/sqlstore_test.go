package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/recordfile"
)

func TestBatchLen(t *testing.T) {
	sized := func(n, size int) []store.Entry {
		es := make([]store.Entry, n)
		for i := range es {
			es[i].Record = make([]byte, size)
		}
		return es
	}
	for _, tc := range []struct {
		name string
		es   []store.Entry
		want int
	}{
		{"one", sized(1, 10), 1},
		{"few", sized(7, 10), 7},
		{"rows bound", sized(insertRows+1, 10), insertRows},
		{"bytes bound", sized(10, 1<<20), 3},
		{"one larger than the bound", sized(2, insertBytes*2), 1},
	} {
		if got := batchLen(tc.es); got != tc.want {
			t.Errorf("%s: batchLen = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestEntriesQuery holds the SELECT of each dialect shape: attributes in rows of their
// own and metadata joined, or both in the entry's row and attributes by number (the
// embedded store, which also keeps records' places).
func TestEntriesQuery(t *testing.T) {
	rows := Dialect{Tables: Tables{Entries: "ents", Attrs: "a", Meta: "mt"}, RecordColumn: "record"}
	inRow := Dialect{Tables: Tables{Entries: "ents", AttrValues: "av", AttrSeqs: "as"}, RecordColumn: "rec", AttrsInRow: true, Records: noRecords{}}
	since := time.UnixMilli(1000)
	for _, tc := range []struct {
		name     string
		d        *Dialect
		f        store.Filter
		where    string // what follows the fixed chain and seq conditions
		wantArgs []any
	}{
		{"none", &rows, store.Filter{}, ` ORDER BY e.seq`, []any{"c", uint64(0)}},
		{"from and limit", &rows, store.Filter{From: 5, Limit: 3}, ` ORDER BY e.seq LIMIT 3`, []any{"c", uint64(5)}},
		{"method sender since until", &rows, store.Filter{Method: "m", Sender: "s", Since: since, Until: since.Add(time.Second)},
			` AND e.method=? AND e.sender=? AND e.arrival>=? AND e.arrival<? ORDER BY e.seq`, []any{"c", uint64(0), "m", "s", int64(1000), int64(2000)}},
		{"attributes in name order", &rows, store.Filter{Attrs: map[string][]string{"z": {"1"}, "a": {"2", "3"}}},
			strings.Repeat(` AND e.seq IN (SELECT seq FROM a WHERE chain=? AND name=? AND value=?)`, 3) + ` ORDER BY e.seq`,
			[]any{"c", uint64(0), "c", "a", "2", "c", "a", "3", "c", "z", "1"}},
		{"in row: none", &inRow, store.Filter{}, ` ORDER BY e.seq`, []any{"c", uint64(0)}},
		{"in row: attributes by number", &inRow, store.Filter{Attrs: map[string][]string{"z": {"1"}, "a": {"2"}}, Limit: 2},
			strings.Repeat(` AND e.seq IN (SELECT seq FROM as WHERE value=(SELECT id FROM av WHERE chain=? AND name=? AND value=?))`, 2) + ` ORDER BY e.seq LIMIT 2`,
			[]any{"c", uint64(0), "c", "a", "2", "c", "z", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, args := entriesQuery(tc.d, "c", tc.f)
			want := `SELECT e.seq, e.prev, e.link, e.arrival, e.record, e.record_id, e.method, e.sender, e.ts, e.signed, m.meta FROM ents e LEFT JOIN mt m ON m.chain=e.chain AND m.seq=e.seq WHERE e.chain=? AND e.seq>=?` + tc.where
			if tc.d.AttrsInRow {
				want = `SELECT e.seq, e.prev, e.link, e.arrival, e.rec, e.record_id, e.method, e.sender, e.ts, e.signed, e.meta, e.attrs, e.rec_off, e.rec_len FROM ents e WHERE e.chain=? AND e.seq>=?` + tc.where
			}
			if q != want {
				t.Errorf("query\n%s\nwant\n%s", q, want)
			}
			if !slices.Equal(args, tc.wantArgs) {
				t.Errorf("args %v, want %v", args, tc.wantArgs)
			}
			if n := strings.Count(q, "?"); n != len(args) {
				t.Errorf("%d placeholders, %d args", n, len(args))
			}
		})
	}
}

// noRecords is a Records that holds nothing: entriesQuery only asks whether there is one.
type noRecords struct{}

func (noRecords) Put(context.Context, *sql.Tx, [][]byte) ([]recordfile.Place, error) {
	return nil, errors.New("no records")
}
func (noRecords) Sync() error                              { return nil }
func (noRecords) Get([]recordfile.Place) ([][]byte, error) { return nil, errors.New("no records") }

func TestPlaceholders(t *testing.T) {
	for n, want := range map[int]string{1: "(?)", 3: "(?,?,?)"} {
		if got := placeholders(n); got != want {
			t.Errorf("placeholders(%d) = %q, want %q", n, got, want)
		}
	}
}
