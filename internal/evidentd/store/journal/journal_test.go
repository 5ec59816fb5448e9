package journal_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/journal"
	"github.com/evident-log/evident/internal/evidentd/store/sqlite"
	"github.com/evident-log/evident/ledger"
)

var t0 = time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)

// batch returns the batch adding n entries to chain, which holds size entries ending at
// head.
func batch(chain string, size uint64, head ledger.Link, n int) store.Batch {
	return paddedBatch(chain, size, head, n, 0)
}

// paddedBatch is batch with records padded by pad bytes (a CHAP envelope is about 450).
func paddedBatch(chain string, size uint64, head ledger.Link, n, pad int) store.Batch {
	var es []store.Entry
	prev := head
	for i := range n {
		seq := size + uint64(i)
		rec := fmt.Appendf(nil, `{"chain":%q,"seq":%d}`, chain, seq)
		if pad > 0 {
			rec = fmt.Appendf(rec[:len(rec)-1], `,"pad":%q}`, strings.Repeat("x", pad))
		}
		l := ledger.NextLink(rec, prev)
		e := store.Entry{Chain: chain, Seq: seq, Prev: prev, Link: l, Arrival: t0.Add(time.Duration(seq) * time.Millisecond), Record: rec,
			RecordID: fmt.Sprintf("%s-%d", chain, seq), Method: "task.update", Sender: "s", Signed: true,
			Attrs: map[string][]string{"task_id": {fmt.Sprintf("t%d", seq%3)}, "outcome": {"accepted"}}}
		if seq%2 == 0 {
			e.Meta = fmt.Appendf(nil, `{"seq":%d}`, seq)
			e.TS = t0.Add(time.Duration(seq) * time.Second)
		}
		es = append(es, e)
		prev = l
	}
	return store.Batch{Chain: &store.ChainRecord{ID: chain, Profile: "chap/0.3", Size: size + uint64(n), Head: prev, Tree: []byte(`{}`), State: []byte(`{}`)},
		PrevSize: size, Entries: es}
}

