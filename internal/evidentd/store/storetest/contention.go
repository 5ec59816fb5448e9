package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/ledger"
)

// newChainsAtOnce is how many writers testNewChainsAtOnce starts together: the burst of
// new chains one evidentd replica takes from 32 clients at the same moment.
const newChainsAtOnce = 32

// testNewChainsAtOnce: writers on one handle each commit the first batch of a different
// new chain at the same instant, then each the second batch of its own chain at the same
// instant again. Writers of different chains never conflict, so every Commit must succeed:
// a refusal here is one chain's creation locking out another's.
func testNewChainsAtOnce(t *testing.T, b Backend) {
	s := b.Open(t)
	heads := make([]ledger.Link, newChainsAtOnce)
	for i := range heads {
		heads[i] = ledger.Genesis
	}
	for round := range 2 {
		errs := atOnce(newChainsAtOnce, func(i int) error {
			chain := fmt.Sprintf("burst-%02d", i)
			es, c := buildTagged(chain, uint64(3*round), heads[i], 3, fmt.Sprintf("r%d", round))
			if err := s.Commit(context.Background(), c, uint64(3*round), es); err != nil {
				return fmt.Errorf("round %d, chain %s: %w", round, chain, err)
			}
			heads[i] = c.Head
			return nil
		})
		for _, err := range errs {
			t.Error(err)
		}
		if len(errs) > 0 {
			t.FailNow()
		}
	}
	for i, head := range heads {
		chain := fmt.Sprintf("burst-%02d", i)
		got, err := s.LoadChain(context.Background(), chain)
		if err != nil || got.Size != 6 || got.Head != head {
			t.Fatalf("chain %s after the bursts: %+v, %v; want size 6, head %s", chain, got, err, head)
		}
	}
}

// atOnce runs fn(0) … fn(n-1) on n goroutines, released together once all are ready, and
// returns the errors they returned.
func atOnce(n int, fn func(i int) error) []error {
	var (
		mu   sync.Mutex
		errs []error
	)
	testinfra.AtOnce(n, func(i int) {
		if err := fn(i); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	return errs
}

// testCreateChainRace: handles that all found a chain absent race to create it. Exactly one
// wins; every other is refused with store.ErrConflict, and nothing of theirs is stored.
func testCreateChainRace(t *testing.T, b Backend) {
	ctx := context.Background()
	const racers = 4
	handles := make([]store.Store, racers)
	for i := range handles {
		handles[i] = b.Open(t)
	}
	won := make([]bool, racers)
	errs := atOnce(racers, func(i int) error {
		es, c := buildTagged("contested", 0, ledger.Genesis, 2, fmt.Sprintf("h%d", i))
		err := handles[i].Commit(ctx, c, 0, es)
		if err == nil {
			won[i] = true
			return nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("handle %d: %w, want nil or store.ErrConflict", i, err)
		}
		return nil
	})
	for _, err := range errs {
		t.Fatal(err)
	}
	winner, wins := -1, 0
	for i, w := range won {
		if w {
			winner, wins = i, wins+1
		}
	}
	if wins != 1 {
		t.Fatalf("%d handles created the chain, want exactly 1", wins)
	}
	all, err := handles[0].Entries(ctx, "contested", store.Filter{})
	want := fmt.Sprintf("h%d-0", winner)
	if err != nil || len(all) != 2 || all[0].RecordID != want {
		t.Fatalf("entries of the contested chain: %d, first id %v, %v; want 2, the winner's (%s)", len(all), recordIDs(all), err, want)
	}
}

func recordIDs(es []store.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.RecordID
	}
	return out
}
