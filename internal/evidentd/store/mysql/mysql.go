// Package mysql is the ledger store on a MySQL-compatible database (MariaDB, MySQL,
// Aurora MySQL) for running several evidentd replicas on one set of chains. It implements
// store.Store with the same behaviour as the embedded store (both pass the
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
//
// The files follow the store's jobs: schema.go the tables, chains.go the chains' rows and
// the write transaction, entries.go the entries and their metadata, attrs.go the entries'
// attributes, lookups.go the lookups of links and record ids, seals.go seals and forks,
// heads.go the evidence heads, registrations.go SCITT registrations, claims.go the claims
// on log entries. Times are stored as Unix milliseconds, booleans as 0 and 1, links and
// hashes as 32-byte binaries.
package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	driver "github.com/go-sql-driver/mysql"
)

// ErrNotDurable is returned by Open when the server does not flush InnoDB's redo log at
// every commit (innodb_flush_log_at_trx_commit != 1): an acknowledged entry could be lost
// in a server crash. Set the variable to 1 on the server.
var ErrNotDurable = errors.New("mysql ledger store: innodb_flush_log_at_trx_commit must be 1")

// Options tune Open. The zero value is usable.
type Options struct {
	// MaxOpenConns bounds the connection pool (default DefaultMaxOpenConns).
	MaxOpenConns int
}

// DefaultMaxOpenConns is the pool size when Options.MaxOpenConns is zero.
const DefaultMaxOpenConns = 16

// Store is the MySQL-compatible ledger store on one connection pool. It implements
// store.Store, store.Registrations and store.Claims; it is safe for concurrent use, and
// several Stores, in one process or several, may share one database.
type Store struct {
	db    *sql.DB
	reads keptStmts // the lookups' statements, prepared at first use (lookups.go)
}

var (
	_ store.Store         = (*Store)(nil)
	_ store.Registrations = (*Store)(nil)
	_ store.Claims        = (*Store)(nil)
)

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
	// UPDATE id=id then counts 0 when the id is taken (insertChain), and an UPDATE that
	// finds its row as wanted counts 0 too (claims.go reads the row back).
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
	s := &Store{db: db}
	if err := s.init(ctx); err != nil { // schema.go
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

// Close closes the kept statements and the connection pool.
func (s *Store) Close() error {
	s.reads.close()
	return s.db.Close()
}

// MySQL and MariaDB error numbers that mean "another writer got there first; the
// transaction was rolled back, reload and retry".
const (
	errDupEntry        = 1062
	errLockWaitTimeout = 1205
	errDeadlock        = 1213
)

// conflict returns err wrapping store.ErrConflict when it is a collision with a concurrent
// writer (a unique key taken, a deadlock, a lock wait timeout); other errors unchanged, nil
// stays nil.
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
// and unescaped: preparedFrom). evidentd limits records to it when it is below
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

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// placeholders returns "(?,?,…)" with n placeholders (n > 0).
func placeholders(n int) string {
	return "(?" + strings.Repeat(",?", n-1) + ")"
}
