package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"
)

// Statements the embedded store runs on every commit are prepared once and kept
// (Dialect.KeepStatements): preparing — parsing and planning — an INSERT cost SQLite more
// than running it. A multi-row INSERT is sent in chunks of a power of two rows, so that a
// table needs at most one kept statement per power of two up to maxChunkRows, whatever the
// batch sizes.

// maxChunkRows is the largest chunk of a multi-row INSERT whose statement is kept.
const maxChunkRows = 256

// maxKeptStatements bounds the statements kept; past it, statements are prepared per use.
const maxKeptStatements = 128

// stmts is a store's kept statements on one of its databases. On the writer database a
// statement is prepared between transactions, never inside one: the embedded store's
// writer has one connection, which the transaction holds. Its first use runs unprepared and
// asks for it (get); the writer prepares what was asked for once the transaction ends
// (prepareWanted). On the reader database a statement is prepared at its first use
// (prepared).
type stmts struct {
	mu     sync.Mutex
	kept   map[string]*sql.Stmt
	wanted []string
}

// get returns the kept statement of q, or nil after noting that q is wanted.
func (c *stmts) get(q string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.kept[q]; ok {
		return st
	}
	if len(c.kept)+len(c.wanted) < maxKeptStatements && !slices.Contains(c.wanted, q) {
		c.wanted = append(c.wanted, q)
	}
	return nil
}

// prepared returns the kept statement of q on db, preparing it at first use: for a database
// whose connections no transaction of this store holds (the reader database; database/sql
// prepares a statement of a *sql.DB again on each connection it runs on).
func (c *stmts) prepared(ctx context.Context, db *sql.DB, q string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.kept[q]; ok {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if c.kept == nil {
		c.kept = map[string]*sql.Stmt{}
	}
	c.kept[q] = st
	return st, nil
}

// prepareWanted prepares on db the statements asked for since the last call, outside any
// transaction of db. A statement that fails to prepare is asked for again at its next use,
// and runs unprepared meanwhile: a failure costs speed, never a write.
func (c *stmts) prepareWanted(ctx context.Context, db *sql.DB) {
	c.mu.Lock()
	wanted := c.wanted
	c.wanted = nil
	c.mu.Unlock()
	// Not under c.mu: preparing waits for the writer connection, which a transaction that
	// is calling get may hold.
	for _, q := range wanted {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			continue
		}
		c.mu.Lock()
		if _, dup := c.kept[q]; dup {
			st.Close()
		} else {
			if c.kept == nil {
				c.kept = map[string]*sql.Stmt{}
			}
			c.kept[q] = st
		}
		c.mu.Unlock()
	}
}

// close closes every kept statement.
func (c *stmts) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.kept {
		st.Close()
	}
	c.kept = nil
}

// execTx runs q inside tx, through a kept statement where the dialect keeps them.
func (s *Store) execTx(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	if s.d.KeepStatements {
		if st := s.stmts.get(q); st != nil {
			return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
		}
	}
	return tx.ExecContext(ctx, q, args...)
}

// queryRowTx is QueryRowContext inside tx, through a kept statement where the dialect
// keeps them.
func (s *Store) queryRowTx(ctx context.Context, tx *sql.Tx, q string, args ...any) *sql.Row {
	if s.d.KeepStatements {
		if st := s.stmts.get(q); st != nil {
			return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
		}
	}
	return tx.QueryRowContext(ctx, q, args...)
}

// queryTx is QueryContext inside tx, through a kept statement where the dialect keeps
// them.
func (s *Store) queryTx(ctx context.Context, tx *sql.Tx, q string, args ...any) (*sql.Rows, error) {
	if s.d.KeepStatements {
		if st := s.stmts.get(q); st != nil {
			return tx.StmtContext(ctx, st).QueryContext(ctx, args...)
		}
	}
	return tx.QueryContext(ctx, q, args...)
}

// insertRows runs the multi-row INSERT "head VALUES (?,…),(?,…)…" of args, cols values a
// row, inside tx; size is the bytes of the values. Where the dialect keeps statements it is
// sent in chunks of a power of two rows (at most maxChunkRows); elsewhere in statements of
// at most insertRows rows, prepared when their values are large (execSized).
func (s *Store) insertRows(ctx context.Context, tx *sql.Tx, head string, cols int, args []any, size int) error {
	for rows := len(args) / cols; rows > 0; {
		var err error
		n := min(rows, insertRows)
		if s.d.KeepStatements {
			n = min(1<<(bits.Len(uint(rows))-1), maxChunkRows)
			_, err = s.execTx(ctx, tx, rowsQuery(head, cols, n), args[:n*cols]...)
		} else {
			err = execSized(ctx, tx, size*n/rows, rowsQuery(head, cols, n), args[:n*cols])
		}
		if err != nil {
			return fmt.Errorf("%d rows: %w", n, err)
		}
		size -= size * n / rows
		args, rows = args[n*cols:], rows-n
	}
	return nil
}

// rowsQuery is head followed by n rows of cols placeholders.
func rowsQuery(head string, cols, n int) string {
	row := placeholders(cols)
	return head + ` VALUES ` + row + strings.Repeat(","+row, n-1)
}
