package ingest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
)

// Group commit: concurrent Ingest calls, on any chains, share one store transaction and
// one fsync. A call queues its batch and waits; the first call that finds nobody
// committing commits everything queued (up to a group's bounds) in one
// store.GroupCommitter transaction, and whatever queued meanwhile is committed by the next
// group as soon as that one ends. Nothing waits for a timer: an idle service commits a
// lone batch at once, and a busy one gathers as many batches per fsync as arrive during
// one commit. Every call returns only when its own batch is durable (or refused), as with
// a direct Store.Commit.

// Bounds of one group: it takes queued batches while it holds fewer than maxGroupBatches
// and at most maxGroupEntries entries (and always at least one batch). Grouping pays for
// small batches, whose fsync and statements it shares; a batch of hundreds of records
// already amortises them, and grouping several such batches only makes each caller wait for
// the others' writes (measured: 16 chains in batches of 500 ran a quarter slower with groups
// of up to 8,192 entries than with groups of up to 512; BENCHMARKS.md).
const (
	maxGroupBatches = 256
	maxGroupEntries = 512
)

// groupTimeout bounds one group's transaction. The group does not stop when one of its
// callers gives up (the others still wait for it), so it runs under its own deadline.
const groupTimeout = 30 * time.Second

// groupCommit queues batches for store.GroupCommitter.CommitGroup.
type groupCommit struct {
	st store.GroupCommitter

	mu      sync.Mutex
	queue   []*queued
	running bool // a group is being committed; whoever queues now waits for a later one

	groups, batches atomic.Uint64 // groups committed, and the batches they held
}

// queued is one caller's batch and where its outcome goes.
type queued struct {
	ctx   context.Context
	batch store.Batch
	done  chan error // buffered: the committer never blocks on a caller
}

// commit stores b durably in a group with whatever else is queued, and returns b's outcome.
func (g *groupCommit) commit(ctx context.Context, b store.Batch) error {
	q := &queued{ctx: ctx, batch: b, done: make(chan error, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, q)
	lead := !g.running
	g.running = true
	g.mu.Unlock()
	if lead {
		// This caller's batch is first in the queue: the group taken now holds it. Later
		// groups are committed by a goroutine of their own, so this call returns as soon as
		// its batch is durable however busy the service stays.
		g.run(g.take())
		if next := g.take(); next != nil {
			go g.drain(next)
		}
		return <-q.done
	}
	select {
	case err := <-q.done:
		return err
	case <-ctx.Done():
		// Given up while queued: the batch leaves the queue unwritten. Once a group holds
		// it, its outcome is waited for, so that the answer is what the store did.
		if g.withdraw(q) {
			return ctx.Err()
		}
		return <-q.done
	}
}

// withdraw removes q from the queue and reports whether it was still there.
func (g *groupCommit) withdraw(q *queued) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	i := slices.Index(g.queue, q)
	if i < 0 {
		return false
	}
	g.queue = slices.Delete(g.queue, i, i+1)
	return true
}

// drain commits group, then the groups queued after it until the queue is empty.
func (g *groupCommit) drain(group []*queued) {
	for ; group != nil; group = g.take() {
		g.run(group)
	}
}

// take removes the next group from the queue, or returns nil and marks that nobody is
// committing when the queue is empty.
func (g *groupCommit) take() []*queued {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, entries := 0, 0
	for n < len(g.queue) && n < maxGroupBatches && (n == 0 || entries+len(g.queue[n].batch.Entries) <= maxGroupEntries) {
		entries += len(g.queue[n].batch.Entries)
		n++
	}
	if n == 0 {
		g.running = false
		return nil
	}
	group := slices.Clone(g.queue[:n])
	g.queue = slices.Delete(g.queue, 0, n) // clears the tail: no finished batch stays reachable
	return group
}

// run commits one group and answers each of its callers. A caller that gave up before
// the group began is answered with its context's error and its batch is not written. A
// store that panics or answers for another number of batches fails the whole group, so that
// no caller waits for ever.
func (g *groupCommit) run(group []*queued) {
	live := group[:0:0]
	var batches []store.Batch
	for _, q := range group {
		if err := q.ctx.Err(); err != nil {
			q.done <- err
			continue
		}
		live = append(live, q)
		batches = append(batches, q.batch)
	}
	if len(live) == 0 {
		return
	}
	g.groups.Add(1)
	g.batches.Add(uint64(len(batches)))
	errs := g.commitGroup(live[0].ctx, batches)
	for i, q := range live {
		q.done <- errs[i]
	}
}

// commitGroup runs the store's group commit under the group's own deadline, and returns
// one outcome per batch whatever the store does.
func (g *groupCommit) commitGroup(ctx context.Context, batches []store.Batch) (errs []error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), groupTimeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			errs = failAll(len(batches), fmt.Errorf("group commit of %d batches: panic: %v", len(batches), r))
		}
	}()
	errs = g.st.CommitGroup(ctx, batches)
	if len(errs) != len(batches) {
		return failAll(len(batches), fmt.Errorf("group commit: the store answered for %d of %d batches", len(errs), len(batches)))
	}
	return errs
}

// failAll returns n copies of err.
func failAll(n int, err error) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// GroupCommits returns how many group commits the pipeline made and how many batches they
// held in all (both 0 when its store commits each batch on its own): batches ÷ groups is the
// number of callers that shared one transaction and one fsync, on average.
func (p *Pipeline) GroupCommits() (groups, batches uint64) {
	if p.group == nil {
		return 0, 0
	}
	return p.group.groups.Load(), p.group.batches.Load()
}
