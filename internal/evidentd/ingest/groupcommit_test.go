package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/embedded"
	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/ledger"
)

// TestGroupCommitManyChains: writers on many chains at once share group commits, and a
// batch the store refuses on its own (a record id the chain already used, which only the
// store's unique key catches) is refused alone: every other batch of its group is stored,
// every chain holds exactly what was acknowledged, linked in order.
func TestGroupCommitManyChains(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	p := newPipeline(t, st, nil)
	const chains, rounds = 24, 12
	acked := make([]int, chains)
	errs := make(chan error, chains)
	testinfra.AtOnce(chains, func(c int) {
		ws := fmt.Sprintf("wsp_g%d", c)
		m := newMember(fmt.Sprintf("agent:g%d", c))
		withID := func(id string) []byte {
			e := m.env(ws, "task.update", map[string]any{"x": id}, nil)
			e["id"] = id
			return m.sign(t, e)
		}
		if _, err := p.Ingest(ctx, ws, "", [][]byte{m.join(t, ws), withID("first")}); err != nil {
			errs <- err
			return
		}
		acked[c] = 2
		for r := range rounds {
			if r%4 == 3 { // reuses the id of the chain's second record
				_, err := p.Ingest(ctx, ws, "", [][]byte{withID("first")})
				var re *ledger.RecordError
				if !errors.As(err, &re) || re.Code != ledger.CodeIDReused {
					errs <- fmt.Errorf("chain %s round %d: %v, want %s", ws, r, err, ledger.CodeIDReused)
					return
				}
				continue
			}
			if _, err := p.Ingest(ctx, ws, "", [][]byte{withID(fmt.Sprint("r", r))}); err != nil {
				errs <- fmt.Errorf("chain %s round %d: %w", ws, r, err)
				return
			}
			acked[c]++
		}
	})
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for c := range chains {
		checkLinked(t, st, fmt.Sprintf("wsp_g%d", c), acked[c])
	}
	groups, batches := p.GroupCommits()
	if groups == 0 || batches <= groups {
		t.Errorf("%d groups held %d batches: no commit was shared", groups, batches)
	}
	t.Logf("%d group commits held %d batches", groups, batches)
}

// heldStore is the real embedded store, whose first group commit waits until release is
// closed: what lets a test queue batches behind a group in progress.
type heldStore struct {
	*embedded.Store
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (h *heldStore) CommitGroup(ctx context.Context, bs []store.Batch) []error {
	h.once.Do(func() {
		close(h.entered)
		<-h.release
	})
	return h.Store.CommitGroup(ctx, bs)
}

// TestGroupCommitCanceledWhileQueued: a caller that gives up while its batch waits behind
// a group in progress is answered with its context's error and nothing of its batch is
// written; the batch queued beside it is committed.
func TestGroupCommitCanceledWhileQueued(t *testing.T) {
	ctx := context.Background()
	hs := &heldStore{Store: openStore(t, t.TempDir()), entered: make(chan struct{}), release: make(chan struct{})}
	p := newPipeline(t, hs, nil)
	a, b, c := newMember("agent:a"), newMember("agent:b"), newMember("agent:c")
	first := make(chan error, 1)
	go func() {
		_, err := p.Ingest(ctx, "wsp_a", "", [][]byte{a.join(t, "wsp_a")})
		first <- err
	}()
	<-hs.entered // the first group is in progress and holds the commit
	gaveUp, cancel := context.WithCancel(ctx)
	canceled, kept := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := p.Ingest(gaveUp, "wsp_b", "", [][]byte{b.join(t, "wsp_b")})
		canceled <- err
	}()
	go func() {
		_, err := p.Ingest(ctx, "wsp_c", "", [][]byte{c.join(t, "wsp_c")})
		kept <- err
	}()
	waitQueued(t, p, 2)
	cancel()
	close(hs.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-canceled; !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller that gave up: %v, want context.Canceled", err)
	}
	if err := <-kept; err != nil {
		t.Fatal(err)
	}
	if _, err := hs.LoadChain(ctx, "wsp_b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the abandoned batch was written: %v", err)
	}
	checkLinked(t, hs, "wsp_a", 1)
	checkLinked(t, hs, "wsp_c", 1)
}

// waitQueued waits until n batches wait in p's group commit queue.
func waitQueued(t *testing.T, p *Pipeline, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		p.group.mu.Lock()
		q := len(p.group.queue)
		p.group.mu.Unlock()
		if q >= n {
			return
		}
	}
	t.Fatalf("fewer than %d batches queued", n)
}

// panickyStore is the real embedded store whose first group commit panics.
type panickyStore struct {
	*embedded.Store
	once sync.Once
}

func (s *panickyStore) CommitGroup(ctx context.Context, bs []store.Batch) []error {
	s.once.Do(func() { panic("driver bug") })
	return s.Store.CommitGroup(ctx, bs)
}

// TestGroupCommitStorePanics: a store that panics fails its group with an error instead of
// leaving its callers waiting for ever, writes nothing of it, and the next commit works.
func TestGroupCommitStorePanics(t *testing.T) {
	ctx := context.Background()
	ps := &panickyStore{Store: openStore(t, t.TempDir())}
	p := newPipeline(t, ps, nil)
	a := newMember("agent:a")
	done := make(chan error, 1)
	go func() {
		_, err := p.Ingest(ctx, "wsp_a", "", [][]byte{a.join(t, "wsp_a")})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a group whose store panicked was acknowledged")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the caller of a panicking group commit still waits")
	}
	if _, err := ps.LoadChain(ctx, "wsp_a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the failed group was written: %v", err)
	}
	if _, err := p.Ingest(ctx, "wsp_a", "", [][]byte{a.join(t, "wsp_a")}); err != nil {
		t.Fatalf("after the panic: %v", err)
	}
	checkLinked(t, ps, "wsp_a", 1)
}
