package mysql

import (
	"context"
	"errors"
	"fmt"
)

// SchemaVersion is the version of the tables this package creates and reads.
const SchemaVersion = 1

// ErrSchema is returned by Open when the database holds ledger tables of another schema
// version.
var ErrSchema = errors.New("mysql ledger store: incompatible schema version")

// schema creates the ledger tables when missing. Times are Unix milliseconds, booleans 0
// and 1, links and hashes 32-byte binaries.
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

// init checks that the server's commits are durable, creates the tables when missing and
// checks the schema version.
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
