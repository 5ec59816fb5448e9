package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/evident-log/evident/internal/evidentd/store"
)

// The chains' seals (ledger_seals) and the evidence of refused forks (ledger_forks).

// AddSeal implements store.Store. Seal numbers are a unique key, so of two handles that
// prepared the same seal number only one stores it; the other gets store.ErrConflict.
func (s *Store) AddSeal(ctx context.Context, c *store.ChainRecord, sl *store.Seal) error {
	err := s.runTx(ctx, func(tx *sql.Tx) error {
		if err := putChain(ctx, tx, c, c.Size); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO ledger_seals (chain, n, size, closed, statement, entry_hash, sealed_at) VALUES (?,?,?,?,?,?,?)`,
			sl.Chain, sl.N, sl.Size, sl.Closed, sl.Statement, sl.EntryHash[:], ms(sl.SealedAt))
		return conflict(err)
	})
	if err != nil {
		return fmt.Errorf("add seal %s/%d: %w", sl.Chain, sl.N, err)
	}
	return nil
}

// CompleteSeal implements store.Store: the first completion of a seal is kept, and every
// caller gets the seal as stored.
func (s *Store) CompleteSeal(ctx context.Context, chain string, n, logIndex uint64, checkpoint, receipt []byte) (*store.Seal, error) {
	where, args := `chain=? AND n=?`, []any{chain, n}
	if err := s.completeOnce(ctx, `ledger_seals`, where, args, logIndex, checkpoint, receipt); err != nil {
		return nil, fmt.Errorf("complete seal %s/%d: %w", chain, n, err)
	}
	seals, err := s.seals(ctx, where, args...)
	if err != nil {
		return nil, fmt.Errorf("complete seal %s/%d: %w", chain, n, err)
	}
	if len(seals) != 1 {
		return nil, fmt.Errorf("complete seal %s/%d: %w", chain, n, store.ErrNotFound)
	}
	return &seals[0], nil
}

// completeOnce records a log position in the row of table (ledger_seals or
// ledger_registrations) matching where, unless the row holds one already (registered=1):
// the first position recorded is kept. It returns store.ErrNotFound when there is no such
// row.
func (s *Store) completeOnce(ctx context.Context, table, where string, whereArgs []any, logIndex uint64, checkpoint, receipt []byte) error {
	res, err := s.db.ExecContext(ctx, `UPDATE `+table+` SET registered=1, log_index=?, checkpoint=?, receipt=? WHERE `+where+` AND registered=0`,
		append([]any{logIndex, checkpoint, receipt}, whereArgs...)...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	var one int
	err = s.db.QueryRowContext(ctx, `SELECT 1 FROM `+table+` WHERE `+where, whereArgs...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}

// seals returns the seals matching where, in the order of their chains and numbers.
func (s *Store) seals(ctx context.Context, where string, args ...any) ([]store.Seal, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT chain, n, size, closed, statement, entry_hash, sealed_at, registered, log_index, checkpoint, receipt FROM ledger_seals WHERE `+where+` ORDER BY chain, n`, args...)
	if err != nil {
		return nil, fmt.Errorf("seals: %w", err)
	}
	defer rows.Close()
	var out []store.Seal
	for rows.Next() {
		var sl store.Seal
		var eh []byte
		var at int64
		var idx sql.NullInt64
		if err := rows.Scan(&sl.Chain, &sl.N, &sl.Size, &sl.Closed, &sl.Statement, &eh, &at, &sl.Registered, &idx, &sl.Checkpoint, &sl.Receipt); err != nil {
			return nil, fmt.Errorf("seals: %w", err)
		}
		copy(sl.EntryHash[:], eh)
		sl.SealedAt = fromMS(at)
		sl.LogIndex = uint64(idx.Int64)
		out = append(out, sl)
	}
	return out, rows.Err()
}

// Seals implements store.Store.
func (s *Store) Seals(ctx context.Context, chain string) ([]store.Seal, error) {
	return s.seals(ctx, `chain=?`, chain)
}

// PendingSeals implements store.Store.
func (s *Store) PendingSeals(ctx context.Context) ([]store.Seal, error) {
	return s.seals(ctx, `registered=0`)
}

// RecordFork implements store.Store.
func (s *Store) RecordFork(ctx context.Context, f *store.Fork) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO ledger_forks (chain, seq, existing_seq, record, arrival) VALUES (?,?,?,?,?)`, f.Chain, f.Seq, f.ExistingSeq, f.Record, ms(f.Arrival))
	if err != nil {
		return fmt.Errorf("record fork: %w", err)
	}
	return nil
}

// Forks implements store.Store: the chain's forks in the order they were recorded (their
// AUTO_INCREMENT ids).
func (s *Store) Forks(ctx context.Context, chain string) ([]store.Fork, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, existing_seq, record, arrival FROM ledger_forks WHERE chain=? ORDER BY id`, chain)
	if err != nil {
		return nil, fmt.Errorf("forks: %w", err)
	}
	defer rows.Close()
	var out []store.Fork
	for rows.Next() {
		f := store.Fork{Chain: chain}
		var at int64
		if err := rows.Scan(&f.Seq, &f.ExistingSeq, &f.Record, &at); err != nil {
			return nil, fmt.Errorf("forks: %w", err)
		}
		f.Arrival = fromMS(at)
		out = append(out, f)
	}
	return out, rows.Err()
}
