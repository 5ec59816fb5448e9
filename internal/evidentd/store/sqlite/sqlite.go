// Package sqlite is the embedded ledger store: one SQLite database file in the data
// directory (modernc.org/sqlite, pure Go, no cgo), in WAL mode with synchronous=FULL so a
// commit is on disk before Commit returns.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

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
CREATE UNIQUE INDEX IF NOT EXISTS entries_link ON entries(chain, link);
CREATE UNIQUE INDEX IF NOT EXISTS entries_record_id ON entries(chain, record_id) WHERE record_id IS NOT NULL;
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

// Store is the SQLite ledger store.
type Store struct {
	w *sql.DB // the single writer connection
	r *sql.DB // readers
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database file at path.
func Open(ctx context.Context, path string) (*Store, error) {
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "synchronous(FULL)", "busy_timeout(10000)", "foreign_keys(1)"} {
		q.Add("_pragma", p)
	}
	dsn := "file:" + path + "?" + q.Encode()
	w, err := sql.Open("sqlite", dsn+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open ledger store: %w", err)
	}
	w.SetMaxOpenConns(1)
	if _, err := w.ExecContext(ctx, schema); err != nil {
		w.Close()
		return nil, fmt.Errorf("ledger store schema: %w", err)
	}
	if err := migrate(ctx, w); err != nil { // schema changes after version 1: migrate.go
		w.Close()
		return nil, err
	}
	r, err := sql.Open("sqlite", dsn+"&mode=ro")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open ledger store readers: %w", err)
	}
	r.SetMaxOpenConns(4)
	return &Store{w: w, r: r}, nil
}

