package embedded

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/evident-log/evident/internal/evidentd/store"
)

// AddSeal implements store.Store.
func (s *Store) AddSeal(ctx context.Context, c *store.ChainRecord, sl *store.Seal) error {
	defer s.lockChains(c.ID)()
	err := s.apply(func(b *pebble.Batch) error {
		stored, found, err := s.get(chainKey(c.ID))
		if err != nil {
			return err
		}
		next := *c
		switch {
		case found:
			cur, err := decodeChain(c.ID, stored)
			if err != nil {
				return err
			}
			if cur.Size != c.Size {
				return fmt.Errorf("chain %q at size %d, expected %d: %w", c.ID, cur.Size, c.Size, store.ErrConflict)
			}
			next.Created = cur.Created
		case c.Size != 0:
			return fmt.Errorf("chain %q absent, expected at size %d: %w", c.ID, c.Size, store.ErrConflict)
		case next.Created.IsZero():
			next.Created = time.Now()
		}
		if _, taken, err := s.get(sealKey(sl.Chain, sl.N)); err != nil {
			return err
		} else if taken {
			return fmt.Errorf("seal number %d is taken: %w", sl.N, store.ErrConflict)
		}
		if err := b.Set(chainKey(c.ID), encodeChain(&next), nil); err != nil {
			return err
		}
		if err := b.Set(sealKey(sl.Chain, sl.N), encodeSeal(sl), nil); err != nil {
			return err
		}
		if sl.Registered {
			return nil
		}
		return b.Set(pendingSealKey(sl.Chain, sl.N), nil, nil)
	})
	if err != nil {
		return fmt.Errorf("add seal %s/%d: %w", sl.Chain, sl.N, err)
	}
	return nil
}

// CompleteSeal implements store.Store.
func (s *Store) CompleteSeal(ctx context.Context, chain string, n, logIndex uint64, checkpoint, receipt []byte) (*store.Seal, error) {
	defer s.lockChains(chain)()
	v, found, err := s.get(sealKey(chain, n))
	if err != nil {
		return nil, fmt.Errorf("complete seal %s/%d: %w", chain, n, err)
	}
	if !found {
		return nil, fmt.Errorf("complete seal %s/%d: %w", chain, n, store.ErrNotFound)
	}
	sl, err := decodeSeal(chain, n, v)
	if err != nil || sl.Registered {
		return &sl, err
	}
	sl.Registered, sl.LogIndex, sl.Checkpoint, sl.Receipt = true, logIndex, checkpoint, receipt
	err = s.apply(func(b *pebble.Batch) error {
		if err := b.Set(sealKey(chain, n), encodeSeal(&sl), nil); err != nil {
			return err
		}
		return b.Delete(pendingSealKey(chain, n), nil)
	})
	if err != nil {
		return nil, fmt.Errorf("complete seal %s/%d: %w", chain, n, err)
	}
	return &sl, nil
}

// Seals implements store.Store.
func (s *Store) Seals(ctx context.Context, chain string) ([]store.Seal, error) {
	var out []store.Seal
	prefix := ck(tagSeal, chain, 0)
	err := s.scan(ctx, prefix, upperBound(prefix), func(k, v []byte) (bool, error) {
		sl, err := decodeSeal(chain, lastUint64(k), v)
		out = append(out, sl)
		return true, err
	})
	if err != nil {
		return nil, fmt.Errorf("seals of %q: %w", chain, err)
	}
	return out, nil
}

