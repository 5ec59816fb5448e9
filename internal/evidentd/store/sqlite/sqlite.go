// Package sqlite is the embedded ledger store: one SQLite database file in the data
// directory (modernc.org/sqlite, pure Go, no cgo), in WAL mode with synchronous=FULL so a
// commit is on disk before Commit returns, and beside it the record file holding the
// entries' record bytes (package recordfile, "ledger.db.records" beside "ledger.db"),
// fsynced before the commit that names them.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/keyindex"
	"github.com/evident-log/evident/internal/evidentd/store/recordfile"
	"github.com/evident-log/evident/internal/evidentd/store/sqlstore"

	"modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"
)

// Store is the SQLite ledger store: the shared SQL of package sqlstore on one database
// file, written through a single connection and read through a small pool.
type Store struct {
	*sqlstore.Store
	w    *sql.DB          // the single writer connection
	recs *recordfile.File // the entries' records (records.go)
}

var (
	_ store.Store              = (*Store)(nil)
	_ store.Registrations      = (*Store)(nil)
	_ store.RegistrationLister = (*Store)(nil)
	_ store.Claims             = (*Store)(nil)
)

// dialect is the SQL of this package's tables (schema.go). Write transactions begin
// IMMEDIATE, so they need no row locks: one writer at a time holds the whole database.
func dialect(recs records) sqlstore.Dialect {
	return sqlstore.Dialect{
		Records: recs,
		Tables: sqlstore.Tables{
			Chains:        "chains",
			Entries:       "entries",
			AttrValues:    "attr_values",     // migration 7
			AttrSeqs:      "entry_attr_seqs", // migration 7
			Heads:         "evidence_heads",
			Seals:         "seals",
			Forks:         "forks",
			Registrations: "scitt_registrations",
			Claims:        "log_claims",
		},
		InsertIgnore:    "INSERT OR IGNORE",
		InsertOrAbort:   "INSERT OR ROLLBACK",
		RecordColumn:    "inline_record", // migration 6
		AttrsInRow:      true,            // migration 7
		Keys:            keys(),          // migration 8
		OnTakenID:       " ON CONFLICT(id) DO NOTHING",
		CreatedText:     true,
		ForkOrder:       "rowid",
		NowMS:           "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
		RegistrationSeq: "(SELECT COALESCE(MAX(seq), -1) + 1 FROM scitt_registrations)",
		KeepStatements:  true,
		Conflict:        conflict,
	}
}

// keys returns how the store writes and merges the runs of its links' and record ids' keys.
func keys() *keyindex.Index { return &keyindex.Index{} }

// conflict maps a taken primary or unique key to store.ErrConflict.
func conflict(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%v: %w", err, store.ErrConflict)
		}
	}
	return err
}

// Open opens (creating if needed) the database file at path, and beside it its record
// file (recordfile.PathFor).
func Open(ctx context.Context, path string) (*Store, error) { return open(ctx, path, nil, nil) }

// open is Open, logging schema migrations to log when it is set; beforeWrite, when set,
// runs in every Records.Put between reading the record file's kept size and writing there
// (tests).
func open(ctx context.Context, path string, log *slog.Logger, beforeWrite func()) (*Store, error) {
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "synchronous(FULL)", "busy_timeout(10000)", "foreign_keys(1)", "temp_store(MEMORY)"} {
		q.Add("_pragma", p)
	}
	dsn := "file:" + path + "?" + q.Encode()
	// The writer's page cache holds a large transaction's dirty pages (32 MiB; SQLite's
	// default of 2 MiB spilled them to the WAL in the middle of the journal's folds), and
	// statement journals are kept in memory (temp_store) instead of temporary files.
	w, err := sql.Open("sqlite", dsn+"&_pragma="+url.QueryEscape("cache_size(-32768)")+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open ledger store: %w", err)
	}
	w.SetMaxOpenConns(1)
	if _, err := w.ExecContext(ctx, schema); err != nil {
		w.Close()
		return nil, fmt.Errorf("ledger store schema: %w", err)
	}
	if err := migrate(ctx, w, log); err != nil { // schema changes after version 1: migrate.go
		w.Close()
		return nil, err
	}
	kept, err := keptSize(ctx, w)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open ledger store: %w", err)
	}
	recs, err := recordfile.Open(recordfile.PathFor(path), kept)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open ledger store: %w", err)
	}
	r, err := sql.Open("sqlite", dsn+"&mode=ro")
	if err != nil {
		w.Close()
		recs.Close()
		return nil, fmt.Errorf("open ledger store readers: %w", err)
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4) // keep them: a new connection opens the file again and prepares every kept statement anew
	return &Store{Store: sqlstore.New(dialect(records{recs, beforeWrite}), w, r), w: w, recs: recs}, nil
}

// Close closes the database and the record file.
func (s *Store) Close() error { return errors.Join(s.Store.Close(), s.recs.Close()) }

// Registered implements store.RegistrationLister, in log order.
func (s *Store) Registered(ctx context.Context, kind, issuer string) ([]store.Registration, error) {
	return s.ListRegistered(ctx, kind, issuer)
}
