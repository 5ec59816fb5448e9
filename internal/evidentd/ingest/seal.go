package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/evident-log/evident/internal/echo"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// SealIssuer turns seals into signed statements and registers them in the transparency log.
type SealIssuer interface {
	// IssueSeal signs the seal statement for s and returns it with its log entry hash.
	IssueSeal(s ledger.Seal) (statement []byte, entry [32]byte, err error)
	// Register appends a statement's entry to the log, waits for a checkpoint covering it and
	// returns the log index, that checkpoint and the statement's receipt.
	Register(ctx context.Context, statement []byte) (index uint64, checkpoint, receipt []byte, err error)
	// Transparent returns the statement with its receipt attached (a transparent statement).
	Transparent(statement, receipt []byte) ([]byte, error)
	// SealOf decodes the seal a statement carries.
	SealOf(statement []byte) (ledger.Seal, error)
}

// ErrSealingDisabled is returned by Seal when the pipeline has no SealIssuer.
var ErrSealingDisabled = errors.New("sealing is not configured")

// SealResult is a registered seal.
type SealResult struct {
	Seal        ledger.Seal
	N           uint64 // ordinal of the seal in the chain's lineage
	LogIndex    uint64
	Checkpoint  []byte
	Receipt     []byte
	Statement   []byte
	Transparent []byte // statement with receipt (COSE, 394 header)
	// Created says this call made the seal. False: the chain had not moved since its last
	// seal (a resend, or a seal made by the timer or another replica), and that seal is
	// answered again, or a seal a previous call left pending was finished.
	Created bool
}

// Seal commits the chain's current state into the log: it signs the seal statement, keeps it
// durably as pending, registers it and waits for its receipt. When the chain has not moved
// since its last seal (and close is not asked), the last seal is returned instead of a new one,
// with SealResult.Created false.
func (p *Pipeline) Seal(ctx context.Context, id string, close bool) (*SealResult, error) {
	if p.o.Sealer == nil {
		return nil, ErrSealingDisabled
	}
	var pending *store.Seal
	var created bool
	err := p.retryConflicts(ctx, id, func() error {
		var err error
		pending, created, err = p.prepareSeal(ctx, id, close)
		return err
	})
	if err != nil {
		return nil, err
	}
	var res *SealResult
	if pending.Registered {
		res, err = p.sealResult(pending)
	} else {
		res, err = p.register(ctx, pending)
	}
	if err != nil {
		return nil, err
	}
	res.Created = created
	return res, nil
}

// prepareSeal stores the chain's next seal, pending, and returns it with created true; when the
// chain has not moved since its last seal (and close asks nothing more), it returns that seal
// with created false.
func (p *Pipeline) prepareSeal(ctx context.Context, id string, close bool) (*store.Seal, bool, error) {
	s := p.slot(id)
	defer p.put(id, s)
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := p.load(ctx, s, id, "", false)
	if err != nil {
		return nil, false, err
	}
	seals, err := p.o.Store.Seals(ctx, id)
	if err != nil {
		return nil, false, err
	}
	if n := len(seals); n > 0 && seals[n-1].Size == c.Size && (!close || seals[n-1].Closed) {
		return &seals[n-1], false, nil
	}
	if c.Closed {
		if n := len(seals); n > 0 && seals[n-1].Closed {
			return nil, false, ledger.Refuse(ledger.CodeClosed, "chain %s is closed", echo.Quote(id))
		}
		// A record closed the chain (an OWP root Intent resolved): its seal is the closing one.
		close = true
	}
	now := p.o.Now().UTC()
	seal := ledger.Seal{Chain: c.ID, Profile: c.Profile, Size: c.Size, Head: c.Head, Root: ledger.RootString(c.Root()),
		Closed: close, PrevSeal: c.LastSeal, SealedAt: ledger.Timestamp(now)}
	stmt, entry, err := p.o.Sealer.IssueSeal(seal)
	if err != nil {
		return nil, false, fmt.Errorf("seal %q: %w", id, err)
	}
	next := c.Clone()
	next.LastSeal = ledger.Link(entry).String()
	next.SealedSize = c.Size
	next.Closed = close
	rec, err := record(next)
	if err != nil {
		return nil, false, err
	}
	sl := &store.Seal{Chain: id, N: uint64(len(seals)), Size: c.Size, Closed: close, Statement: stmt, EntryHash: entry, SealedAt: now}
	if err := p.o.Store.AddSeal(ctx, rec, sl); err != nil {
		s.chain = nil // reload next time: another writer may have moved it
		return nil, false, err
	}
	s.chain = next
	s.known.Store(true)
	return sl, true, nil
}