// open opens the journal in dir/journal in front of the SQLite store dir/ledger.db.
func open(t testing.TB, dir string, o journal.Options) *journal.Ledger {
	t.Helper()
	inner, err := sqlite.Open(context.Background(), filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := journal.Open(context.Background(), filepath.Join(dir, "journal"), inner, o)
	if err != nil {
		inner.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// noFold keeps the indexer from folding anything in while a test runs.
var noFold = journal.Options{Gather: time.Hour}

// segments lists the segment files of dir/journal.
func segments(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "journal", "*.seg"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// checkChain fails t unless s holds chain at size with head, its entries linked in order.
func checkChain(t *testing.T, s store.Store, chain string, size uint64, head ledger.Link) {
	t.Helper()
	ctx := context.Background()
	c, err := s.LoadChain(ctx, chain)
	if err != nil || c.Size != size || c.Head != head {
		t.Fatalf("chain %s: %+v, %v; want size %d", chain, c, err, size)
	}
	es, err := s.Entries(ctx, chain, store.Filter{})
	if err != nil || uint64(len(es)) != size {
		t.Fatalf("chain %s: %d entries, %v; want %d", chain, len(es), err, size)
	}
	prev := ledger.Genesis
	for i, e := range es {
		if e.Seq != uint64(i) || e.Prev != prev || e.Link != ledger.NextLink(e.Record, prev) {
			t.Fatalf("chain %s entry %d: seq %d, not linked", chain, i, e.Seq)
		}
		prev = e.Link
	}
}

// TestCrashRecovery: batches journaled and never folded into the store (the process killed
// first) are in the store after the next Open, and the journal's segments are gone.
func TestCrashRecovery(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := open(t, dir, journal.Options{Gather: time.Hour, SegmentBytes: 2 << 10})
	heads := map[string]ledger.Link{"a": ledger.Genesis, "b": ledger.Genesis, "c": ledger.Genesis}
	sizes := map[string]uint64{}
	for round := range 6 {
		var group []store.Batch
		for _, id := range []string{"a", "b", "c"} {
			group = append(group, batch(id, sizes[id], heads[id], 1+round%3))
		}
		for i, err := range l.CommitGroup(ctx, group) {
			if err != nil {
				t.Fatalf("round %d batch %d: %v", round, i, err)
			}
		}
		for _, b := range group {
			heads[b.Chain.ID], sizes[b.Chain.ID] = b.Chain.Head, b.Chain.Size
		}
		if round == 2 {
			// Fold half of it in, so that recovery finds some batches held and some not.
			if _, err := l.Entries(ctx, "a", store.Filter{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if l.Pending() == 0 {
		t.Fatal("nothing pending: the test would not test recovery")
	}
	if n := len(segments(t, dir)); n < 2 {
		t.Fatalf("%d segments; want several (2 KiB each)", n)
	}
	l.Crash()

	// The store alone does not hold the journaled batches...
	inner, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := inner.LoadChain(ctx, "a"); err != nil || c.Size >= sizes["a"] {
		t.Fatalf("the store holds chain a at %v (%v) before recovery; want less than %d", c, err, sizes["a"])
	}
	inner.Close()
	// ... and the store with its journal does, in the store itself.
	l2 := open(t, dir, noFold)
	if got := l2.Pending(); got != 0 {
		t.Errorf("%d entries pending after recovery", got)
	}
	for id, head := range heads {
		checkChain(t, l2, id, sizes[id], head)
	}
	if n := len(segments(t, dir)); n != 1 {
		t.Errorf("%d segments after recovery, want only the new one", n)
	}
	// Commits go on where the chains are.
	b := batch("a", sizes["a"], heads["a"], 2)
	if err := l2.Commit(ctx, b.Chain, b.PrevSize, b.Entries); err != nil {
		t.Fatal(err)
	}
	checkChain(t, l2, "a", b.Chain.Size, b.Chain.Head)
}

// TestTornFrameIgnored: a frame cut short at the end of the last segment (a crash during
// its append, which never returned) is ignored, and every frame before it is recovered.
func TestTornFrameIgnored(t *testing.T) {
	ctx := context.Background()
	for name, tail := range map[string]func(frame []byte) []byte{
		"header cut":  func(f []byte) []byte { return f[:5] },
		"payload cut": func(f []byte) []byte { return f[:len(f)-3] },
		"zeros":       func(f []byte) []byte { return make([]byte, len(f)) },
		"bad sum":     func(f []byte) []byte { g := slices.Clone(f); g[len(g)-1] ^= 1; return g },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l := open(t, dir, noFold)
			b := batch("a", 0, ledger.Genesis, 3)
			if err := l.Commit(ctx, b.Chain, 0, b.Entries); err != nil {
				t.Fatal(err)
			}
			l.Crash()
			segs := segments(t, dir)
			f, err := os.OpenFile(segs[len(segs)-1], os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			next := batch("a", 3, b.Chain.Head, 2)
			if _, err := f.Write(tail(frame(journal.Encode([]store.Batch{next})))); err != nil {
				t.Fatal(err)
			}
			f.Close()
			l2 := open(t, dir, noFold)
			checkChain(t, l2, "a", 3, b.Chain.Head)
		})
	}
}

// frame returns payload framed as the journal writes it.
func frame(payload []byte) []byte {
	t := crc32.MakeTable(crc32.Castagnoli)
	f := binary.LittleEndian.AppendUint32(nil, uint32(len(payload)))
	f = binary.LittleEndian.AppendUint32(f, crc32.Checksum(f, t))
	f = binary.LittleEndian.AppendUint32(f, crc32.Checksum(payload, t))
	return append(f, payload...)
}

// TestReadSegment: what a segment's bytes give, where its good frames end, and which
// damage is corruption.
func TestReadSegment(t *testing.T) {
	p1, p2, p3 := []byte("one"), []byte("second"), []byte("third one")
	m := len(journal.SegmentMagic)
	good := slices.Concat([]byte(journal.SegmentMagic), frame(p1), frame(p2))
	end1 := m + 12 + len(p1) // where the first frame ends
	three := slices.Concat(good, frame(p3))
	flip := func(b []byte, at int) []byte { b = slices.Clone(b); b[at] ^= 1; return b }
	for _, tc := range []struct {
		name    string
		data    []byte
		last    bool
		want    [][]byte
		end     int
		corrupt bool
	}{
		{"two frames", good, false, [][]byte{p1, p2}, len(good), false},
		{"empty last segment", nil, true, nil, 0, false},
		{"zeroed last segment", make([]byte, 8), true, nil, 0, false},
		{"half a header, last segment", []byte(journal.SegmentMagic[:3]), true, nil, 0, false},
		{"empty earlier segment", nil, false, nil, 0, true},
		{"not a segment", []byte("hello, world"), true, nil, 0, true},
		{"torn header, last", good[:end1+5], true, [][]byte{p1}, end1, false},
		{"torn header, earlier", good[:end1+5], false, nil, 0, true},
		{"torn payload, last", good[:len(good)-1], true, [][]byte{p1}, end1, false},
		{"zero tail, last", slices.Concat(good, make([]byte, 40)), true, [][]byte{p1, p2}, len(good), false},
		{"zero tail, earlier", slices.Concat(good, make([]byte, 40)), false, nil, 0, true},
		{"a damaged payload before a good frame", flip(good, m+12), true, nil, 0, true},
		{"a damaged length before good frames", flip(three, end1), true, nil, 0, true},
		{"a damaged payload sum before a good frame", flip(three, end1+8), true, nil, 0, true},
		{"a damaged last frame, last segment (a torn write looks the same)", flip(good, end1+12), true, [][]byte{p1}, end1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, end, err := journal.ReadSegment(tc.data, tc.last)
			if tc.corrupt {
				if !errors.Is(err, journal.ErrCorrupt) {
					t.Fatalf("got %q, %v; want ErrCorrupt", got, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) || end != tc.end {
				t.Fatalf("got %q ending at %d, %v; want %q ending at %d", got, end, err, tc.want, tc.end)
			}
		})
	}
}

// TestCorruptSegmentRefused: a damaged frame that is not a torn tail stops Open with
// ErrCorrupt instead of dropping acknowledged entries.
func TestCorruptSegmentRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := open(t, dir, noFold)
	for i := range 2 {
		b := batch("a", uint64(2*i), ledger.Genesis, 2)
		if i == 1 {
			c, _ := l.LoadChain(ctx, "a")
			b = batch("a", 2, c.Head, 2)
		}
		if err := l.Commit(ctx, b.Chain, b.PrevSize, b.Entries); err != nil {
			t.Fatal(err)
		}
	}
	l.Crash()
	segs := segments(t, dir)
	data, err := os.ReadFile(segs[len(segs)-1])
	if err != nil {
		t.Fatal(err)
	}
	data[len(journal.SegmentMagic)+20] ^= 0xff // inside the first frame's payload
	if err := os.WriteFile(segs[len(segs)-1], data, 0o644); err != nil {
		t.Fatal(err)
	}
	inner, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	if _, err := journal.Open(ctx, filepath.Join(dir, "journal"), inner, noFold); !errors.Is(err, journal.ErrCorrupt) {
		t.Fatalf("Open: %v, want ErrCorrupt", err)
	}
}

// TestOneLedgerPerJournal: a second Open of a journal in use fails with ErrLocked.
func TestOneLedgerPerJournal(t *testing.T) {
	dir := t.TempDir()
	open(t, dir, noFold)
	inner, err := sqlite.Open(context.Background(), filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	if _, err := journal.Open(context.Background(), filepath.Join(dir, "journal"), inner, noFold); !errors.Is(err, journal.ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
}

// TestIndexerFoldsAndReleases: the indexer folds journaled entries into the store by
// itself and deletes the segments it has folded.
func TestIndexerFoldsAndReleases(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := open(t, dir, journal.Options{Gather: time.Millisecond, SegmentBytes: 1 << 10})
	var size uint64
	head := ledger.Genesis
	for range 40 {
		b := batch("a", size, head, 2)
		if err := l.Commit(ctx, b.Chain, size, b.Entries); err != nil {
			t.Fatal(err)
		}
		size, head = b.Chain.Size, b.Chain.Head
	}
	deadline := time.Now().Add(20 * time.Second)
	for l.Pending() > 0 || len(segments(t, dir)) > 1 {
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s: %d entries pending, %d segments", l.Pending(), len(segments(t, dir)))
		}
		time.Sleep(5 * time.Millisecond)
	}
	inner, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	checkChain(t, inner, "a", size, head)
}

// TestCodecRoundTrip: a group's batches come back from their payload as they went in.
func TestCodecRoundTrip(t *testing.T) {
	a, b := batch("a", 0, ledger.Genesis, 3), batch("b", 7, ledger.Link{1}, 2)
	a.Chain.Closed, a.Chain.LastSeal, a.Chain.SealedSize, a.Chain.Created = true, "s1", 2, t0
	b.Entries[0].Meta = []byte{} // empty, not absent
	b.Entries[1].Attrs = nil
	in := []store.Batch{a, b}
	if p, bound := journal.Encode(in), journal.PayloadBound(in); len(p) > bound {
		t.Fatalf("payload of %d bytes, bound %d", len(p), bound)
	}
	got, err := journal.Decode(journal.Encode(in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, in)
	}
	for n := range len(journal.Encode(in)) {
		if _, err := journal.Decode(journal.Encode(in)[:n]); !errors.Is(err, journal.ErrCorrupt) {
			t.Fatalf("payload cut to %d bytes: %v, want ErrCorrupt", n, err)
		}
	}
}

// FuzzDecode: any payload decodes to batches that encode and decode to themselves, or is
// refused with ErrCorrupt; nothing panics or allocates what the payload cannot hold.
func FuzzDecode(f *testing.F) {
	f.Add(journal.Encode([]store.Batch{batch("a", 0, ledger.Genesis, 2)}))
	f.Add(journal.Encode([]store.Batch{batch("a", 3, ledger.Link{9}, 1), batch("bb", 0, ledger.Genesis, 1)}))
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		got, err := journal.Decode(p)
		if err != nil {
			if !errors.Is(err, journal.ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		p = journal.Encode(got)
		if bound := journal.PayloadBound(got); len(p) > bound {
			t.Fatalf("payload of %d bytes, bound %d", len(p), bound)
		}
		again, err := journal.Decode(p)
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("re-encoded: %v\n got %+v\nwant %+v", err, again, got)
		}
	})
}

// FuzzReadSegment: any segment bytes give frames or an error wrapping ErrCorrupt, and never
// a frame whose checksum fails.
func FuzzReadSegment(f *testing.F) {
	f.Add(append([]byte(journal.SegmentMagic), frame([]byte("abc"))...), true)
	f.Add(append([]byte(journal.SegmentMagic), frame([]byte("abc"))[:6]...), true)
	f.Add(slices.Concat([]byte(journal.SegmentMagic), frame([]byte("abc")), frame([]byte("de"))), false)
	f.Add([]byte(journal.SegmentMagic), false)
	f.Fuzz(func(t *testing.T, data []byte, last bool) {
		got, end, err := journal.ReadSegment(data, last)
		if err != nil {
			if !errors.Is(err, journal.ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		off := len(journal.SegmentMagic)
		if len(got) == 0 && end == 0 {
			return // an empty segment
		}
		for _, p := range got {
			if !slices.Equal(frame(p), data[off:off+12+len(p)]) {
				t.Fatalf("frame at %d is not the bytes read", off)
			}
			off += 12 + len(p)
		}
		if end != off {
			t.Fatalf("the frames end at %d, ReadSegment says %d", off, end)
		}
	})
}

// TestRecordIDUsedAfterLookup: a record id looked up as unused, then used by a commit, is
// refused to the next commits of its chain, from the journal and from the store alike.
func TestRecordIDUsedAfterLookup(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := open(t, dir, noFold)
	b := batch("a", 0, ledger.Genesis, 2)
	if err := l.Commit(ctx, b.Chain, 0, b.Entries); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Entries(ctx, "a", store.Filter{}); err != nil { // fold: the store holds the chain
		t.Fatal(err)
	}
	used, err := l.FindRecordIDs(ctx, "a", []string{"x"})
	if err != nil || len(used) != 0 {
		t.Fatalf("lookup of an unused id: %v, %v", used, err)
	}
	size, head := b.Chain.Size, b.Chain.Head
	next := func(id string) store.Batch {
		n := batch("a", size, head, 1)
		n.Entries[0].RecordID = id
		return n
	}
	first := next("x")
	if err := l.Commit(ctx, first.Chain, size, first.Entries); err != nil {
		t.Fatal(err)
	}
	size, head = first.Chain.Size, first.Chain.Head
	again := next("x")
	if err := l.Commit(ctx, again.Chain, size, again.Entries); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("id reused while journaled: %v, want ErrConflict", err)
	}
	if _, err := l.Entries(ctx, "a", store.Filter{}); err != nil { // fold again
		t.Fatal(err)
	}
	if err := l.Commit(ctx, again.Chain, size, again.Entries); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("id reused once in the store: %v, want ErrConflict", err)
	}
	checkChain(t, l, "a", size, head)
}

// TestIDReusedAfterFoldInGroup: a record id the store holds is refused even when a fold in
// the middle of a group (a batch without entries folds the journal first) took its chain
// out of the overlay between the checks of two groups.
func TestIDReusedAfterFoldInGroup(t *testing.T) {
	ctx := context.Background()
	l := open(t, t.TempDir(), noFold)
	b1 := batch("c", 0, ledger.Genesis, 1) // record id "c-0"
	if err := l.Commit(ctx, b1.Chain, 0, b1.Entries); err != nil {
		t.Fatal(err)
	}
	b2 := batch("c", 1, b1.Chain.Head, 1)
	d := &store.ChainRecord{ID: "d", Profile: "chap/0.3", Tree: []byte(`{}`), State: []byte(`{}`)}
	for i, err := range l.CommitGroup(ctx, []store.Batch{b2, {Chain: d}}) {
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	b3 := batch("c", 2, b2.Chain.Head, 1)
	b3.Entries[0].RecordID = "c-0"
	if err := l.Commit(ctx, b3.Chain, 2, b3.Entries); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("reused id after a fold: %v, want ErrConflict", err)
	}
	checkChain(t, l, "c", 2, b2.Chain.Head)
	if _, err := l.LoadChain(ctx, "d"); err != nil {
		t.Fatalf("chain d, committed without entries: %v", err)
	}
}

// TestBatchShapeRefused: a batch whose entries are not the chain's next ones, or whose
// chain size does not count them, is refused and nothing of it is kept.
func TestBatchShapeRefused(t *testing.T) {
	ctx := context.Background()
	l := open(t, t.TempDir(), noFold)
	b := batch("a", 0, ledger.Genesis, 3)
	for name, bad := range map[string]func(store.Batch) store.Batch{
		"size not counting the entries": func(b store.Batch) store.Batch {
			c := *b.Chain
			c.Size = 1
			b.Chain = &c
			return b
		},
		"a gap in the seqs": func(b store.Batch) store.Batch {
			b.Entries = slices.Clone(b.Entries)
			b.Entries[2].Seq = 5
			return b
		},
		"seqs not from the chain's size": func(b store.Batch) store.Batch {
			b.Entries = slices.Clone(b.Entries)
			for i := range b.Entries {
				b.Entries[i].Seq++
			}
			return b
		},
	} {
		x := bad(b)
		if err := l.Commit(ctx, x.Chain, x.PrevSize, x.Entries); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := l.LoadChain(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("chain a after refused batches: %v, want ErrNotFound", err)
	}
	if err := l.Commit(ctx, b.Chain, 0, b.Entries); err != nil {
		t.Fatal(err)
	}
	checkChain(t, l, "a", 3, b.Chain.Head)
}

// TestLinkageRefused: a batch that does not follow its chain's head link by link is
// refused with store.ErrConflict, whether the chain's state is in the overlay or only in
// the store (folded, the journal reopened), and so is a batch reusing a link the store
// holds, which the journal no longer looks up. Nothing refused is kept.
func TestLinkageRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := open(t, dir, noFold)
	first := batch("a", 0, ledger.Genesis, 3)
	if err := l.Commit(ctx, first.Chain, 0, first.Entries); err != nil {
		t.Fatal(err)
	}
	next := batch("a", 3, first.Chain.Head, 2)
	cases := map[string]func(store.Batch) store.Batch{
		"first entry not after the head": func(b store.Batch) store.Batch {
			return batch("a", 3, first.Entries[1].Link, 2)
		},
		"a link not its record's": func(b store.Batch) store.Batch {
			b.Entries = slices.Clone(b.Entries)
			b.Entries[1].Link[0] ^= 1
			c := *b.Chain
			c.Head = b.Entries[1].Link
			b.Chain = &c
			return b
		},
		"an entry not after the one before it": func(b store.Batch) store.Batch {
			b.Entries = slices.Clone(b.Entries)
			b.Entries[1].Prev = first.Chain.Head
			b.Entries[1].Link = ledger.NextLink(b.Entries[1].Record, b.Entries[1].Prev)
			return b
		},
		"a link the chain holds": func(b store.Batch) store.Batch {
			b.Entries = slices.Clone(b.Entries)
			b.Entries[0].Link = first.Entries[2].Link
			return b
		},
	}
	refuseAll := func(when string) {
		for name, bad := range cases {
			x := bad(next)
			if err := l.Commit(ctx, x.Chain, x.PrevSize, x.Entries); !errors.Is(err, store.ErrConflict) {
				t.Errorf("%s, %s: %v, want ErrConflict", when, name, err)
			}
		}
		wrongHead := next
		c := *next.Chain
		c.Head = first.Chain.Head
		wrongHead.Chain = &c
		if err := l.Commit(ctx, wrongHead.Chain, 3, wrongHead.Entries); err == nil {
			t.Errorf("%s: a chain head that is not the last link: accepted", when)
		}
		checkChain(t, l, "a", 3, first.Chain.Head)
	}
	refuseAll("in the overlay")
	if _, err := l.Chains(ctx); err != nil { // folds
		t.Fatal(err)
	}
	l.Close()
	l = open(t, dir, noFold)
	refuseAll("in the store")
	if err := l.Commit(ctx, next.Chain, 3, next.Entries); err != nil {
		t.Fatal(err)
	}
	checkChain(t, l, "a", 5, next.Chain.Head)
}

// TestReadsWhileCommitting: reads that fold the journal while commits go on never fail
// and always see at least what was acknowledged before them.
func TestReadsWhileCommitting(t *testing.T) {
	ctx := context.Background()
	l := open(t, t.TempDir(), journal.Options{Gather: time.Millisecond})
	var acked atomic.Uint64
	done := make(chan error, 1)
	go func() {
		size, head := uint64(0), ledger.Genesis
		for range 300 {
			b := batch("a", size, head, 1)
			if err := l.Commit(ctx, b.Chain, size, b.Entries); err != nil {
				done <- err
				return
			}
			size, head = b.Chain.Size, b.Chain.Head
			acked.Store(size)
		}
		done <- nil
	}()
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return
		default:
		}
		before := acked.Load()
		es, err := l.Entries(ctx, "a", store.Filter{})
		if err != nil {
			t.Fatalf("Entries while committing: %v", err)
		}
		if uint64(len(es)) < before {
			t.Fatalf("Entries gave %d entries, %d were acknowledged before", len(es), before)
		}
	}
}

// flaky is an inner store whose next fold fails: before writing anything (failBefore) or
// after writing it all (failAfter, as an error reported after a commit that reached the
// disk).
type flaky struct {
	*sqlite.Store
	failBefore, failAfter atomic.Bool
}

func (f *flaky) CommitAll(ctx context.Context, batches []store.Batch) error {
	if f.failBefore.CompareAndSwap(true, false) {
		return errors.New("injected: disk on fire")
	}
	err := f.Store.CommitAll(ctx, batches)
	if err == nil && f.failAfter.CompareAndSwap(true, false) {
		return errors.New("injected: error after the commit")
	}
	return err
}

// TestFoldFailures: a fold that fails is retried until it succeeds, also when the failed
// one reached the store (the retry folds only what the store lacks); a recovery that fails
// leaves the journal to the next Open, which recovers it.
func TestFoldFailures(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	inner, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	f := &flaky{Store: inner}
	l, err := journal.Open(ctx, filepath.Join(dir, "journal"), f, noFold)
	if err != nil {
		t.Fatal(err)
	}
	b := batch("a", 0, ledger.Genesis, 2)
	if err := l.Commit(ctx, b.Chain, 0, b.Entries); err != nil {
		t.Fatal(err)
	}
	f.failAfter.Store(true)
	if _, err := l.Entries(ctx, "a", store.Filter{}); err == nil {
		t.Fatal("the injected fold failure did not reach the reader")
	}
	checkChain(t, l, "a", 2, b.Chain.Head) // the retry finds the store holding it
	b2 := batch("a", 2, b.Chain.Head, 2)
	if err := l.Commit(ctx, b2.Chain, 2, b2.Entries); err != nil {
		t.Fatal(err)
	}
	l.Crash()
	inner.Close()

	// Recovery that fails, then one that works: the journal is recovered whole.
	inner, err = sqlite.Open(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	f = &flaky{Store: inner}
	f.failBefore.Store(true)
	if _, err := journal.Open(ctx, filepath.Join(dir, "journal"), f, noFold); err == nil {
		t.Fatal("Open with a failing store succeeded")
	}
	l2 := open(t, dir, noFold)
	inner.Close()
	checkChain(t, l2, "a", 4, b2.Chain.Head)
}

// TestCreatedKept: a new chain's creation time is the time its first batch was
// acknowledged, read from the journal or from the store, also when the store took it in
// only after a crash.
func TestCreatedKept(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := open(t, dir, noFold)
	t1 := time.Now()
	b := batch("a", 0, ledger.Genesis, 1)
	if err := l.Commit(ctx, b.Chain, 0, b.Entries); err != nil {
		t.Fatal(err)
	}
	t2 := time.Now()
	c, err := l.LoadChain(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if c.Created.Before(t1.Truncate(time.Millisecond)) || c.Created.After(t2) {
		t.Fatalf("created %v, acknowledged between %v and %v", c.Created, t1, t2)
	}
	l.Crash()
	time.Sleep(20 * time.Millisecond)
	l2 := open(t, dir, noFold)
	cs, err := l2.ListChains(ctx, "", 10)
	if err != nil || len(cs) != 1 {
		t.Fatalf("ListChains: %v, %v", cs, err)
	}
	if d := cs[0].Created.Sub(c.Created); d < -time.Millisecond || d > time.Millisecond {
		t.Fatalf("created %v after recovery, %v when acknowledged", cs[0].Created, c.Created)
	}
	// A later batch of the chain, read back from the journal, keeps it too.
	b2 := batch("a", 1, b.Chain.Head, 1)
	if err := l2.Commit(ctx, b2.Chain, 1, b2.Entries); err != nil {
		t.Fatal(err)
	}
	// createdKept fails the test when the chain's creation time is no longer c's.
	createdKept := func(after string) {
		t.Helper()
		now, err := l2.LoadChain(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if d := now.Created.Sub(c.Created); d < -time.Millisecond || d > time.Millisecond {
			t.Fatalf("created %v %s, %v before", now.Created, after, c.Created)
		}
	}
	createdKept("from the journal after a second batch")
	// A commit of the chain's state alone, which (like ingest's) names no creation time,
	// does not make a later batch lose it.
	state := *b2.Chain
	state.Created = time.Time{}
	if err := l2.Commit(ctx, &state, 2, nil); err != nil {
		t.Fatal(err)
	}
	b3 := batch("a", 2, b2.Chain.Head, 1)
	if err := l2.Commit(ctx, b3.Chain, 2, b3.Entries); err != nil {
		t.Fatal(err)
	}
	createdKept("after a state-only commit and a batch")
}

// TestAppendFailureStopsCommits: once an append fails (here the next segment cannot be
// created), Err says why and every commit is refused with it, without a write; after a
// restart with the fault gone, everything acknowledged before is there.
func TestAppendFailureStopsCommits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := open(t, dir, journal.Options{Gather: time.Hour, SegmentBytes: 1}) // a segment a frame
	b := batch("a", 0, ledger.Genesis, 1)
	if err := l.Commit(ctx, b.Chain, 0, b.Entries); err != nil {
		t.Fatal(err)
	}
	if err := l.Err(); err != nil {
		t.Fatalf("Err before any failure: %v", err)
	}
	segs := segments(t, dir)
	last, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(segs[len(segs)-1]), ".seg"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(dir, "journal", fmt.Sprintf("%016d.seg", last+1))
	if err := os.Mkdir(blocker, 0o755); err != nil { // where the next segment goes
		t.Fatal(err)
	}
	b2 := batch("a", 1, b.Chain.Head, 1)
	if err := l.Commit(ctx, b2.Chain, 1, b2.Entries); err == nil {
		t.Fatal("a commit whose segment cannot be created was acknowledged")
	}
	if l.Err() == nil {
		t.Fatal("Err is nil after a failed append")
	}
	if err := l.Commit(ctx, b2.Chain, 1, b2.Entries); err == nil || !strings.Contains(err.Error(), "until restart") {
		t.Fatalf("commit after the failure: %v, want the journal's failure", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	l2 := open(t, dir, noFold)
	if err := l2.Err(); err != nil {
		t.Fatalf("Err after a restart: %v", err)
	}
	checkChain(t, l2, "a", 1, b.Chain.Head)
	if err := l2.Commit(ctx, b2.Chain, 1, b2.Entries); err != nil {
		t.Fatal(err)
	}
}
