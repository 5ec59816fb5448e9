package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
)

// Claims on the log entries the replicas append (store.Claims, ledger_log_claims): the
// owner and lease of each, the log size when first claimed, and the log index once
// appended. Leases are kept on the database's clock (nowMS), which every replica shares.

// nowMS is the SQL expression of the database's clock in Unix milliseconds.
const nowMS = `CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)`

// ClaimEntry implements store.Claims. The claim is taken in single statements that lock
// at most the entry's own row (an insert that skips an existing key, then an update of
// an expired lease), so concurrent claims of different entries never wait on each other.
func (s *Store) ClaimEntry(ctx context.Context, entry [32]byte, owner string, lease time.Duration, logSize uint64) (store.Claim, error) {
	res, err := s.db.ExecContext(ctx, `INSERT IGNORE INTO ledger_log_claims (entry, owner, until, from_size) VALUES (?, ?, `+nowMS+` + ?, ?)`,
		entry[:], owner, lease.Milliseconds(), logSize)
	if err != nil {
		return store.Claim{}, fmt.Errorf("claim entry %x: %w", entry[:8], err)
	}
	earlier := false
	if n, _ := res.RowsAffected(); n != 1 {
		// The entry was claimed before: take the claim over if its lease has expired.
		earlier = true
		if _, err := s.db.ExecContext(ctx, `UPDATE ledger_log_claims SET owner = ?, until = `+nowMS+` + ? WHERE entry = ? AND log_index IS NULL AND until < `+nowMS,
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
	err := s.db.QueryRowContext(ctx, `SELECT owner, until, from_size, log_index FROM ledger_log_claims WHERE entry = ?`, entry[:]).
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
	if _, err := s.db.ExecContext(ctx, `UPDATE ledger_log_claims SET until = `+nowMS+` + ? WHERE entry = ? AND owner = ? AND log_index IS NULL`,
		lease.Milliseconds(), entry[:], owner); err != nil {
		return false, fmt.Errorf("renew claim of entry %x: %w", entry[:8], err)
	}
	// The connection counts changed rows, not matched ones: read back who holds it.
	c, err := s.claim(ctx, entry)
	if err != nil {
		return false, err
	}
	return c.Owner == owner && !c.Appended, nil
}

// EntryAppended implements store.Claims.
func (s *Store) EntryAppended(ctx context.Context, entry [32]byte, index uint64) (uint64, error) {
	if _, err := s.db.ExecContext(ctx, `UPDATE ledger_log_claims SET log_index = ? WHERE entry = ? AND log_index IS NULL`, index, entry[:]); err != nil {
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
	if _, err := s.db.ExecContext(ctx, `UPDATE ledger_log_claims SET until = 0 WHERE log_index IS NULL`); err != nil {
		return fmt.Errorf("expire claims: %w", err)
	}
	return nil
}
