package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
)

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		retry   int
		ceiling time.Duration
	}{
		{0, firstBackoff},
		{1, 2 * firstBackoff},
		{4, 16 * firstBackoff},
		{7, maxBackoff},
		{40, maxBackoff},
	} {
		t.Run(fmt.Sprint(tc.retry), func(t *testing.T) {
			var longest time.Duration
			for range 1000 {
				d := backoff(tc.retry)
				if d < 0 || d >= tc.ceiling {
					t.Fatalf("backoff(%d) = %v, want in [0, %v)", tc.retry, d, tc.ceiling)
				}
				longest = max(longest, d)
			}
			if longest < tc.ceiling/2 {
				t.Fatalf("longest of 1000 pauses %v, want them spread up to %v", longest, tc.ceiling)
			}
		})
	}
}

// conflicting is a real store whose Commit and AddSeal first refuse a set number of times
// with store.ErrConflict, as a database does when it rolls a transaction back to break a
// deadlock, and whose Commit runs before, when set, ahead of the real one: another
// replica's write.
type conflicting struct {
	store.Store
	refusals        atomic.Int64 // Commits and AddSeals still to refuse
	commits, seals  atomic.Int64 // calls
	before          func()
	beforeCommitted atomic.Bool
}

var errDeadlock = fmt.Errorf("Error 1213: Deadlock found when trying to get lock: %w", store.ErrConflict)

func (c *conflicting) Commit(ctx context.Context, rec *store.ChainRecord, prevSize uint64, es []store.Entry) error {
	c.commits.Add(1)
	if c.before != nil && c.beforeCommitted.CompareAndSwap(false, true) {
		c.before()
	}
	if c.refusals.Add(-1) >= 0 {
		return errDeadlock
	}
	return c.Store.Commit(ctx, rec, prevSize, es)
}

func (c *conflicting) AddSeal(ctx context.Context, rec *store.ChainRecord, sl *store.Seal) error {
	c.seals.Add(1)
	if c.refusals.Add(-1) >= 0 {
		return errDeadlock
	}
	return c.Store.AddSeal(ctx, rec, sl)
}

func conflictPipeline(t *testing.T, st store.Store, budget time.Duration, shared bool) *Pipeline {
	t.Helper()
	p, err := New(Options{Store: st, Profiles: []ledger.Profile{chap.Adapter{}}, Sealer: &fakeSealer{}, Shared: shared, ConflictBudget: budget,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestIngestRetriesConflicts: a commit refused with store.ErrConflict is retried, more
// than three times, until it is stored, or until the conflict budget is spent, when the
// conflict is the answer and nothing is stored.
func TestIngestRetriesConflicts(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		refusals  int64
		budget    time.Duration
		wantErr   error
		atLeast   int64 // Commit calls
		wantCalls int64 // exact Commit calls, when not 0
	}{
		{"no conflict", 0, 0, nil, 1, 1},
		{"one conflict", 1, 0, nil, 2, 2},
		{"eight conflicts", 8, 0, nil, 9, 9},
		{"conflicts beyond the budget", 1 << 40, 100 * time.Millisecond, store.ErrConflict, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &conflicting{Store: openStore(t, t.TempDir())}
			st.refusals.Store(tc.refusals)
			p := conflictPipeline(t, st, tc.budget, false)
			m := newMember("agent:retry")
			acc, err := p.Ingest(ctx, "wsp", "", [][]byte{m.join(t, "wsp"), m.msg(t, "wsp", nil)})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Ingest: %v, want %v", err, tc.wantErr)
			}
			calls := st.commits.Load()
			if calls < tc.atLeast || tc.wantCalls != 0 && calls != tc.wantCalls {
				t.Fatalf("%d Commit calls, want %d (at least %d)", calls, tc.wantCalls, tc.atLeast)
			}
			if n := p.ConflictRetries(); n != uint64(calls-1) {
				t.Fatalf("ConflictRetries() = %d after %d Commit calls, want %d", n, calls, calls-1)
			}
			if tc.wantErr != nil {
				if _, err := st.LoadChain(ctx, "wsp"); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("a refused ingest created the chain: %v", err)
				}
				return
			}
			if len(acc) != 2 || acc[1].Seq != 1 {
				t.Fatalf("accepted %+v", acc)
			}
			checkLinked(t, st, "wsp", 2)
		})
	}
}

// TestIngestRetriesAfterAnotherWriter: another replica commits to the chain between this
// pipeline's load and its commit. The store refuses the stale commit; the pipeline reloads
// the chain and admits its record after the other replica's.
func TestIngestRetriesAfterAnotherWriter(t *testing.T) {
	ctx := context.Background()
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			db := openStore(t, t.TempDir())
			st := &conflicting{Store: db}
			a := conflictPipeline(t, st, 0, shared)
			b := conflictPipeline(t, db, 0, true)
			alice, bob := newMember("agent:alice"), newMember("agent:bob")
			if _, err := a.Ingest(ctx, "wsp", "", [][]byte{alice.join(t, "wsp"), bob.join(t, "wsp")}); err != nil {
				t.Fatal(err)
			}
			var other []Accepted
			st.before = func() {
				var err error
				if other, err = b.Ingest(ctx, "wsp", "", [][]byte{bob.msg(t, "wsp", nil)}); err != nil {
					t.Error(err)
				}
			}
			mine, err := a.Ingest(ctx, "wsp", "", [][]byte{alice.msg(t, "wsp", nil)})
			if err != nil {
				t.Fatal(err)
			}
			if len(other) != 1 || other[0].Seq != 2 || len(mine) != 1 || mine[0].Seq != 3 || mine[0].Prev != other[0].Link {
				t.Fatalf("other replica's %+v, this one's %+v; want seq 2, then 3 after it", other, mine)
			}
			if n := st.commits.Load(); n != 3 {
				t.Fatalf("%d Commit calls, want 3 (first batch, the refused stale one, the retry)", n)
			}
			checkLinked(t, db, "wsp", 4)
		})
	}
}

// TestSealRetriesConflicts: a seal whose AddSeal is refused with store.ErrConflict is
// prepared again and stored once.
func TestSealRetriesConflicts(t *testing.T) {
	ctx := context.Background()
	st := &conflicting{Store: openStore(t, t.TempDir())}
	p := conflictPipeline(t, st, 0, false)
	m := newMember("agent:sealer")
	if _, err := p.Ingest(ctx, "wsp", "", [][]byte{m.join(t, "wsp"), m.msg(t, "wsp", nil)}); err != nil {
		t.Fatal(err)
	}
	st.refusals.Store(5)
	r, err := p.Seal(ctx, "wsp", false)
	if err != nil || r.N != 0 || r.Seal.Size != 2 {
		t.Fatalf("Seal: %+v, %v", r, err)
	}
	if n := st.seals.Load(); n != 6 {
		t.Fatalf("%d AddSeal calls, want 6", n)
	}
	seals, err := st.Seals(ctx, "wsp")
	if err != nil || len(seals) != 1 || !seals[0].Registered {
		t.Fatalf("seals %+v, %v; want one, registered", seals, err)
	}
}
