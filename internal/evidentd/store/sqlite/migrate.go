package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store/keyindex"
	"github.com/evident-log/evident/ledger"
)

// Schema versions. The base schema (the constant schema in schema.go, created with IF NOT
// EXISTS on every open) is version 1. Every later change is a migration below, applied
// once, in version order, each in its own transaction together with the PRAGMA
// user_version that records it: a migration that fails leaves the database at the version
// before it. Most are additive (new tables, new nullable or defaulted columns, new
// indexes); 6, 7 and 8 move data, and an evidentd from before them refuses the database
// (version 6 and later refuse a newer schema; 5 and earlier fail on the renamed column of
// records). To add one, append to migrations with the next version number; never edit or
// reorder a migration that has shipped.
type migration struct {
	version int
	name    string
	stmts   []string
	fn      func(ctx context.Context, tx *sql.Tx) error // runs after stmts, when set
}

// migrations is ordered by version.
var migrations = []migration{
	{version: 2, name: "SCITT registrations (SCRAPI)", stmts: []string{registrationsSchema}},
	{version: 3, name: "entry attributes (audit.read filters)", stmts: []string{entryAttrsSchema}},
	{version: 4, name: "entry metadata and evidence heads (Coordinator audit entries)", stmts: []string{entryMetaSchema}},
	{version: 5, name: "claims on log entries (one statement, one log index)", stmts: []string{logClaimsSchema}},
	{version: 6, name: "records in the record file beside the database", stmts: []string{recordFileSchema}},
	{version: 7, name: "attributes and metadata in the entry's row, attributes indexed by number", stmts: []string{attrsInRowSchema}},
	{version: 8, name: "links and record ids indexed as sorted runs of keys", stmts: []string{keyRunsSchema}, fn: buildKeyRuns},
}

// buildKeyRuns is migration 8's: the keys of every entry held, written as runs of at most
// buildPairs pairs each (keyindex.Index.Add), so the memory it takes is bounded.
func buildKeyRuns(ctx context.Context, tx *sql.Tx) error {
	const page = 8192
	ix := keys()
	var pairs []keyindex.Pair // grown as the entries need: a new database has none
	chain, seq := "", int64(-1)
	for {
		rows, err := tx.QueryContext(ctx, `SELECT chain, seq, link, record_id FROM entries WHERE (chain, seq) > (?, ?) ORDER BY chain, seq LIMIT ?`, chain, seq, page)
		if err != nil {
			return fmt.Errorf("entries: %w", err)
		}
		n := 0
		for rows.Next() {
			var link []byte
			var rid sql.NullString
			if err := rows.Scan(&chain, &seq, &link, &rid); err != nil {
				rows.Close()
				return fmt.Errorf("entries: %w", err)
			}
			if len(link) != len(ledger.Link{}) {
				rows.Close()
				return fmt.Errorf("entry %q seq %d: a link of %d bytes", chain, seq, len(link))
			}
			pairs = append(pairs, keyindex.Pair{Key: keyindex.LinkKey(chain, ledger.Link(link)), Seq: uint64(seq)})
			if rid.Valid {
				pairs = append(pairs, keyindex.Pair{Key: keyindex.IDKey(chain, rid.String), Seq: uint64(seq)})
			}
			n++
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("entries: %w", err)
		}
		if len(pairs) >= buildPairs-2*page || n < page && len(pairs) > 0 {
			if err := ix.Add(ctx, tx, pairs); err != nil {
				return err
			}
			pairs = pairs[:0]
		}
		if n < page {
			return nil
		}
	}
}

// buildPairs is the most pairs buildKeyRuns holds in memory at once (16 MiB of them).
const buildPairs = 1 << 20

// migrate brings the database from its PRAGMA user_version up to the last migration,
// logging each one to log (when set): a migration that rewrites rows takes about half a
// minute a million entries (BENCHMARKS.md). db must have a single connection.
func migrate(ctx context.Context, db *sql.DB, log *slog.Logger) (err error) {
	var v int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("ledger store schema version: %w", err)
	}
	if last := migrations[len(migrations)-1].version; v > last {
		return fmt.Errorf("ledger store schema version %d is newer than this evidentd knows (%d): run the evidentd that wrote it, or a later one", v, last)
	}
	if v == 0 {
		v = 1 // the base schema was just created (or predates version tracking)
		if _, err := db.ExecContext(ctx, "PRAGMA user_version = 1"); err != nil {
			return fmt.Errorf("ledger store schema version: %w", err)
		}
	}
	if v < migrations[len(migrations)-1].version {
		// A migration's sorts and temporary tables go to temporary files, not to memory
		// (the store's temp_store): carrying rows over needs room in proportion to them.
		if _, err := db.ExecContext(ctx, "PRAGMA temp_store = FILE"); err != nil {
			return fmt.Errorf("ledger store migration: %w", err)
		}
		defer func() {
			if _, rerr := db.ExecContext(ctx, "PRAGMA temp_store = MEMORY"); rerr != nil && err == nil {
				err = fmt.Errorf("ledger store migration: %w", rerr)
			}
		}()
	}
	migrated := false
	for _, m := range migrations {
		if m.version <= v {
			continue
		}
		start := time.Now()
		if log != nil {
			log.Info("ledger store: migrating the schema", "version", m.version, "migration", m.name)
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("ledger store migration %d (%s): %w", m.version, m.name, err)
		}
		for _, s := range m.stmts {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				tx.Rollback()
				return fmt.Errorf("ledger store migration %d (%s): %w", m.version, m.name, err)
			}
		}
		if m.fn != nil {
			if err := m.fn(ctx, tx); err != nil {
				tx.Rollback()
				return fmt.Errorf("ledger store migration %d (%s): %w", m.version, m.name, err)
			}
		}
		// PRAGMA takes no bind parameters; the version is an int from this file.
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.version)); err != nil {
			tx.Rollback()
			return fmt.Errorf("ledger store migration %d (%s): %w", m.version, m.name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("ledger store migration %d (%s): %w", m.version, m.name, err)
		}
		if log != nil {
			log.Info("ledger store: schema migrated", "version", m.version, "took", time.Since(start).Round(time.Millisecond))
		}
		v = m.version
		migrated = true
	}
	if migrated {
		// A migration that rewrote rows left a WAL of their size: give the space back.
		if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			return fmt.Errorf("ledger store migration: checkpoint: %w", err)
		}
	}
	return nil
}

// SchemaVersion returns the database's schema version (PRAGMA user_version).
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}
