// Package mysql is the ledger store on a MySQL-compatible database (MariaDB, MySQL,
// Aurora MySQL) for running several evidentd replicas on one set of chains. It implements
// store.Store with the same behaviour as the embedded SQLite store (both pass the
// storetest conformance suite).
//
// One writer per chain is enforced by the database, not by the process: Commit and
// AddSeal open a transaction, lock the chain's row with SELECT … FOR UPDATE, compare its
// size with the size the caller loaded and refuse with store.ErrConflict when it moved.
// A new chain is inserted first (INSERT … ON DUPLICATE KEY UPDATE), which locks only its
// own row, never the gap a locking read of a missing row would lock, so many new chains
// are created at once without deadlocks; when the id is taken, the existing row is locked
// and compared instead. Record ids, links and seal numbers are unique keys; every
// collision, and an InnoDB deadlock or lock wait timeout (after which the transaction was
// rolled back whole), is reported as store.ErrConflict, so the caller reloads the chain
// and tries again.
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
	"github.com/evident-log/evident/internal/evidentd/store/sqlstore"
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
	// What submitters sent beside the entries' records, unhashed (store.Entry.Meta), and the
	// evidence heads the chains' senders reported. Added after version 1 like the attributes:
	// created when missing; entries stored before have no metadata.
	`CREATE TABLE IF NOT EXISTS ledger_entry_meta (
		chain VARBINARY(1024) NOT NULL,
		seq BIGINT UNSIGNED NOT NULL,
		meta BLOB NOT NULL,
		PRIMARY KEY (chain, seq)
	) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS ledger_evidence_heads (
		chain VARBINARY(1024) NOT NULL PRIMARY KEY,
		head BINARY(32) NOT NULL,
		audit_count BIGINT UNSIGNED NOT NULL,
		reported_at BIGINT NOT NULL
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
	// SCITT registrations made through SCRAPI and the registration policy statements
	// they passed; seq (AUTO_INCREMENT) orders them.
	`CREATE TABLE IF NOT EXISTS ledger_registrations (
		seq BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
		id VARBINARY(255) NOT NULL,
		kind VARBINARY(32) NOT NULL,
		statement LONGBLOB NOT NULL,
		issuer VARBINARY(1024) NOT NULL,
		subject VARBINARY(1024) NOT NULL,
		policy_id VARBINARY(255) NOT NULL DEFAULT '',
		received BIGINT NOT NULL,
		registered BOOLEAN NOT NULL DEFAULT FALSE,
		log_index BIGINT UNSIGNED NULL,
		checkpoint LONGBLOB NULL,
		receipt LONGBLOB NULL,
		UNIQUE KEY registrations_id (id),
		KEY registrations_pending (registered, seq),
		KEY registrations_kind (kind, seq)
	) ENGINE=InnoDB`,
	// Claims on the log entries the replicas append (store.Claims): the owner and lease of
	// each, the log size when first claimed, and the log index once appended. Added after
	// version 1 like the attributes: created when missing.
	`CREATE TABLE IF NOT EXISTS ledger_log_claims (
		entry BINARY(32) NOT NULL PRIMARY KEY,
		owner VARBINARY(255) NOT NULL,
		until BIGINT NOT NULL,
		from_size BIGINT UNSIGNED NOT NULL,
		log_index BIGINT UNSIGNED NULL
	) ENGINE=InnoDB`,
}

// Options tune Open. The zero value is usable.
type Options struct {
	// MaxOpenConns bounds the connection pool (default DefaultMaxOpenConns).
	MaxOpenConns int
}

// DefaultMaxOpenConns is the pool size when Options.MaxOpenConns is zero.
const DefaultMaxOpenConns = 16

// Store is the MySQL-compatible ledger store: the shared SQL of package sqlstore on one
// connection pool.
type Store struct {
	*sqlstore.Store
	db *sql.DB
}

var (
	_ store.Store         = (*Store)(nil)
	_ store.Registrations = (*Store)(nil)
	_ store.Claims        = (*Store)(nil)
)

// dialect is the SQL of this package's tables: rows a transaction updates are locked with
// SELECT … FOR UPDATE, and collisions with another replica are store.ErrConflict.
func dialect() sqlstore.Dialect {
	return sqlstore.Dialect{
		Tables: sqlstore.Tables{
			Chains:        "ledger_chains",
			Entries:       "ledger_entries",
			Attrs:         "ledger_entry_attrs",
			Meta:          "ledger_entry_meta",
			Heads:         "ledger_evidence_heads",
			Seals:         "ledger_seals",
			Forks:         "ledger_forks",
			Registrations: "ledger_registrations",
			Claims:        "ledger_log_claims",
		},
		Lock:         " FOR UPDATE",
		InsertIgnore: "INSERT IGNORE",
		OnTakenID:    " ON DUPLICATE KEY UPDATE id=id",
		ForkOrder:    "id",
		NowMS:        "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)",
		Conflict:     conflict,
	}
}

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
	// Count changed rows, not matched ones: a new chain's INSERT … ON DUPLICATE KEY
	// UPDATE id=id then counts 0 when the id is taken (sqlstore.Dialect.OnTakenID).
	cfg.ClientFoundRows = false
	cfg.InterpolateParams = interpolable(cfg)
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
	s := &Store{Store: sqlstore.New(dialect(), db, db), db: db}
	if err := s.init(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// interpolable reports whether the driver may write statements' arguments into their text,
// so that each statement is one round trip instead of three (prepare, execute, close): yes
// unless the DSN chooses a character set or collation, whose escaping the store does not
// vouch for (the driver refuses only some of the unsafe multi-byte ones).
func interpolable(cfg *driver.Config) bool {
	if cfg.InterpolateParams {
		return true
	}
	dsn := cfg.FormatDSN()
	return !strings.Contains(dsn, "charset=") && !strings.Contains(dsn, "collation=")
}

func (s *Store) init(ctx context.Context) error {
	var flush int
	if err := s.db.QueryRowContext(ctx, `SELECT @@innodb_flush_log_at_trx_commit`).Scan(&flush); err != nil {
		return fmt.Errorf("mysql ledger store: connecting: %w", err)
	}
	if flush != 1 {
		return fmt.Errorf("%w (the server has %d)", ErrNotDurable, flush)
	}
	for _, q := range schema {
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

// LargestRecord returns the largest record one INSERT carries under the server's
// max_allowed_packet: what is left of the packet after 64 KiB for the row's other columns (a
// statement with a record of 4 KiB or more is sent prepared, its values apart from its text
// and unescaped: sqlstore.preparedFrom). evidentd limits records to it when it is below
// --max-record-bytes, so that a record is refused on arrival with the limit named rather than
// failing in the database.
func (s *Store) LargestRecord(ctx context.Context) (int, error) {
	var packet int64
	if err := s.db.QueryRowContext(ctx, "SELECT @@max_allowed_packet").Scan(&packet); err != nil {
		return 0, fmt.Errorf("mysql ledger store: reading max_allowed_packet: %w", err)
	}
	return largestRecord(packet), nil
}

// largestRecord is LargestRecord's arithmetic for a max_allowed_packet of packet bytes.
func largestRecord(packet int64) int { return int(max(packet-64<<10, 0)) }
