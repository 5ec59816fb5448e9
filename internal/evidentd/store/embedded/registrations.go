package embedded

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/evident-log/evident/internal/evidentd/store"
)

// loadRegistrationSeq sets the next registration's seq after the last one stored.
func (s *Store) loadRegistrationSeq() error {
	last, found, err := s.lastKey(context.Background(), []byte{tagRegOrder})
	if err != nil {
		return fmt.Errorf("open ledger store: %w", err)
	}
	if found {
		s.regNext = lastUint64(last) + 1
	}
	return nil
}

// AddRegistration implements store.Registrations.
func (s *Store) AddRegistration(ctx context.Context, r *store.Registration) (*store.Registration, bool, error) {
	if r.Kind != store.KindStatement && r.Kind != store.KindPolicy {
		return nil, false, fmt.Errorf("registration kind %q", r.Kind)
	}
	s.regMu.Lock()
	defer s.regMu.Unlock()
	if v, found, err := s.get(regKey(r.ID)); err != nil {
		return nil, false, fmt.Errorf("add registration: %w", err)
	} else if found {
		existing, _, err := decodeReg(r.ID, v)
		return existing, false, err
	}
	seq := s.regNext
	err := s.apply(func(b *pebble.Batch) error {
		if err := b.Set(regKey(r.ID), encodeReg(r, seq), nil); err != nil {
			return err
		}
		if err := b.Set(seqKey(tagRegOrder, seq), []byte(r.ID), nil); err != nil {
			return err
		}
		if r.Registered {
			return nil
		}
		return b.Set(seqKey(tagRegQueued, seq), []byte(r.ID), nil)
	})
	if err != nil {
		return nil, false, fmt.Errorf("add registration: %w", err)
	}
	s.regNext++
	return r, true, nil
}

// CompleteRegistration implements store.Registrations.
func (s *Store) CompleteRegistration(ctx context.Context, id string, logIndex uint64, checkpoint, receipt []byte) (*store.Registration, error) {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	v, found, err := s.get(regKey(id))
	if err != nil {
		return nil, fmt.Errorf("complete registration %.80s: %w", id, err)
	}
	if !found {
		return nil, fmt.Errorf("complete registration %.80s: %w", id, store.ErrNotFound)
	}
	r, seq, err := decodeReg(id, v)
	if err != nil || r.Registered {
		return r, err
	}
	r.Registered, r.LogIndex, r.Checkpoint, r.Receipt = true, logIndex, checkpoint, receipt
	err = s.apply(func(b *pebble.Batch) error {
		if err := b.Set(regKey(id), encodeReg(r, seq), nil); err != nil {
			return err
		}
		return b.Delete(seqKey(tagRegQueued, seq), nil)
	})
	if err != nil {
		return nil, fmt.Errorf("complete registration %.80s: %w", id, err)
	}
	return r, nil
}

// Registration implements store.Registrations.
func (s *Store) Registration(ctx context.Context, id string) (*store.Registration, error) {
	v, found, err := s.get(regKey(id))
	if err != nil {
		return nil, fmt.Errorf("registration: %w", err)
	}
	if !found {
		return nil, fmt.Errorf("registration %.80s: %w", id, store.ErrNotFound)
	}
	r, _, err := decodeReg(id, v)
	return r, err
}

// registrations returns the registrations an order index (tagRegOrder or tagRegQueued)
// names, in order, that keep accepts.
func (s *Store) registrations(ctx context.Context, tag byte, keep func(*store.Registration) bool) ([]store.Registration, error) {
	var ids []string
	err := s.scan(ctx, []byte{tag}, []byte{tag + 1}, func(_, v []byte) (bool, error) {
		ids = append(ids, string(v))
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("registrations: %w", err)
	}
	var out []store.Registration
	for _, id := range ids {
		r, err := s.Registration(ctx, id)
		if err != nil {
			return nil, err
		}
		if keep(r) {
			out = append(out, *r)
		}
	}
	return out, nil
}

// PendingRegistrations implements store.Registrations.
func (s *Store) PendingRegistrations(ctx context.Context) ([]store.Registration, error) {
	return s.registrations(ctx, tagRegQueued, func(r *store.Registration) bool { return !r.Registered })
}

// Policies implements store.Registrations.
func (s *Store) Policies(ctx context.Context) ([]store.Registration, error) {
	return s.registrations(ctx, tagRegOrder, func(r *store.Registration) bool { return r.Kind == store.KindPolicy })
}

// Registered implements store.RegistrationLister, in log order.
func (s *Store) Registered(ctx context.Context, kind, issuer string) ([]store.Registration, error) {
	regs, err := s.registrations(ctx, tagRegOrder, func(r *store.Registration) bool {
		return r.Registered && r.Kind == kind && (issuer == "" || r.Issuer == issuer)
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(regs, func(a, b store.Registration) int { return cmp.Compare(a.LogIndex, b.LogIndex) })
	return regs, nil
}
