package journal_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/journal"
	"github.com/evident-log/evident/internal/evidentd/store/sqlite"
	"github.com/evident-log/evident/ledger"
)

// counting is the SQLite store counting the record ids it is asked about.
type counting struct {
	*sqlite.Store
	asked atomic.Int64
}

func (c *counting) UsedRecordIDs(ctx context.Context, keys []store.ChainRecordID) (map[store.ChainRecordID]uint64, error) {
	c.asked.Add(int64(len(keys)))
	return c.Store.UsedRecordIDs(ctx, keys)
}

func (c *counting) FindRecordIDs(ctx context.Context, chain string, ids []string) (map[string]uint64, error) {
	c.asked.Add(int64(len(ids)))
	return c.Store.FindRecordIDs(ctx, chain, ids)
}

func openCounting(t *testing.T, dir string) (*journal.Ledger, *counting) {
	t.Helper()
	inner, err := sqlite.Open(context.Background(), filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	c := &counting{Store: inner}
	l, err := journal.Open(context.Background(), filepath.Join(dir, "journal"), c, noFold)
	if err != nil {
		inner.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, c
}

func waitIDsReady(t *testing.T, l *journal.Ledger) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !l.IDsReady(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the record ids were not read within 30 s")
		}
	}
}

// TestRecordIDFilter: once the store's record ids are read, a commit of unused ids asks
// the store about almost none of them, and every used id is still refused, whether the
// store held it when the Ledger opened, it was journaled while the ids were being read, or
// it was journaled since, folded or not; across a reopen too.
func TestRecordIDFilter(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	heads, sizes := map[string]ledger.Link{}, map[string]uint64{}
	chains := []string{"a", "b", "c", "d"}
	commit := func(l *journal.Ledger, id string, n int) store.Batch {
		t.Helper()
		if _, ok := heads[id]; !ok {
			heads[id] = ledger.Genesis
		}
		b := batch(id, sizes[id], heads[id], n)
		if err := l.Commit(ctx, b.Chain, b.PrevSize, b.Entries); err != nil {
			t.Fatalf("chain %s: %v", id, err)
		}
		heads[id], sizes[id] = b.Chain.Head, b.Chain.Size
		return b
	}
	// reuse offers the next entry of chain id with the record id of used, which must be
	// refused.
	reuse := func(l *journal.Ledger, id, used string) {
		t.Helper()
		b := batch(id, sizes[id], heads[id], 1)
		b.Entries[0].RecordID = used
		if err := l.Commit(ctx, b.Chain, b.PrevSize, b.Entries); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("chain %s: record id %q reused: %v, want ErrConflict", id, used, err)
		}
		got, err := l.FindRecordIDs(ctx, id, []string{used, "never-" + used})
		if err != nil || len(got) != 1 {
			t.Fatalf("chain %s: FindRecordIDs(%q) = %v, %v", id, used, got, err)
		}
	}

	l, _ := openCounting(t, dir)
	for _, id := range chains {
		commit(l, id, 300)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l, c := openCounting(t, dir) // 1,200 ids in the store
	during := commit(l, "a", 5)  // journaled while the ids may still be read
	waitIDsReady(t, l)
	reuse(l, "a", "a-7")                                           // held when the Ledger opened
	reuse(l, "a", during.Entries[2].RecordID)                      // journaled during the reading
	after := commit(l, "b", 3)                                     // journaled since
	reuse(l, "b", after.Entries[1].RecordID)                       // in the journal
	if _, err := l.Entries(ctx, "b", store.Filter{}); err != nil { // folded
		t.Fatal(err)
	}
	reuse(l, "b", after.Entries[0].RecordID)
	// The same id in another chain is unused there.
	if got, err := l.FindRecordIDs(ctx, "c", []string{"a-7"}); err != nil || len(got) != 0 {
		t.Fatalf("chain c: a-7 = %v, %v", got, err)
	}

	c.asked.Store(0)
	const fresh = 400
	for i := range fresh {
		commit(l, chains[i%len(chains)], 1)
	}
	if asked := c.asked.Load(); asked > fresh/20 {
		t.Fatalf("the store was asked about %d of %d unused record ids", asked, fresh)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopened: the same answers.
	l, _ = openCounting(t, dir)
	reuse(l, "c", "c-0") // perhaps before the ids are read
	waitIDsReady(t, l)
	for _, id := range chains {
		reuse(l, id, fmt.Sprintf("%s-%d", id, sizes[id]-1))
		reuse(l, id, fmt.Sprintf("%s-1", id))
	}
}

// TestRecordIDFilterAfterCrash: ids that were only in the journal when the process died
// are folded in at the next Open, before the store's ids are read, and are refused once the
// filter answers.
func TestRecordIDFilterAfterCrash(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, _ := openCounting(t, dir)
	var last store.Batch
	size, head := uint64(0), ledger.Genesis
	for range 3 {
		last = batch("a", size, head, 4)
		if err := l.Commit(ctx, last.Chain, last.PrevSize, last.Entries); err != nil {
			t.Fatal(err)
		}
		size, head = last.Chain.Size, last.Chain.Head
	}
	if l.Pending() == 0 {
		t.Fatal("nothing pending: the test would not test recovery")
	}
	l.Crash()

	l, c := openCounting(t, dir)
	waitIDsReady(t, l)
	if l.Pending() != 0 {
		t.Fatalf("%d entries pending after recovery", l.Pending())
	}
	for _, id := range []string{"a-0", "a-5", last.Entries[3].RecordID} {
		b := batch("a", size, head, 1)
		b.Entries[0].RecordID = id
		if err := l.Commit(ctx, b.Chain, b.PrevSize, b.Entries); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("record id %q reused after a crash: %v, want ErrConflict", id, err)
		}
	}
	c.asked.Store(0)
	for range 50 {
		b := batch("a", size, head, 1)
		if err := l.Commit(ctx, b.Chain, b.PrevSize, b.Entries); err != nil {
			t.Fatal(err)
		}
		size, head = b.Chain.Size, b.Chain.Head
	}
	if asked := c.asked.Load(); asked > 5 {
		t.Fatalf("the store was asked about %d of 50 unused record ids", asked)
	}
}
