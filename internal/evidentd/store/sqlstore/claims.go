package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
)

var _ store.Claims = (*Store)(nil)

// ClaimEntry implements store.Claims. The claim is taken in single statements that lock
// at most the entry's own row (an insert that skips an existing key, then an update of
// an expired lease), so concurrent claims of different entries never wait on each other.
// Leases are kept on the database's clock (Dialect.NowMS).
func (s *Store) ClaimEntry(ctx context.Context, entry [32]byte, owner string, lease time.Duration, logSize uint64) (store.Claim, error) {
	now, t := s.d.NowMS, s.d.Tables.Claims
	res, err := s.w.ExecContext(ctx, s.d.InsertIgnore+` INTO `+t+` (entry, owner, until, from_size) VALUES (?, ?, `+now+` + ?, ?)`,
		entry[:], owner, lease.Milliseconds(), logSize)
	if err != nil {
		return store.Claim{}, fmt.Errorf("claim entry %x: %w", entry[:8], err)
	}
	earlier := false
	if n, _ := res.RowsAffected(); n != 1 {
		// The entry was claimed before: take the claim over if its lease has expired.
		earlier = true
		if _, err := s.w.ExecContext(ctx, `UPDATE `+t+` SET owner = ?, until = `+now+` + ? WHERE entry = ? AND log_index IS NULL AND until < `+now,
			owner, lease.Milliseconds(), entry[:]); err != nil {
			return store.Claim{}, fmt.Errorf("claim entry %x: %w", entry[:8], err)
		}
	}
	c, err := s.claim(ctx, entry)
	if err != nil {
		return store.Claim{}, err
	}
	c.Earlier = earlier
	c.Held = c.Owner == owner && !c.Appended
	return c, nil
}

// claim reads an entry's claim.
func (s *Store) claim(ctx context.Context, entry [32]byte) (store.Claim, error) {
	var c store.Claim
	var until int64
	var idx sql.NullInt64
	err := s.w.QueryRowContext(ctx, `SELECT owner, until, from_size, log_index FROM `+s.d.Tables.Claims+` WHERE entry = ?`, entry[:]).
		Scan(&c.Owner, &until, &c.From, &idx)
	if err != nil {
		return c, fmt.Errorf("claim of entry %x: %w", entry[:8], err)
	}
	c.Until = fromMS(until)
	c.Appended, c.Index = idx.Valid, uint64(idx.Int64)
	return c, nil
}

// RenewClaim implements store.Claims.
func (s *Store) RenewClaim(ctx context.Context, entry [32]byte, owner string, lease time.Duration) (bool, error) {
	if _, err := s.w.ExecContext(ctx, `UPDATE `+s.d.Tables.Claims+` SET until = `+s.d.NowMS+` + ? WHERE entry = ? AND owner = ? AND log_index IS NULL`,
		lease.Milliseconds(), entry[:], owner); err != nil {
		return false, fmt.Errorf("renew claim of entry %x: %w", entry[:8], err)
	}
	// MySQL counts changed rows, not matched ones: read back who holds it.
	c, err := s.claim(ctx, entry)
	if err != nil {
		return false, err
	}
	return c.Owner == owner && !c.Appended, nil
}

// EntryAppended implements store.Claims.
func (s *Store) EntryAppended(ctx context.Context, entry [32]byte, index uint64) (uint64, error) {
	if _, err := s.w.ExecContext(ctx, `UPDATE `+s.d.Tables.Claims+` SET log_index = ? WHERE entry = ? AND log_index IS NULL`, index, entry[:]); err != nil {
		return 0, fmt.Errorf("record log index of entry %x: %w", entry[:8], err)
	}
	c, err := s.claim(ctx, entry)
	if err != nil {
		return 0, err
	}
	if !c.Appended {
		return 0, fmt.Errorf("record log index of entry %x: not recorded", entry[:8])
	}
	return c.Index, nil
}

// ExpireClaims implements store.Claims.
func (s *Store) ExpireClaims(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, `UPDATE `+s.d.Tables.Claims+` SET until = 0 WHERE log_index IS NULL`); err != nil {
		return fmt.Errorf("expire claims: %w", err)
	}
	return nil
}