// Close closes the database.
func (s *Store) Close() error { return errors.Join(s.r.Close(), s.w.Close()) }

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// LoadChain implements store.Store.
func (s *Store) LoadChain(ctx context.Context, id string) (*store.ChainRecord, error) {
	return loadChain(ctx, s.r, id)
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func loadChain(ctx context.Context, q queryer, id string) (*store.ChainRecord, error) {
	c := &store.ChainRecord{ID: id}
	var head []byte
	var created string
	err := q.QueryRowContext(ctx, `SELECT profile, size, head, tree, state, closed, last_seal, sealed_size, created FROM chains WHERE id = ?`, id).
		Scan(&c.Profile, &c.Size, &head, &c.Tree, &c.State, &c.Closed, &c.LastSeal, &c.SealedSize, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("chain %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load chain %q: %w", id, err)
	}
	copy(c.Head[:], head)
	c.Created, _ = time.Parse(time.RFC3339Nano, created)
	return c, nil
}

func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// putChain writes c provided the stored chain has size prevSize (or is absent and prevSize is 0).
func putChain(ctx context.Context, tx *sql.Tx, c *store.ChainRecord, prevSize uint64) error {
	cur, err := loadChain(ctx, tx, c.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if prevSize != 0 {
			return fmt.Errorf("chain %q: %w", c.ID, store.ErrConflict)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO chains (id, profile, size, head, tree, state, closed, last_seal, sealed_size, created) VALUES (?,?,?,?,?,?,?,?,?,?)`,
			c.ID, c.Profile, c.Size, c.Head[:], c.Tree, c.State, c.Closed, c.LastSeal, c.SealedSize, time.Now().UTC().Format(time.RFC3339Nano))
		return err
	case err != nil:
		return err
	}
	if cur.Size != prevSize {
		return fmt.Errorf("chain %q at size %d, expected %d: %w", c.ID, cur.Size, prevSize, store.ErrConflict)
	}
	_, err = tx.ExecContext(ctx, `UPDATE chains SET size=?, head=?, tree=?, state=?, closed=?, last_seal=?, sealed_size=? WHERE id=?`,
		c.Size, c.Head[:], c.Tree, c.State, c.Closed, c.LastSeal, c.SealedSize, c.ID)
	return err
}

// Commit implements store.Store.
func (s *Store) Commit(ctx context.Context, c *store.ChainRecord, prevSize uint64, entries []store.Entry) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := putChain(ctx, tx, c, prevSize); err != nil {
			return err
		}
		if len(entries) == 0 {
			return nil
		}
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO entries (chain, seq, prev, link, arrival, record, record_id, method, sender, ts, signed) VALUES (?,?,?,?,?,?,?,?,?,?,?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for i := range entries {
			e := &entries[i]
			var rid, ts any
			if e.RecordID != "" {
				rid = e.RecordID
			}
			if !e.TS.IsZero() {
				ts = ms(e.TS)
			}
			if _, err := stmt.ExecContext(ctx, e.Chain, e.Seq, e.Prev[:], e.Link[:], ms(e.Arrival), e.Record, rid, e.Method, e.Sender, ts, e.Signed); err != nil {
				if strings.Contains(err.Error(), "UNIQUE") {
					return fmt.Errorf("entry %d: %v: %w", e.Seq, err, store.ErrConflict)
				}
				return fmt.Errorf("entry %d: %w", e.Seq, err)
			}
		}
		return insertAttrs(ctx, tx, entries) // attrs.go
	})
	if err != nil {
		return fmt.Errorf("commit chain %q: %w", c.ID, err)
	}
	return nil
}

// FindLink implements store.Store.
func (s *Store) FindLink(ctx context.Context, chain string, l ledger.Link) (uint64, bool, error) {
	var seq uint64
	err := s.r.QueryRowContext(ctx, `SELECT seq FROM entries WHERE chain=? AND link=?`, chain, l[:]).Scan(&seq)
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
		rows, err := s.r.QueryContext(ctx, `SELECT record_id, seq FROM entries WHERE chain=? AND record_id IN (?`+strings.Repeat(",?", n-1)+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("find record ids: %w", err)
		}
		for rows.Next() {
			var id string
			var seq uint64
			if err := rows.Scan(&id, &seq); err != nil {
				rows.Close()
				return nil, err
			}
			out[id] = seq
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Entries implements store.Store.
func (s *Store) Entries(ctx context.Context, chain string, f store.Filter) ([]store.Entry, error) {
	q, args := store.EntriesQuery("entries", "entry_attrs", chain, f)
	rows, err := s.r.QueryContext(ctx, q, args...)
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

// AddSeal implements store.Store.
func (s *Store) AddSeal(ctx context.Context, c *store.ChainRecord, sl *store.Seal) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := putChain(ctx, tx, c, c.Size); err != nil {
			return fmt.Errorf("add seal: %w", err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO seals (chain, n, size, closed, statement, entry_hash, sealed_at) VALUES (?,?,?,?,?,?,?)`,
			sl.Chain, sl.N, sl.Size, sl.Closed, sl.Statement, sl.EntryHash[:], ms(sl.SealedAt))
		if err != nil {
			return fmt.Errorf("add seal: %w", err)
		}
		return nil
	})
}

// CompleteSeal implements store.Store.
func (s *Store) CompleteSeal(ctx context.Context, chain string, n, logIndex uint64, checkpoint, receipt []byte) error {
	res, err := s.w.ExecContext(ctx, `UPDATE seals SET registered=1, log_index=?, checkpoint=?, receipt=? WHERE chain=? AND n=?`, logIndex, checkpoint, receipt, chain, n)
	if err != nil {
		return fmt.Errorf("complete seal %s/%d: %w", chain, n, err)
	}
	if k, _ := res.RowsAffected(); k != 1 {
		return fmt.Errorf("complete seal %s/%d: %w", chain, n, store.ErrNotFound)
	}
	return nil
}

func (s *Store) seals(ctx context.Context, where string, args ...any) ([]store.Seal, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT chain, n, size, closed, statement, entry_hash, sealed_at, registered, log_index, checkpoint, receipt FROM seals WHERE `+where+` ORDER BY chain, n`, args...)
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
	return s.seals(ctx, `registered=0`)
}

// RecordFork implements store.Store.
func (s *Store) RecordFork(ctx context.Context, f *store.Fork) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO forks (chain, seq, existing_seq, record, arrival) VALUES (?,?,?,?,?)`, f.Chain, f.Seq, f.ExistingSeq, f.Record, ms(f.Arrival))
	if err != nil {
		return fmt.Errorf("record fork: %w", err)
	}
	return nil
}

// Forks implements store.Store.
func (s *Store) Forks(ctx context.Context, chain string) ([]store.Fork, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT seq, existing_seq, record, arrival FROM forks WHERE chain=? ORDER BY rowid`, chain)
	if err != nil {
		return nil, fmt.Errorf("forks: %w", err)
	}
	defer rows.Close()
	var out []store.Fork
	for rows.Next() {
		f := store.Fork{Chain: chain}
		var at int64
		if err := rows.Scan(&f.Seq, &f.ExistingSeq, &f.Record, &at); err != nil {
			return nil, err
		}
		f.Arrival = fromMS(at)
		out = append(out, f)
	}
	return out, rows.Err()
}

// Chains implements store.Store.
func (s *Store) Chains(ctx context.Context) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM chains ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("chains: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
