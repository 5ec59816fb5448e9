package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// testGroupCommit: a group commit writes every batch that is right and refuses, writing
// nothing of them, the batches that are wrong on their own — a stale chain size, a taken
// link, a reused record id, a chain created twice — whatever their place in the group;
// what one handle commits in a group the other handles read at once.
func testGroupCommit(t *testing.T, b Backend) {
	ctx := context.Background()
	s, reader := b.Open(t), b.Open(t)
	gc, ok := s.(store.GroupCommitter)
	if !ok {
		t.Skip("the store commits each batch on its own (no store.GroupCommitter)")
	}
	// Chains of 3 entries each.
	heads := map[string]*store.ChainRecord{}
	for _, id := range []string{"g0", "g1", "g2", "g3", "g4", "g5", "taken", "dup"} {
		es, c := build(id, 0, ledger.Genesis, 3)
		if err := s.Commit(ctx, c, 0, es); err != nil {
			t.Fatal(err)
		}
		heads[id] = c
	}
	next := func(id string, n int) store.Batch {
		es, c := build(id, heads[id].Size, heads[id].Head, n)
		return store.Batch{Chain: c, PrevSize: heads[id].Size, Entries: es}
	}

	t.Run("all right", func(t *testing.T) {
		newEs, newC := build("fresh", 0, ledger.Genesis, 2)
		batches := []store.Batch{next("g2", 2), next("g0", 1), {Chain: newC, PrevSize: 0, Entries: newEs}, next("g1", 5)}
		for i, err := range gc.CommitGroup(ctx, batches) {
			if err != nil {
				t.Fatalf("batch %d (%s): %v", i, batches[i].Chain.ID, err)
			}
		}
		for _, bt := range batches {
			checkChain(t, reader, bt.Chain.ID, bt.Chain.Size, bt.Chain.Head)
			heads[bt.Chain.ID] = bt.Chain
		}
	})

	t.Run("some refused", func(t *testing.T) {
		stale := next("g3", 2)
		stale.PrevSize = 1 // the chain is at 3
		takenLink := next("taken", 1)
		takenLink.Entries[0].Link = heads["g0"].Head     // another chain's link: fine
		takenLink.Entries[0].Link = func() ledger.Link { // its own chain's link at seq 1: taken
			es, err := reader.Entries(ctx, "taken", store.Filter{From: 1, Limit: 1})
			if err != nil || len(es) != 1 {
				t.Fatalf("entries of taken: %v %d", err, len(es))
			}
			return es[0].Link
		}()
		reusedID := next("dup", 2)
		reusedID.Entries[1].RecordID = "id-1"              // used at seq 1
		twice, twiceC := build("g4", 0, ledger.Genesis, 1) // g4 exists: not new
		good1, good2 := next("g5", 3), next("g0", 2)
		batches := []store.Batch{good1, stale, takenLink, {Chain: twiceC, PrevSize: 0, Entries: twice}, reusedID, good2}
		errs := gc.CommitGroup(ctx, batches)
		if len(errs) != len(batches) {
			t.Fatalf("%d outcomes for %d batches", len(errs), len(batches))
		}
		for i, want := range []bool{true, false, false, false, false, true} {
			id := batches[i].Chain.ID
			switch {
			case want && errs[i] != nil:
				t.Errorf("batch %d (%s) refused: %v", i, id, errs[i])
			case !want && !errors.Is(errs[i], store.ErrConflict):
				t.Errorf("batch %d (%s): %v, want store.ErrConflict", i, id, errs[i])
			}
		}
		for _, bt := range []store.Batch{good1, good2} {
			checkChain(t, reader, bt.Chain.ID, bt.Chain.Size, bt.Chain.Head)
		}
		for _, id := range []string{"g3", "taken", "g4", "dup"} {
			checkChain(t, reader, id, heads[id].Size, heads[id].Head)
		}
	})
}

// checkChain fails t unless chain id is stored at size with head, with size entries
// linked in order.
func checkChain(t *testing.T, s store.Store, id string, size uint64, head ledger.Link) {
	t.Helper()
	c, err := s.LoadChain(context.Background(), id)
	if err != nil {
		t.Fatalf("load %s: %v", id, err)
	}
	if c.Size != size || c.Head != head {
		t.Errorf("chain %s at size %d head %s, want %d %s", id, c.Size, c.Head, size, head)
	}
	es, err := s.Entries(context.Background(), id, store.Filter{})
	if err != nil {
		t.Fatalf("entries of %s: %v", id, err)
	}
	if uint64(len(es)) != size {
		t.Fatalf("chain %s holds %d entries, want %d", id, len(es), size)
	}
	for i, e := range es {
		if e.Seq != uint64(i) || (i > 0 && e.Prev != es[i-1].Link) {
			t.Errorf("chain %s entry %d: %s", id, i, fmt.Sprint(e.Seq, e.Prev))
		}
	}
	if len(es) > 0 && es[len(es)-1].Link != head {
		t.Errorf("chain %s: last link is not the head", id)
	}
}
