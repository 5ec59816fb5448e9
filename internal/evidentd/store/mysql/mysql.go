// Package mysql is the ledger store on a MySQL-compatible database (MariaDB, MySQL,
// Aurora MySQL) for running several evidentd replicas on one set of chains. It implements
// store.Store with the same behaviour as the embedded SQLite store (both pass the
// storetest conformance suite).
//
// One writer per chain is enforced by the database, not by the process: Commit and
// AddSeal open a transaction, lock the chain's row with SELECT … FOR UPDATE, compare its
// size with the size the caller loaded and refuse with store.ErrConflict when it moved.
// Inserting a new chain races on its primary key; record ids, links and seal numbers are
// unique keys; every such collision, and an InnoDB deadlock or lock wait timeout (after
// which the transaction was rolled back whole), is reported as store.ErrConflict, so the
// caller reloads the chain and tries again.
//
// Durability: every table is InnoDB and Open refuses a server whose
// innodb_flush_log_at_trx_commit is not 1 (ErrNotDurable), so a commit is in the redo log
// on disk before Commit returns. Tables are prefixed "ledger_" so they can share a
// database with Tessera's own (Seq, SeqCoord, IntCoord, …).
//
// The driver is github.com/go-sql-driver/mysql, the one Tessera's AWS driver already
// uses; it is pure Go (no cgo) and speaks to MariaDB and MySQL alike.
package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
	driver "github.com/go-sql-driver/mysql"
)

// SchemaVersion is the version of the tables this package creates and reads.
const SchemaVersion = 1

// ErrNotDurable is returned by Open when the server does not flush InnoDB's redo log at
// every commit (innodb_flush_log_at_trx_commit != 1): an acknowledged entry could be lost
// in a server crash. Set the variable to 1 on the server.
var ErrNotDurable = errors.New("mysql ledger store: innodb_flush_log_at_trx_commit must be 1")

// ErrSchema is returned by Open when the database holds ledger tables of another schema
// version.
var ErrSchema = errors.New("mysql ledger store: incompatible schema version")

var schema = []string{
	`CREATE TABLE IF NOT EXISTS ledger_schema (
		id TINYINT NOT NULL PRIMARY KEY,
		version INT NOT NULL
	) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS ledger_chains (
		id VARBINARY(1024) NOT NULL PRIMARY KEY,
		profile VARBINARY(255) NOT NULL,
		size BIGINT UNSIGNED NOT NULL,
		head BINARY(32) NOT NULL,
		tree LONGBLOB NOT NULL,
		state LONGBLOB NOT NULL,
		closed BOOLEAN NOT NULL DEFAULT FALSE,
		last_seal VARBINARY(255) NOT NULL DEFAULT '',
		sealed_size BIGINT UNSIGNED NOT NULL DEFAULT 0,
		created BIGINT NOT NULL
	) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS ledger_entries (
		chain VARBINARY(1024) NOT NULL,
		seq BIGINT UNSIGNED NOT NULL,
		prev BINARY(32) NOT NULL,
		link BINARY(32) NOT NULL,
		arrival BIGINT NOT NULL,
		record LONGBLOB NOT NULL,
		record_id VARBINARY(1024) NULL,
		method VARBINARY(1024) NOT NULL,
		sender VARBINARY(1024) NOT NULL,
		ts BIGINT NULL,
		signed BOOLEAN NOT NULL,
		PRIMARY KEY (chain, seq),
		UNIQUE KEY entries_link (chain, link),
		UNIQUE KEY entries_record_id (chain, record_id)
	) ENGINE=InnoDB`,
	// The profile's attributes of each entry (store.Entry.Attrs), one row per value, for
	// filtered reads (attrs.go). Added after version 1 without a version change: the table
	// is created when missing, and entries stored before it have no attributes.
	`CREATE TABLE IF NOT EXISTS ledger_entry_attrs (
		chain VARBINARY(1024) NOT NULL,
		seq BIGINT UNSIGNED NOT NULL,
		name VARBINARY(64) NOT NULL,
		value VARBINARY(512) NOT NULL,
		PRIMARY KEY (chain, seq, name, value),
		KEY entry_attrs_lookup (chain, name, value, seq)
	) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS ledger_seals (
		chain VARBINARY(1024) NOT NULL,
		n BIGINT UNSIGNED NOT NULL,
		size BIGINT UNSIGNED NOT NULL,
		closed BOOLEAN NOT NULL,
		statement LONGBLOB NOT NULL,
		entry_hash BINARY(32) NOT NULL,
		sealed_at BIGINT NOT NULL,
		registered BOOLEAN NOT NULL DEFAULT FALSE,
		log_index BIGINT UNSIGNED NULL,
		checkpoint LONGBLOB NULL,
		receipt LONGBLOB NULL,
		PRIMARY KEY (chain, n),
		KEY seals_pending (registered)
	) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS ledger_forks (
		id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
		chain VARBINARY(1024) NOT NULL,
		seq BIGINT UNSIGNED NOT NULL,
		existing_seq BIGINT UNSIGNED NOT NULL,
		record LONGBLOB NOT NULL,
		arrival BIGINT NOT NULL,
		KEY forks_chain (chain, id)
	) ENGINE=InnoDB`,
}

