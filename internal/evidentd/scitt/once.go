package scitt

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/wait"
	"github.com/evident-log/evident/log"
)

// DefaultLease is how long a claim on a log entry lasts without renewal (Options.Lease).
// The holder renews it every third of that while it appends, so it expires only when the
// holder stopped: a crash, a kill, a lost database.
const DefaultLease = 10 * time.Second

// Options configure New.
type Options struct {
	// Claims, when set, makes every append exactly once across the processes sharing
	// them (the replicas of one database): an entry is claimed before it is appended, a
	// live claim of another process is waited for, an expired one is taken over after
	// looking for the entry in the log, and the first log index recorded is every
	// caller's answer. Without Claims, appends rely on the log's own deduplication.
	Claims store.Claims
	// Lease of a claim (default DefaultLease).
	Lease time.Duration
	// Logger receives take-overs and lost claims (default slog.Default()).
	Logger *slog.Logger
}

// claimer appends entries exactly once through the store's claims.
type claimer struct {
	claims store.Claims
	log    *log.Log
	lease  time.Duration
	logger *slog.Logger
	prefix string        // this process, for the owner names of its claims
	n      atomic.Uint64 // numbers the claims of this process
}

func newClaimer(l *log.Log, o Options) *claimer {
	if o.Claims == nil {
		return nil
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	host, _ := os.Hostname()
	if len(host) > 64 {
		host = host[:64]
	}
	var r [4]byte
	crand.Read(r[:])
	return &claimer{claims: o.Claims, log: l, lease: o.Lease, logger: o.Logger,
		prefix: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(r[:]))}
}

// appendOnce appends entry unless it is in the log already, and returns its index and a
// checkpoint covering it. Every caller, in every process sharing the claims, gets the
// same index.
func (c *claimer) appendOnce(ctx context.Context, entry [32]byte) (uint64, []byte, error) {
	owner := fmt.Sprintf("%s#%d", c.prefix, c.n.Add(1))
	// The log's size now bounds from below where the entry can land; only the first claim
	// of the entry keeps it, so it is read once, not on every poll below.
	size, err := publishedSize(ctx, c.log)
	if err != nil {
		return 0, nil, err
	}
	for {
		cl, err := c.claims.ClaimEntry(ctx, entry, owner, c.lease, size)
		if err != nil {
			return 0, nil, err
		}
		switch {
		case cl.Appended:
			cp, err := c.log.CheckpointCovering(ctx, cl.Index)
			return cl.Index, cp, err
		case cl.Held:
			return c.appendClaimed(ctx, entry, owner, cl)
		}
		// Another process is appending it: wait until it has, or until its lease expires.
		if err := sleepJittered(ctx, 100*time.Millisecond); err != nil {
			return 0, nil, fmt.Errorf("waiting for %s to append entry %x: %w", cl.Owner, entry[:8], err)
		}
	}
}

// appendClaimed appends an entry the caller holds the claim of: after looking for it in
// the log when an earlier owner may have appended it.
func (c *claimer) appendClaimed(ctx context.Context, entry [32]byte, owner string, cl store.Claim) (idx uint64, cp []byte, err error) {
	stop := c.keep(entry, owner)
	defer func() {
		stop()
		if err != nil {
			c.release(entry, owner) // the next caller need not wait for the lease to expire
		}
	}()
	found := false
	if cl.Earlier {
		if idx, found, err = c.log.Find(ctx, entry[:], cl.From); err != nil {
			return 0, nil, fmt.Errorf("looking for entry %x from %d: %w", entry[:8], cl.From, err)
		}
	}
	if found {
		c.logger.Info("log entry appended by an earlier claim holder found", "entry", hex.EncodeToString(entry[:8]), "log_index", idx)
		cp, err = c.log.CheckpointCovering(ctx, idx)
	} else {
		idx, cp, err = c.log.Append(ctx, entry[:])
	}
	if err != nil {
		return 0, nil, err
	}
	// The entry is in the log: record where, even if the caller has gone away.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	stored, err := c.claims.EntryAppended(rctx, entry, idx)
	if err != nil {
		return 0, nil, err
	}
	if stored != idx {
		// Only possible if this process lost its claim while appending (its lease expired
		// unrenewed): the index recorded first is everyone's answer.
		c.logger.Warn("log entry appended twice; answering with the index recorded first",
			"entry", hex.EncodeToString(entry[:8]), "recorded", stored, "appended", idx)
		idx = stored
		if cp, err = c.log.CheckpointCovering(ctx, idx); err != nil {
			return 0, nil, err
		}
	}
	return idx, cp, nil
}

// keep renews the claim every third of the lease until the returned stop is called.
func (c *claimer) keep(entry [32]byte, owner string) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(c.lease / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), c.lease/3)
			held, err := c.claims.RenewClaim(ctx, entry, owner, c.lease)
			cancel()
			if err != nil || !held {
				c.logger.Warn("could not renew the claim on a log entry", "entry", hex.EncodeToString(entry[:8]), "held", held, "err", err)
			}
		}
	}()
	return func() { close(done); <-exited }
}

// release ends the caller's lease at once.
func (c *claimer) release(entry [32]byte, owner string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.claims.RenewClaim(ctx, entry, owner, -time.Millisecond); err != nil {
		c.logger.Warn("could not release the claim on a log entry", "entry", hex.EncodeToString(entry[:8]), "err", err)
	}
}

// publishedSize is the size of the log's latest checkpoint, 0 before the first.
func publishedSize(ctx context.Context, l *log.Log) (uint64, error) {
	n, err := l.Size(ctx)
	if errors.Is(err, log.ErrNoCheckpoint) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("log size: %w", err)
	}
	return n, nil
}

// sleepJittered waits between d/2 and 3d/2, or until ctx ends.
func sleepJittered(ctx context.Context, d time.Duration) error {
	return wait.Sleep(ctx, d/2+rand.N(d))
}
