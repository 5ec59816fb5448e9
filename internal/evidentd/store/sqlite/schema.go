package sqlite

import "github.com/evident-log/evident/internal/evidentd/store/keyindex"

// schema is the base schema (version 1), created with IF NOT EXISTS on every open; later
// changes are the migrations of migrate.go. Version 1 also had unique indexes of the
// entries' links and record ids, entries_link and entries_record_id, which migration 8
// drops; they are no longer created here, where they would come back on every open.
const schema = `
CREATE TABLE IF NOT EXISTS chains (
	id TEXT PRIMARY KEY,
	profile TEXT NOT NULL,
	size INTEGER NOT NULL,
	head BLOB NOT NULL,
	tree BLOB NOT NULL,
	state BLOB NOT NULL,
	closed INTEGER NOT NULL DEFAULT 0,
	last_seal TEXT NOT NULL DEFAULT '',
	sealed_size INTEGER NOT NULL DEFAULT 0,
	created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS entries (
	chain TEXT NOT NULL,
	seq INTEGER NOT NULL,
	prev BLOB NOT NULL,
	link BLOB NOT NULL,
	arrival INTEGER NOT NULL,
	record BLOB NOT NULL,
	record_id TEXT,
	method TEXT NOT NULL,
	sender TEXT NOT NULL,
	ts INTEGER,
	signed INTEGER NOT NULL,
	PRIMARY KEY (chain, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS seals (
	chain TEXT NOT NULL,
	n INTEGER NOT NULL,
	size INTEGER NOT NULL,
	closed INTEGER NOT NULL,
	statement BLOB NOT NULL,
	entry_hash BLOB NOT NULL,
	sealed_at INTEGER NOT NULL,
	registered INTEGER NOT NULL DEFAULT 0,
	log_index INTEGER,
	checkpoint BLOB,
	receipt BLOB,
	PRIMARY KEY (chain, n)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS forks (
	chain TEXT NOT NULL,
	seq INTEGER NOT NULL,
	existing_seq INTEGER NOT NULL,
	record BLOB NOT NULL,
	arrival INTEGER NOT NULL
);
`

// registrationsSchema is migration 2: SCITT registrations made through SCRAPI and the
// registration policy statements they passed.
const registrationsSchema = `
CREATE TABLE IF NOT EXISTS scitt_registrations (
	id TEXT PRIMARY KEY,
	kind TEXT NOT NULL,
	statement BLOB NOT NULL,
	issuer TEXT NOT NULL,
	subject TEXT NOT NULL,
	policy_id TEXT NOT NULL DEFAULT '',
	received INTEGER NOT NULL,
	seq INTEGER NOT NULL,
	registered INTEGER NOT NULL DEFAULT 0,
	log_index INTEGER,
	checkpoint BLOB,
	receipt BLOB
);
CREATE INDEX IF NOT EXISTS scitt_registrations_pending ON scitt_registrations(registered, seq);
CREATE INDEX IF NOT EXISTS scitt_registrations_kind ON scitt_registrations(kind, seq);
`

// entryAttrsSchema is migration 3: the profile's attributes of each entry
// (store.Entry.Attrs), one row per value. The primary key reads an entry's attributes;
// entry_attrs_lookup finds the entries carrying a value, in chain order. Entries stored
// before this migration have no rows: attribute filters do not match them.
const entryAttrsSchema = `
CREATE TABLE IF NOT EXISTS entry_attrs (
	chain TEXT NOT NULL,
	seq INTEGER NOT NULL,
	name TEXT NOT NULL,
	value TEXT NOT NULL,
	PRIMARY KEY (chain, seq, name, value)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entry_attrs_lookup ON entry_attrs(chain, name, value, seq);
`

// entryMetaSchema is migration 4: what submitters sent beside the entries' records, unhashed
// (store.Entry.Meta: a CHAP Coordinator audit entry's seq, arrived and prev_hash), and the
// evidence head each chain's sender last reported.
const entryMetaSchema = `
CREATE TABLE IF NOT EXISTS entry_meta (
	chain TEXT NOT NULL,
	seq INTEGER NOT NULL,
	meta BLOB NOT NULL,
	PRIMARY KEY (chain, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS evidence_heads (
	chain TEXT PRIMARY KEY,
	head BLOB NOT NULL,
	audit_count INTEGER NOT NULL,
	reported_at INTEGER NOT NULL
);
`