// Options tune Open. The zero value is usable.
type Options struct {
	// MaxOpenConns bounds the connection pool (default DefaultMaxOpenConns).
	MaxOpenConns int
}

// DefaultMaxOpenConns is the pool size when Options.MaxOpenConns is zero.
const DefaultMaxOpenConns = 16

// Store is the MySQL-compatible ledger store.
type Store struct {
	db *sql.DB
}

var _ store.Store = (*Store)(nil)

// Open connects to the database named by dsn (go-sql-driver/mysql syntax, e.g.
// "user:pass@tcp(127.0.0.1:3306)/evident"), checks that commits are durable, and creates
// the ledger tables when missing.
func Open(ctx context.Context, dsn string, o Options) (*Store, error) {
	cfg, err := driver.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("mysql ledger store: parsing DSN: %w", err)
	}
	if cfg.DBName == "" {
		return nil, errors.New("mysql ledger store: the DSN names no database")
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	// Refuse truncation instead of storing a shortened id.
	cfg.Params["sql_mode"] = "'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'"
	cfg.MaxAllowedPacket = 0 // ask the server
	conn, err := driver.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysql ledger store: %w", err)
	}
	db := sql.OpenDB(conn)
	if o.MaxOpenConns <= 0 {
		o.MaxOpenConns = DefaultMaxOpenConns
	}
	db.SetMaxOpenConns(o.MaxOpenConns)
	db.SetMaxIdleConns(o.MaxOpenConns)
	db.SetConnMaxLifetime(30 * time.Minute)
	s := &Store{db: db}
	if err := s.init(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) init(ctx context.Context) error {
	var flush int
	if err := s.db.QueryRowContext(ctx, `SELECT @@innodb_flush_log_at_trx_commit`).Scan(&flush); err != nil {
		return fmt.Errorf("mysql ledger store: connecting: %w", err)
	}
	if flush != 1 {
		return fmt.Errorf("%w (the server has %d)", ErrNotDurable, flush)
	}
	for _, q := range append(schema, registrationsSchema) {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("mysql ledger store: schema: %w", err)
		}
	}
	if _, err := s.db.ExecContext(ctx, `INSERT IGNORE INTO ledger_schema (id, version) VALUES (0, ?)`, SchemaVersion); err != nil {
		return fmt.Errorf("mysql ledger store: schema version: %w", err)
	}
	var v int
	if err := s.db.QueryRowContext(ctx, `SELECT version FROM ledger_schema WHERE id = 0`).Scan(&v); err != nil {
		return fmt.Errorf("mysql ledger store: schema version: %w", err)
	}
	if v != SchemaVersion {
		return fmt.Errorf("%w: database has %d, this build reads %d", ErrSchema, v, SchemaVersion)
	}
	return nil
}

