package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/evident-log/evident/internal/evidentd/store/recordfile"
	"github.com/evident-log/evident/internal/evidentd/store/sqlstore"
)

// records keeps the entries' record bytes in the record file beside the database
// (sqlstore.Records), the file's kept size in table record_file.
type records struct {
	f           *recordfile.File
	beforeWrite func() // tests: runs between reading the kept size and writing there
}

var _ sqlstore.Records = records{}

// keptSize returns how many bytes of the record file (past its magic) the database holds.
func keptSize(ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}) (int64, error) {
	var n int64
	if err := q.QueryRowContext(ctx, `SELECT size FROM record_file WHERE id = 1`).Scan(&n); err != nil {
		return 0, fmt.Errorf("record file size: %w", err)
	}
	return n, nil
}

// Put implements sqlstore.Records: the records go after the size tx reads, which the write
// transaction holds still until it commits or rolls back.
func (r records) Put(ctx context.Context, tx *sql.Tx, recs [][]byte) ([]recordfile.Place, error) {
	at, err := keptSize(ctx, tx)
	if err != nil {
		return nil, err
	}
	if r.beforeWrite != nil {
		r.beforeWrite()
	}
	places, end, err := r.f.Write(at, recs)
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE record_file SET size = ? WHERE id = 1`, end); err != nil {
		return nil, fmt.Errorf("record file size: %w", err)
	}
	return places, nil
}

// Sync implements sqlstore.Records.
func (r records) Sync() error { return r.f.Sync() }

// Get implements sqlstore.Records.
func (r records) Get(places []recordfile.Place) ([][]byte, error) { return r.f.Read(places) }