// PendingSeals implements store.Store.
func (s *Store) PendingSeals(ctx context.Context) ([]store.Seal, error) {
	type pending struct {
		chain string
		n     uint64
	}
	var ps []pending
	err := s.scan(ctx, []byte{tagPending}, []byte{tagPending + 1}, func(k, _ []byte) (bool, error) {
		chain, rest, err := splitChain(k)
		if err != nil || len(rest) != 8 {
			return false, fmt.Errorf("pending seal key %x: %w", k, errOr(err, ErrCorrupt))
		}
		ps = append(ps, pending{chain, lastUint64(rest)})
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("pending seals: %w", err)
	}
	var out []store.Seal
	for _, p := range ps {
		v, found, err := s.get(sealKey(p.chain, p.n))
		if err != nil {
			return nil, fmt.Errorf("pending seals: %w", err)
		}
		if !found { // completed since the scan
			continue
		}
		sl, err := decodeSeal(p.chain, p.n, v)
		if err != nil {
			return nil, fmt.Errorf("pending seals: %w", err)
		}
		if !sl.Registered {
			out = append(out, sl)
		}
	}
	return out, nil
}

// splitChain returns the chain id of a key made by ck, and the bytes after it.
func splitChain(k []byte) (chain string, rest []byte, err error) {
	n, w := binary.Uvarint(k[1:])
	if w <= 0 || uint64(len(k)-1-w) < n {
		return "", nil, ErrCorrupt
	}
	return string(k[1+w : 1+w+int(n)]), k[1+w+int(n):], nil
}

// RecordFork implements store.Store.
func (s *Store) RecordFork(ctx context.Context, f *store.Fork) error {
	defer s.lockChains(f.Chain)()
	next := uint64(0)
	if last, found, err := s.lastKey(ctx, ck(tagFork, f.Chain, 0)); err != nil {
		return fmt.Errorf("record fork: %w", err)
	} else if found {
		next = lastUint64(last) + 1
	}
	v := encode(&forkV{Seq: f.Seq, ExistingSeq: f.ExistingSeq, Record: f.Record, Arrival: ms(f.Arrival)})
	if err := s.apply(func(b *pebble.Batch) error { return b.Set(forkKey(f.Chain, next), v, nil) }); err != nil {
		return fmt.Errorf("record fork: %w", err)
	}
	return nil
}

// Forks implements store.Store.
func (s *Store) Forks(ctx context.Context, chain string) ([]store.Fork, error) {
	var out []store.Fork
	prefix := ck(tagFork, chain, 0)
	err := s.scan(ctx, prefix, upperBound(prefix), func(k, v []byte) (bool, error) {
		var fv forkV
		if err := decode(v, &fv); err != nil {
			return false, err
		}
		out = append(out, store.Fork{Chain: chain, Seq: fv.Seq, ExistingSeq: fv.ExistingSeq, Record: fv.Record, Arrival: fromMS(fv.Arrival)})
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("forks of %q: %w", chain, err)
	}
	return out, nil
}

// PutEvidenceHead implements store.Store.
func (s *Store) PutEvidenceHead(ctx context.Context, h *store.EvidenceHead) error {
	v := encode(&headV{Head: h.Head[:], AuditCount: h.AuditCount, ReportedAt: ms(h.ReportedAt)})
	if err := s.apply(func(b *pebble.Batch) error { return b.Set(headKey(h.Chain), v, nil) }); err != nil {
		return fmt.Errorf("evidence head of %q: %w", h.Chain, err)
	}
	return nil
}

// EvidenceHead implements store.Store.
func (s *Store) EvidenceHead(ctx context.Context, chain string) (*store.EvidenceHead, error) {
	v, found, err := s.get(headKey(chain))
	if err != nil {
		return nil, fmt.Errorf("evidence head of %q: %w", chain, err)
	}
	if !found {
		return nil, fmt.Errorf("evidence head of %q: %w", chain, store.ErrNotFound)
	}
	var hv headV
	if err := decode(v, &hv); err != nil {
		return nil, fmt.Errorf("evidence head of %q: %w", chain, err)
	}
	h, err := link(hv.Head)
	if err != nil {
		return nil, fmt.Errorf("evidence head of %q: %w", chain, err)
	}
	return &store.EvidenceHead{Chain: chain, Head: h, AuditCount: hv.AuditCount, ReportedAt: fromMS(hv.ReportedAt)}, nil
}
