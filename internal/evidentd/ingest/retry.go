package ingest

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/wait"
)

// DefaultConflictBudget is how long a write refused with store.ErrConflict is retried when
// Options.ConflictBudget is zero.
const DefaultConflictBudget = 5 * time.Second

// The pause before the nth retry of a conflict is drawn uniformly from
// [0, min(maxBackoff, firstBackoff·2ⁿ)).
const (
	firstBackoff = 2 * time.Millisecond
	maxBackoff   = 250 * time.Millisecond
)

// backoff returns the pause before retry n (0 for the first): "full jitter", so writers
// that collided once spread out instead of colliding again in step.
func backoff(n int) time.Duration {
	ceiling := maxBackoff
	if n < 16 {
		ceiling = min(maxBackoff, firstBackoff<<n)
	}
	return rand.N(ceiling)
}

// retryConflicts calls try until it returns anything but store.ErrConflict, pausing with
// backoff between calls, for as long as ctx allows and at most the pipeline's conflict
// budget. When no time is left for another pause, it returns the conflict.
//
// A conflict is either a concurrent writer that moved the chain (another replica committed
// first) or a transaction the database rolled back to break a deadlock or a lock wait;
// either way try reloads the chain and admits the records again.
func (p *Pipeline) retryConflicts(ctx context.Context, chain string, try func() error) error {
	budget := p.o.ConflictBudget
	if budget <= 0 {
		budget = DefaultConflictBudget
	}
	giveUp := time.Now().Add(budget)
	if dl, ok := ctx.Deadline(); ok && dl.Before(giveUp) {
		giveUp = dl
	}
	for n := 0; ; n++ {
		err := try()
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
		pause := backoff(n)
		if time.Now().Add(pause).After(giveUp) {
			return err
		}
		p.conflictRetries.Add(1)
		p.o.Logger.Debug("retrying after a conflict", "chain", chain, "retry", n+1, "pause", pause, "err", err)
		if wait.Sleep(ctx, pause) != nil {
			return err
		}
	}
}

// ConflictRetries counts the writes retried after the store refused them with
// store.ErrConflict since the pipeline was made.
func (p *Pipeline) ConflictRetries() uint64 { return p.conflictRetries.Load() }