// Close closes the connection pool.
func (s *Store) Close() error { return s.db.Close() }

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// MySQL and MariaDB error numbers that mean "another writer got there first; the
// transaction was rolled back, reload and retry".
const (
	errDupEntry        = 1062
	errLockWaitTimeout = 1205
	errDeadlock        = 1213
)

// conflict maps collisions with a concurrent writer to store.ErrConflict.
func conflict(err error) error {
	var me *driver.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case errDupEntry, errLockWaitTimeout, errDeadlock:
			return fmt.Errorf("%v: %w", err, store.ErrConflict)
		}
	}
	return err
}

// LoadChain implements store.Store.
func (s *Store) LoadChain(ctx context.Context, id string) (*store.ChainRecord, error) {
	return loadChain(ctx, s.db, id, "")
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func loadChain(ctx context.Context, q queryer, id, lock string) (*store.ChainRecord, error) {
	c := &store.ChainRecord{ID: id}
	var head []byte
	var created int64
	err := q.QueryRowContext(ctx, `SELECT profile, size, head, tree, state, closed, last_seal, sealed_size, created FROM ledger_chains WHERE id = ?`+lock, id).
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

func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", conflict(err))
	}
	return nil
}

// putChain writes c provided the stored chain has size prevSize (or is absent and
// prevSize is 0). The chain's row stays locked until the transaction ends.
func putChain(ctx context.Context, tx *sql.Tx, c *store.ChainRecord, prevSize uint64) error {
	cur, err := loadChain(ctx, tx, c.ID, " FOR UPDATE")
	switch {
	case errors.Is(err, store.ErrNotFound):
		if prevSize != 0 {
			return fmt.Errorf("chain %q: %w", c.ID, store.ErrConflict)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO ledger_chains (id, profile, size, head, tree, state, closed, last_seal, sealed_size, created) VALUES (?,?,?,?,?,?,?,?,?,?)`,
			c.ID, c.Profile, c.Size, c.Head[:], c.Tree, c.State, c.Closed, c.LastSeal, c.SealedSize, ms(time.Now()))
		return conflict(err)
	case err != nil:
		return err
	}
	if cur.Size != prevSize {
		return fmt.Errorf("chain %q at size %d, expected %d: %w", c.ID, cur.Size, prevSize, store.ErrConflict)
	}
	_, err = tx.ExecContext(ctx, `UPDATE ledger_chains SET size=?, head=?, tree=?, state=?, closed=?, last_seal=?, sealed_size=? WHERE id=?`,
		c.Size, c.Head[:], c.Tree, c.State, c.Closed, c.LastSeal, c.SealedSize, c.ID)
	return err
}

// insertRows bounds one multi-row INSERT: in rows, and in bytes so a statement stays far
// below the server's max_allowed_packet (16 MiB by default on MariaDB, 64 MiB on MySQL).
const (
	insertRows  = 500
	insertBytes = 4 << 20
)

// Commit implements store.Store.
func (s *Store) Commit(ctx context.Context, c *store.ChainRecord, prevSize uint64, entries []store.Entry) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := putChain(ctx, tx, c, prevSize); err != nil {
			return err
		}
		for len(entries) > 0 {
			n, size := 0, 0
			for n < len(entries) && n < insertRows && (n == 0 || size+len(entries[n].Record) < insertBytes) {
				size += len(entries[n].Record) + 256
				n++
			}
			if err := insertEntries(ctx, tx, entries[:n]); err != nil {
				return err
			}
			if err := insertAttrs(ctx, tx, entries[:n]); err != nil { // attrs.go
				return err
			}
			entries = entries[n:]
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("commit chain %q: %w", c.ID, err)
	}
	return nil
}

func insertEntries(ctx context.Context, tx *sql.Tx, es []store.Entry) error {
	const cols = 11
	q := `INSERT INTO ledger_entries (chain, seq, prev, link, arrival, record, record_id, method, sender, ts, signed) VALUES (?,?,?,?,?,?,?,?,?,?,?)` +
		strings.Repeat(`,(?,?,?,?,?,?,?,?,?,?,?)`, len(es)-1)
	args := make([]any, 0, cols*len(es))
	for i := range es {
		e := &es[i]
		var rid, ts any
		if e.RecordID != "" {
			rid = e.RecordID
		}
		if !e.TS.IsZero() {
			ts = ms(e.TS)
		}
		args = append(args, e.Chain, e.Seq, e.Prev[:], e.Link[:], ms(e.Arrival), e.Record, rid, e.Method, e.Sender, ts, e.Signed)
	}
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("entries %d..%d: %w", es[0].Seq, es[len(es)-1].Seq, conflict(err))
	}
	return nil
}

// FindLink implements store.Store.
func (s *Store) FindLink(ctx context.Context, chain string, l ledger.Link) (uint64, bool, error) {
	var seq uint64
	err := s.db.QueryRowContext(ctx, `SELECT seq FROM ledger_entries WHERE chain=? AND link=?`, chain, l[:]).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("find link: %w", err)
	}
	return seq, true, nil
}

// FindRecordIDs implements store.Store.
func (s *Store) FindRecordIDs(ctx context.Context, chain string, ids []string) (map[string]uint64, error) {
	out := map[string]uint64{}
	const chunk = 500
	for len(ids) > 0 {
		n := min(chunk, len(ids))
		part := ids[:n]
		ids = ids[n:]
		args := make([]any, 0, n+1)
		args = append(args, chain)
		for _, id := range part {
			args = append(args, id)
		}
		rows, err := s.db.QueryContext(ctx, `SELECT record_id, seq FROM ledger_entries WHERE chain=? AND record_id IN (?`+strings.Repeat(",?", n-1)+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("find record ids: %w", err)
		}
		for rows.Next() {
			var id string
			var seq uint64
			if err := rows.Scan(&id, &seq); err != nil {
				rows.Close()
				return nil, fmt.Errorf("find record ids: %w", err)
			}
			out[id] = seq
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("find record ids: %w", err)
		}
	}
	return out, nil
}

// Entries implements store.Store.
func (s *Store) Entries(ctx context.Context, chain string, f store.Filter) ([]store.Entry, error) {
	q, args := store.EntriesQuery("ledger_entries", "ledger_entry_attrs", chain, f)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("entries of %q: %w", chain, err)
	}
	out, err := store.ScanEntries(rows, chain)
	if err != nil {
		return nil, err
	}
	if err := s.loadAttrs(ctx, chain, out); err != nil { // attrs.go
		return nil, err
	}
	return out, nil
}

// AddSeal implements store.Store. Seal numbers are a unique key, so of two replicas that
// prepared the same seal number only one stores it; the other gets store.ErrConflict.
func (s *Store) AddSeal(ctx context.Context, c *store.ChainRecord, sl *store.Seal) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
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

// CompleteSeal implements store.Store.
func (s *Store) CompleteSeal(ctx context.Context, chain string, n, logIndex uint64, checkpoint, receipt []byte) error {
	var exists bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT TRUE FROM ledger_seals WHERE chain=? AND n=? FOR UPDATE`, chain, n).Scan(&exists); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE ledger_seals SET registered=TRUE, log_index=?, checkpoint=?, receipt=? WHERE chain=? AND n=?`, logIndex, checkpoint, receipt, chain, n)
		return err
	})
	if err != nil {
		return fmt.Errorf("complete seal %s/%d: %w", chain, n, err)
	}
	return nil
}

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
	return s.seals(ctx, `registered=FALSE`)
}

// RecordFork implements store.Store.
func (s *Store) RecordFork(ctx context.Context, f *store.Fork) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO ledger_forks (chain, seq, existing_seq, record, arrival) VALUES (?,?,?,?,?)`, f.Chain, f.Seq, f.ExistingSeq, f.Record, ms(f.Arrival))
	if err != nil {
		return fmt.Errorf("record fork: %w", err)
	}
	return nil
}

// Forks implements store.Store.
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
