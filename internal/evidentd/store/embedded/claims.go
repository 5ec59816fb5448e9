package embedded

import (
	"context"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/evident-log/evident/internal/evidentd/store"
)

// Claims are kept on this process's clock: one process holds the database.

// ClaimEntry implements store.Claims.
func (s *Store) ClaimEntry(ctx context.Context, entry [32]byte, owner string, lease time.Duration, logSize uint64) (store.Claim, error) {
	s.claimMu.Lock()
	defer s.claimMu.Unlock()
	now := time.Now()
	cv, found, err := s.claim(entry)
	if err != nil {
		return store.Claim{}, fmt.Errorf("claim entry %x: %w", entry[:8], err)
	}
	switch {
	case !found:
		cv = claimV{Owner: owner, Until: ms(now.Add(lease)), From: logSize}
	case !cv.Appended && cv.Until < ms(now):
		cv.Owner, cv.Until = owner, ms(now.Add(lease))
	}
	if !found || cv.Owner == owner {
		if err := s.putClaim(entry, &cv); err != nil {
			return store.Claim{}, fmt.Errorf("claim entry %x: %w", entry[:8], err)
		}
	}
	c := claimOf(&cv)
	c.Earlier = found
	c.Held = c.Owner == owner && !c.Appended
	return c, nil
}

func claimOf(cv *claimV) store.Claim {
	return store.Claim{From: cv.From, Owner: cv.Owner, Until: fromMS(cv.Until), Appended: cv.Appended, Index: cv.Index}
}

// claim reads an entry's claim.
func (s *Store) claim(entry [32]byte) (claimV, bool, error) {
	var cv claimV
	v, found, err := s.get(claimKey(entry))
	if err != nil || !found {
		return cv, found, err
	}
	return cv, true, decode(v, &cv)
}

func (s *Store) putClaim(entry [32]byte, cv *claimV) error {
	return s.apply(func(b *pebble.Batch) error { return b.Set(claimKey(entry), encode(cv), nil) })
}

// RenewClaim implements store.Claims.
func (s *Store) RenewClaim(ctx context.Context, entry [32]byte, owner string, lease time.Duration) (bool, error) {
	s.claimMu.Lock()
	defer s.claimMu.Unlock()
	cv, found, err := s.claim(entry)
	if err != nil {
		return false, fmt.Errorf("renew claim of entry %x: %w", entry[:8], err)
	}
	if !found || cv.Owner != owner || cv.Appended {
		return false, nil
	}
	cv.Until = ms(time.Now().Add(lease))
	if err := s.putClaim(entry, &cv); err != nil {
		return false, fmt.Errorf("renew claim of entry %x: %w", entry[:8], err)
	}
	return true, nil
}

// EntryAppended implements store.Claims.
func (s *Store) EntryAppended(ctx context.Context, entry [32]byte, index uint64) (uint64, error) {
	s.claimMu.Lock()
	defer s.claimMu.Unlock()
	cv, found, err := s.claim(entry)
	if err != nil {
		return 0, fmt.Errorf("record log index of entry %x: %w", entry[:8], err)
	}
	if !found {
		return 0, fmt.Errorf("record log index of entry %x: not claimed: %w", entry[:8], store.ErrNotFound)
	}
	if cv.Appended {
		return cv.Index, nil
	}
	cv.Appended, cv.Index = true, index
	if err := s.putClaim(entry, &cv); err != nil {
		return 0, fmt.Errorf("record log index of entry %x: %w", entry[:8], err)
	}
	return index, nil
}

// ExpireClaims implements store.Claims.
func (s *Store) ExpireClaims(ctx context.Context) error {
	s.claimMu.Lock()
	defer s.claimMu.Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	err := s.scan(ctx, []byte{tagClaim}, []byte{tagClaim + 1}, func(k, v []byte) (bool, error) {
		var cv claimV
		if err := decode(v, &cv); err != nil {
			return false, err
		}
		if cv.Appended || cv.Until == 0 {
			return true, nil
		}
		cv.Until = 0
		return true, b.Set(append([]byte(nil), k...), encode(&cv), nil)
	})
	if err == nil && !b.Empty() {
		err = s.commit(b)
	}
	if err != nil {
		return fmt.Errorf("expire claims: %w", err)
	}
	return nil
}