func (p *Pipeline) register(ctx context.Context, sl *store.Seal) (*SealResult, error) {
	idx, cp, rcpt, err := p.o.Sealer.Register(ctx, sl.Statement)
	if err != nil {
		return nil, fmt.Errorf("register seal %s/%d: %w", sl.Chain, sl.N, err)
	}
	stored, err := p.o.Store.CompleteSeal(ctx, sl.Chain, sl.N, idx, cp, rcpt)
	if err != nil {
		return nil, err
	}
	// The first completion stands: another caller (another replica) may have completed it.
	return p.sealResult(stored)
}

func (p *Pipeline) sealResult(sl *store.Seal) (*SealResult, error) {
	seal, err := p.o.Sealer.SealOf(sl.Statement)
	if err != nil {
		return nil, err
	}
	ts, err := p.o.Sealer.Transparent(sl.Statement, sl.Receipt)
	if err != nil {
		return nil, err
	}
	return &SealResult{Seal: seal, N: sl.N, LogIndex: sl.LogIndex, Checkpoint: sl.Checkpoint, Receipt: sl.Receipt, Statement: sl.Statement, Transparent: ts}, nil
}

// Recover finishes the seals left pending: by a crash, a kill, a client that went away,
// or another replica still registering them. Registration goes through the sealer, which
// claims each statement in the store first: a seal another live process is registering is
// waited for, one whose registrar died is looked for in the log before it is appended
// again, and every seal ends as one log entry at the index its first completion stored.
func (p *Pipeline) Recover(ctx context.Context) error {
	if p.o.Sealer == nil {
		return nil
	}
	pending, err := p.o.Store.PendingSeals(ctx)
	if err != nil {
		return err
	}
	for i := range pending {
		r, err := p.register(ctx, &pending[i])
		if err != nil {
			return err
		}
		p.o.Logger.Info("finished pending seal", "chain", pending[i].Chain, "n", pending[i].N, "log_index", r.LogIndex)
	}
	return nil
}

// pendingSealsInterval is how often RunSealer finishes seals left pending while it runs
// (by a client that went away, or a replica that died).
const pendingSealsInterval = 30 * time.Second

// RunSealer seals chains periodically until ctx ends: every interval for chains that grew
// since their last seal (0 disables the timer), and at once when a chain reaches SealEvery
// new entries. Every pendingSealsInterval it finishes seals left pending.
func (p *Pipeline) RunSealer(ctx context.Context, interval time.Duration) {
	if p.o.Sealer == nil {
		return
	}
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	pending := time.NewTicker(pendingSealsInterval)
	defer pending.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-p.sealKick:
			p.sealQuietly(ctx, id)
		case <-pending.C:
			rctx, cancel := context.WithTimeout(ctx, pendingSealsInterval)
			if err := p.Recover(rctx); err != nil && ctx.Err() == nil {
				p.o.Logger.Error("finishing pending seals", "err", err)
			}
			cancel()
		case <-tick:
			ids, err := p.o.Store.Chains(ctx)
			if err != nil {
				p.o.Logger.Error("periodic seal: listing chains", "err", err)
				continue
			}
			for _, id := range ids {
				h, err := p.Head(ctx, id)
				if err == nil && h.Size > h.SealedSize { // includes chains a record closed, not yet sealed
					p.sealQuietly(ctx, id)
				}
			}
		}
	}
}

func (p *Pipeline) sealQuietly(ctx context.Context, id string) {
	r, err := p.Seal(ctx, id, false)
	if err != nil {
		if ctx.Err() == nil {
			p.o.Logger.Error("periodic seal", "chain", id, "err", err)
		}
		return
	}
	p.o.Logger.Info("sealed", "chain", id, "size", r.Seal.Size, "log_index", r.LogIndex)
}
