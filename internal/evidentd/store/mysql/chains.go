package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
)

// The chains' rows (ledger_chains) and the write transaction that moves a chain: a chain's
// row is locked (SELECT … FOR UPDATE, or the UPDATE that changes it) until the transaction
// that writes its entries or seal ends, so one writer at a time moves a chain.

// runTx runs fn in a write transaction and commits it, or rolls it back on error.
//
// The transaction is begun without ctx's cancellation, on a connection taken with it:
// database/sql would otherwise roll the transaction back from another goroutine the moment
// ctx ends, while fn may still be writing. A ctx that ends still stops fn's statements, and
// the transaction is rolled back here, once fn has returned.
func (s *Store) runTx(ctx context.Context, fn func(*sql.Tx) error) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := ctx.Err(); err != nil {
		tx.Rollback()
		return fmt.Errorf("before commit: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", conflict(err))
	}
	return nil
}

// LoadChain implements store.Store.
func (s *Store) LoadChain(ctx context.Context, id string) (*store.ChainRecord, error) {
	c := &store.ChainRecord{ID: id}
	var head []byte
	var created int64
	err := s.db.QueryRowContext(ctx, `SELECT profile, size, head, tree, state, closed, last_seal, sealed_size, created FROM ledger_chains WHERE id = ?`, id).
		Scan(&c.Profile, &c.Size, &head, &c.Tree, &c.State, &c.Closed, &c.LastSeal, &c.SealedSize, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("chain %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load chain %q: %w", id, conflict(err))
	}
	copy(c.Head[:], head)
	c.Created = fromMS(created)
	return c, nil
}

// updateChain is the UPDATE of a chain's row to a new state.
const updateChain = `UPDATE ledger_chains SET size=?, head=?, tree=?, state=?, closed=?, last_seal=?, sealed_size=? WHERE id=?`

// putChain writes c provided the stored chain has size prevSize (or is absent and
// prevSize is 0). The chain's row stays locked until the transaction ends.
//
// A new chain is inserted before anything is locked, so that creating it locks only its
// own new row: a locking read of a row that does not exist locks the gap where it would be
// (InnoDB), and the creations of other chains in that gap then deadlock. Only a row that
// exists is read with FOR UPDATE, which locks that one record.
func putChain(ctx context.Context, tx *sql.Tx, c *store.ChainRecord, prevSize uint64) error {
	if prevSize == 0 {
		created, err := insertChain(ctx, tx, c)
		if err != nil || created {
			return err
		}
	}
	args := []any{c.Size, c.Head[:], c.Tree, c.State, c.Closed, c.LastSeal, c.SealedSize, c.ID}
	if c.Size != prevSize {
		// The row changes (its size does), so the UPDATE that requires the expected size
		// counts one row exactly when the chain is where the caller left it.
		res, err := tx.ExecContext(ctx, updateChain+` AND size=?`, append(args, prevSize)...)
		if err != nil {
			return fmt.Errorf("update chain %q: %w", c.ID, conflict(err))
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("update chain %q: %w", c.ID, err)
		} else if n == 1 {
			return nil
		}
	}
	size, err := chainSize(ctx, tx, c.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("chain %q absent, expected at size %d: %w", c.ID, prevSize, store.ErrConflict)
	case err != nil:
		return err
	case size != prevSize:
		return fmt.Errorf("chain %q at size %d, expected %d: %w", c.ID, size, prevSize, store.ErrConflict)
	}
	if _, err := tx.ExecContext(ctx, updateChain, args...); err != nil {
		return fmt.Errorf("update chain %q: %w", c.ID, conflict(err))
	}
	return nil
}

// chainSize reads the stored size of chain id inside tx, locking its row (FOR UPDATE);
// store.ErrNotFound when there is no such chain.
func chainSize(ctx context.Context, tx *sql.Tx, id string) (uint64, error) {
	var size uint64
	err := tx.QueryRowContext(ctx, `SELECT size FROM ledger_chains WHERE id = ? FOR UPDATE`, id).Scan(&size)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("chain %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("load chain %q: %w", id, conflict(err))
	}
	return size, nil
}

// insertChain inserts c as a new chain inside tx and reports whether it did: when a chain
// with its id exists already, nothing is written and that row is left locked. ON DUPLICATE
// KEY UPDATE id=id changes nothing on a taken id, which counts no affected row on a
// connection that counts changed rows (Open), and locks the existing row for update.
func insertChain(ctx context.Context, tx *sql.Tx, c *store.ChainRecord) (bool, error) {
	at := c.Created
	if at.IsZero() {
		at = time.Now()
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO ledger_chains (id, profile, size, head, tree, state, closed, last_seal, sealed_size, created) VALUES (?,?,?,?,?,?,?,?,?,?) ON DUPLICATE KEY UPDATE id=id`,
		c.ID, c.Profile, c.Size, c.Head[:], c.Tree, c.State, c.Closed, c.LastSeal, c.SealedSize, ms(at))
	if err != nil {
		return false, fmt.Errorf("insert chain %q: %w", c.ID, conflict(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("insert chain %q: %w", c.ID, err)
	}
	return n == 1, nil
}

// Chains implements store.Store.
func (s *Store) Chains(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM ledger_chains ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("chains: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("chains: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// ListChains implements store.Store.
func (s *Store) ListChains(ctx context.Context, after string, limit int) ([]store.ChainRecord, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, profile, size, head, closed, last_seal, sealed_size, created FROM ledger_chains WHERE id > ? ORDER BY id LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list chains after %q: %w", after, err)
	}
	defer rows.Close()
	var out []store.ChainRecord
	for rows.Next() {
		var c store.ChainRecord
		var head []byte
		var created int64
		if err := rows.Scan(&c.ID, &c.Profile, &c.Size, &head, &c.Closed, &c.LastSeal, &c.SealedSize, &created); err != nil {
			return nil, fmt.Errorf("list chains: %w", err)
		}
		copy(c.Head[:], head)
		c.Created = fromMS(created)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list chains: %w", err)
	}
	return out, nil
}