// logClaimsSchema is migration 5: the claims on the log entries evidentd appends
// (store.Claims): owner and lease, the log size when first claimed, the log index once
// appended.
const logClaimsSchema = `
CREATE TABLE IF NOT EXISTS log_claims (
	entry BLOB PRIMARY KEY,
	owner TEXT NOT NULL,
	until INTEGER NOT NULL,
	from_size INTEGER NOT NULL,
	log_index INTEGER
) WITHOUT ROWID;
`

// recordFileSchema is migration 6: the entries' record bytes move out of the database into
// the record file beside it (package recordfile). A row written from then on holds an
// empty record and the record's place in the file (rec_off, rec_len); a row written
// before keeps its record, and NULL places. The column of records is renamed
// inline_record, so that an evidentd from before the move, which would read the empty
// records as the entries' records, fails on the database instead. record_file holds the
// one number the file's writers go by: how many bytes of it (past its magic) the database
// holds.
const recordFileSchema = `
ALTER TABLE entries RENAME COLUMN record TO inline_record;
ALTER TABLE entries ADD COLUMN rec_off INTEGER;
ALTER TABLE entries ADD COLUMN rec_len INTEGER;
CREATE TABLE IF NOT EXISTS record_file (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	size INTEGER NOT NULL
);
INSERT INTO record_file (id, size) VALUES (1, 0);
`

// attrsInRowSchema is migration 7: an entry's attributes and metadata move into its own
// row, and the attributes are indexed by number (sqlstore.Dialect.AttrsInRow). Each
// distinct (chain, name, value) is numbered once in attr_values; entry_attr_seqs holds a
// row of two integers (value number, seq) per value of an entry, in place of the two
// text-keyed index rows per value of entry_attrs; the row's attrs column holds the
// entry's attributes as a JSON object of sorted arrays, and its meta column what
// entry_meta held. The rows of entry_attrs and entry_meta are carried over, then both
// tables dropped.
const attrsInRowSchema = `
CREATE TABLE attr_values (
	id INTEGER PRIMARY KEY,
	chain TEXT NOT NULL,
	name TEXT NOT NULL,
	value TEXT NOT NULL,
	UNIQUE (chain, name, value)
);
CREATE TABLE entry_attr_seqs (
	value INTEGER NOT NULL,
	seq INTEGER NOT NULL,
	PRIMARY KEY (value, seq)
) WITHOUT ROWID;
ALTER TABLE entries ADD COLUMN attrs TEXT;
ALTER TABLE entries ADD COLUMN meta BLOB;
INSERT INTO attr_values (chain, name, value)
	SELECT DISTINCT chain, name, value FROM entry_attrs ORDER BY chain, name, value;
INSERT INTO entry_attr_seqs (value, seq)
	SELECT v.id, a.seq FROM entry_attrs a JOIN attr_values v ON v.chain=a.chain AND v.name=a.name AND v.value=a.value;
UPDATE entries SET attrs = a.attrs FROM (
	SELECT chain, seq, json_group_object(name, json(vals) ORDER BY name) AS attrs FROM (
		SELECT chain, seq, name, json_group_array(value ORDER BY value) AS vals FROM entry_attrs GROUP BY chain, seq, name)
	GROUP BY chain, seq) AS a
	WHERE a.chain = entries.chain AND a.seq = entries.seq;
UPDATE entries SET meta = m.meta FROM entry_meta AS m WHERE m.chain = entries.chain AND m.seq = entries.seq;
DROP TABLE entry_attrs;
DROP TABLE entry_meta;
`

// keyRunsSchema is migration 8: the entries' links and record ids are indexed as sorted
// runs of keys (package keyindex) instead of by the two unique indexes of the entries
// table, whose random-key inserts cost a fold more than anything else it wrote. The runs
// of the entries already held are built by buildKeyRuns.
const keyRunsSchema = `
DROP INDEX IF EXISTS entries_link;
DROP INDEX IF EXISTS entries_record_id;
` + keyindex.Schema
