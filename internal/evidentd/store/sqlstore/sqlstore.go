// Package sqlstore is the ledger store (store.Store and store.Registrations) written once
// for the SQL databases evidentd runs on. The embedded SQLite store (store/sqlite) and the
// MySQL-compatible one (store/mysql) each create their own tables and open their own
// connections, then hand them to New with the Dialect that says how their SQL differs:
// table names, the row-locking clause, the INSERTs that skip duplicates, how a chain's
// creation time and a registration's order are kept, and which errors mean that a
// concurrent writer got there first.
//
// Times are stored as Unix milliseconds, booleans as 0 and 1, links and hashes as 32-byte
// blobs; placeholders are "?" on every dialect.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/keyindex"
	"github.com/evident-log/evident/internal/evidentd/store/recordfile"
	"github.com/evident-log/evident/ledger"
)

// Tables names the tables of one store.
type Tables struct {
	Chains        string // one row per chain: its head, tree and state
	Entries       string // the accepted records
	Attrs         string // the entries' attributes, one row per value (without AttrsInRow)
	Meta          string // what submitters sent beside the entries' records, unhashed (without AttrsInRow)
	AttrValues    string // each distinct attribute value of a chain once, numbered (AttrsInRow)
	AttrSeqs      string // (value number, seq): the entries carrying each value (AttrsInRow)
	Heads         string // the evidence heads the chains' senders reported, one per chain
	Seals         string // the chains' seals
	Forks         string // the evidence of refused forks
	Registrations string // SCITT registrations and registration policies
	Claims        string // who is appending which log entry, and where it went (claims.go)
}

// Dialect is what differs between the SQL of two databases.
type Dialect struct {
	// Tables names the tables.
	Tables Tables
	// Lock ends a SELECT of a row the transaction goes on to update: " FOR UPDATE", or ""
	// where a write transaction already shuts out every other writer (SQLite).
	Lock string
	// InsertIgnore begins an INSERT whose rows colliding with a unique key are skipped:
	// "INSERT OR IGNORE" (SQLite) or "INSERT IGNORE" (MySQL).
	InsertIgnore string
	// InsertOrAbort begins an INSERT of several rows inside a larger transaction that, when
	// a row collides with a unique key, fails the whole transaction (which is then rolled
	// back): "INSERT OR ROLLBACK" (SQLite, which then keeps no statement journal to undo the
	// statement alone; the unique-key error is reported as ever), or "INSERT" (MySQL).
	InsertOrAbort string
	// OnTakenID ends the INSERT of a new chain so that, when a chain with that id exists,
	// the statement writes nothing and counts no affected row, and where rows are locked
	// locks the existing row for update: " ON CONFLICT(id) DO NOTHING" (SQLite) or
	// " ON DUPLICATE KEY UPDATE id=id" (MySQL, whose connections must count changed rows,
	// not matched ones).
	OnTakenID string
	// CreatedText keeps a chain's creation time as RFC 3339 text instead of Unix
	// milliseconds.
	CreatedText bool
	// ForkOrder is the column giving the order forks were recorded in ("rowid", "id").
	ForkOrder string
	// RegistrationSeq is the SQL expression numbering a new registration (column seq), or
	// "" when the database numbers them itself (AUTO_INCREMENT).
	RegistrationSeq string
	// NowMS is the SQL expression of the database's clock in Unix milliseconds, for the
	// leases of claims (claims.go).
	NowMS string
	// KeepStatements prepares the statements of every commit once and keeps them (stmts.go):
	// for a database in the process (SQLite), where preparing costs more than running. A
	// server (MySQL) would keep one copy per pooled connection.
	KeepStatements bool
	// Conflict returns err wrapping store.ErrConflict when it means that a concurrent
	// writer got there first (a unique key taken, a deadlock); other errors unchanged.
	Conflict func(err error) error
	// Records, when set, keeps the entries' record bytes outside the database (the
	// embedded store's record file): the entries table then holds each record's place in
	// columns rec_off and rec_len, and an empty record. Nil keeps records in the table.
	Records Records
	// RecordColumn names the entries table's column of records: "record" (the default), or
	// what a store that moved records out renamed it to, so that a binary from before the
	// move fails on it loudly instead of reading the empty records it now holds.
	RecordColumn string
	// AttrsInRow keeps each entry's attributes (as a JSON object, attrs.go) and metadata
	// in columns attrs and meta of its own row, and indexes the attributes by number: each
	// distinct (chain, name, value) once in Tables.AttrValues, and a row of two integers
	// (value number, seq) per value of an entry in Tables.AttrSeqs. Unset, every value of
	// an entry is a row of Tables.Attrs, and metadata a row of Tables.Meta.
	AttrsInRow bool
	// Keys, when set, indexes the entries' links and record ids as sorted runs of keys in
	// tables of their own (package keyindex, keys.go), not by unique indexes of the entries
	// table: Commit then looks a batch's links and record ids up before writing it, and
	// CommitAll, whose batches a journal has checked, does not.
	Keys *keyindex.Index
}

// Records keeps entries' record bytes outside the database, in a file whose kept size the
// database holds (package recordfile).
type Records interface {
	// Put writes recs inside the write transaction tx, after the bytes tx's database says
	// the file holds, and stores the new size in tx. They are durable once Sync returns,
	// which the transaction's commit waits for.
	Put(ctx context.Context, tx *sql.Tx, recs [][]byte) ([]recordfile.Place, error)
	// Sync makes what Put wrote durable.
	Sync() error
	// Get reads the records at places.
	Get(places []recordfile.Place) ([][]byte, error)
}

// Store is the ledger store on one SQL database.
type Store struct {
	d     Dialect
	w     *sql.DB // writes (and the reads of write transactions)
	r     *sql.DB // reads
	stmts stmts   // kept statements (Dialect.KeepStatements)
	reads stmts   // kept statements of r, prepared at first use (used.go)
}

// New returns the store on the tables of d, writing through w and reading through r
// (which may be w). Close closes both.
func New(d Dialect, w, r *sql.DB) *Store {
	if d.Conflict == nil {
		d.Conflict = func(err error) error { return err }
	}
	if d.InsertOrAbort == "" {
		d.InsertOrAbort = "INSERT"
	}
	if d.RecordColumn == "" {
		d.RecordColumn = "record"
	}
	return &Store{d: d, w: w, r: r}
}

var (
	_ store.Store         = (*Store)(nil)
	_ store.Registrations = (*Store)(nil)
)

// Close closes the database handles.
func (s *Store) Close() error {
	s.stmts.close()
	s.reads.close()
	if s.r == s.w {
		return s.w.Close()
	}
	return errors.Join(s.r.Close(), s.w.Close())
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// conflict applies the dialect's conflict mapping; nil stays nil.
func (s *Store) conflict(err error) error {
	if err == nil {
		return nil
	}
	return s.d.Conflict(err)
}

// tx runs fn in a write transaction (runTx), then prepares the statements the
// transaction asked to keep (stmts.go).
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	err := s.runTx(ctx, fn)
	if s.d.KeepStatements {
		s.stmts.prepareWanted(ctx, s.w)
	}
	return err
}

// runTx runs fn in a write transaction and commits it, or rolls it back on error.
//
// The transaction is begun without ctx's cancellation, on a connection taken with it:
// database/sql would otherwise roll the transaction back from another goroutine the moment
// ctx ends, releasing the database's write lock while fn may still be writing records past
// the size it read (Records.Put), where the next writer, in this process or another, then
// writes its own. A ctx that ends still stops fn's statements, and the transaction is
// rolled back here, once fn has returned.
func (s *Store) runTx(ctx context.Context, fn func(*sql.Tx) error) error {
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := ctx.Err(); err != nil {
		tx.Rollback()
		return fmt.Errorf("before commit: %w", err)
	}
	if s.d.Records != nil { // the records the transaction names are on disk before it commits
		if err := s.d.Records.Sync(); err != nil {
			tx.Rollback()
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", s.conflict(err))
	}
	return nil
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// LoadChain implements store.Store.
func (s *Store) LoadChain(ctx context.Context, id string) (*store.ChainRecord, error) {
	return s.loadChain(ctx, s.r, id, "")
}

// loadChain reads chain id through q; lock ends the SELECT (Dialect.Lock or "").
func (s *Store) loadChain(ctx context.Context, q queryer, id, lock string) (*store.ChainRecord, error) {
	c := &store.ChainRecord{ID: id}
	var head []byte
	created, decodeCreated := s.scanCreated(&c.Created)
	err := q.QueryRowContext(ctx, `SELECT profile, size, head, tree, state, closed, last_seal, sealed_size, created FROM `+s.d.Tables.Chains+` WHERE id = ?`+lock, id).
		Scan(&c.Profile, &c.Size, &head, &c.Tree, &c.State, &c.Closed, &c.LastSeal, &c.SealedSize, created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("chain %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load chain %q: %w", id, s.conflict(err))
	}
	copy(c.Head[:], head)
	decodeCreated()
	return c, nil
}

// scanCreated returns the Scan destination of a chain's created column (Unix milliseconds,
// or RFC 3339 text in a dialect with CreatedText) and the function that then decodes what
// was scanned into t.
func (s *Store) scanCreated(t *time.Time) (dest any, decode func()) {
	if s.d.CreatedText {
		var text string
		return &text, func() { *t, _ = time.Parse(time.RFC3339Nano, text) }
	}
	var ms int64
	return &ms, func() { *t = fromMS(ms) }
}

// putChain writes c provided the stored chain has size prevSize (or is absent and
// prevSize is 0). The chain's row stays locked until the transaction ends.
//
// A new chain is inserted before anything is locked, so that creating it locks only its
// own new row: a locking read of a row that does not exist locks the gap where it would be
// (InnoDB), and the creations of other chains in that gap then deadlock. Only a row that
// exists is read with Dialect.Lock, which locks that one record.
func (s *Store) putChain(ctx context.Context, tx *sql.Tx, c *store.ChainRecord, prevSize uint64) error {
	if prevSize == 0 {
		created, err := s.insertChain(ctx, tx, c)
		if err != nil || created {
			return err
		}
	}
	const update = `UPDATE %s SET size=?, head=?, tree=?, state=?, closed=?, last_seal=?, sealed_size=? WHERE id=?`
	args := []any{c.Size, c.Head[:], c.Tree, c.State, c.Closed, c.LastSeal, c.SealedSize, c.ID}
	if c.Size != prevSize {
		// The row changes (its size does), so the UPDATE that requires the expected size
		// counts one row exactly when the chain is where the caller left it.
		res, err := s.execTx(ctx, tx, fmt.Sprintf(update, s.d.Tables.Chains)+` AND size=?`, append(args, prevSize)...)
		if err != nil {
			return fmt.Errorf("update chain %q: %w", c.ID, s.conflict(err))
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("update chain %q: %w", c.ID, err)
		} else if n == 1 {
			return nil
		}
	}
	size, err := s.chainSize(ctx, tx, c.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("chain %q absent, expected at size %d: %w", c.ID, prevSize, store.ErrConflict)
	case err != nil:
		return err
	case size != prevSize:
		return fmt.Errorf("chain %q at size %d, expected %d: %w", c.ID, size, prevSize, store.ErrConflict)
	}
	if _, err := s.execTx(ctx, tx, fmt.Sprintf(update, s.d.Tables.Chains), args...); err != nil {
		return fmt.Errorf("update chain %q: %w", c.ID, s.conflict(err))
	}
	return nil
}

// chainSize reads the stored size of chain id inside tx, locking its row where the dialect
// locks rows; store.ErrNotFound when there is no such chain.
func (s *Store) chainSize(ctx context.Context, tx *sql.Tx, id string) (uint64, error) {
	var size uint64
	err := s.queryRowTx(ctx, tx, `SELECT size FROM `+s.d.Tables.Chains+` WHERE id = ?`+s.d.Lock, id).Scan(&size)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("chain %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("load chain %q: %w", id, s.conflict(err))
	}
	return size, nil
}

// insertChain inserts c as a new chain inside tx and reports whether it did: when a chain
// with its id exists already, nothing is written and that row is left locked where the
// dialect locks rows (Dialect.OnTakenID).
func (s *Store) insertChain(ctx context.Context, tx *sql.Tx, c *store.ChainRecord) (bool, error) {
	at := c.Created // when a journal gave it; else now
	if at.IsZero() {
		at = time.Now()
	}
	var created any = ms(at)
	if s.d.CreatedText {
		created = at.UTC().Format(time.RFC3339Nano)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO `+s.d.Tables.Chains+` (id, profile, size, head, tree, state, closed, last_seal, sealed_size, created) VALUES (?,?,?,?,?,?,?,?,?,?)`+s.d.OnTakenID,
		c.ID, c.Profile, c.Size, c.Head[:], c.Tree, c.State, c.Closed, c.LastSeal, c.SealedSize, created)
	if err != nil {
		return false, fmt.Errorf("insert chain %q: %w", c.ID, s.conflict(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("insert chain %q: %w", c.ID, err)
	}
	return n == 1, nil
}

// Commit implements store.Store.
func (s *Store) Commit(ctx context.Context, c *store.ChainRecord, prevSize uint64, entries []store.Entry) error {
	b := store.Batch{Chain: c, PrevSize: prevSize, Entries: entries}
	if err := s.tx(ctx, func(tx *sql.Tx) error { return s.commitBatch(ctx, tx, b) }); err != nil {
		return fmt.Errorf("commit chain %q: %w", c.ID, err)
	}
	return nil
}

// commitBatch writes b inside tx: the chain's new state, provided it is still at
// b.PrevSize, and its entries with their attributes and metadata.
func (s *Store) commitBatch(ctx context.Context, tx *sql.Tx, b store.Batch) error {
	if err := s.putChain(ctx, tx, b.Chain, b.PrevSize); err != nil {
		return err
	}
	if s.d.Keys != nil {
		if err := s.refuseTaken(ctx, tx, b); err != nil { // keys.go
			return err
		}
	}
	return s.insertAll(ctx, tx, b.Entries)
}

// insertAll writes entries (of one chain or several) inside tx, with their attributes and
// metadata, in multi-row statements, and their keys (Dialect.Keys).
func (s *Store) insertAll(ctx context.Context, tx *sql.Tx, entries []store.Entry) error {
	if s.d.Keys != nil && len(entries) > 0 {
		if err := s.addKeys(ctx, tx, entries); err != nil { // keys.go
			return err
		}
	}
	for len(entries) > 0 {
		n := batchLen(entries)
		var kept [][]attrValues // what the rows keep of each entry's attributes (attrs.go)
		if s.d.AttrsInRow {
			kept = make([][]attrValues, n)
			for i := range kept {
				kept[i] = indexedAttrs(entries[i].Attrs)
			}
		}
		if err := s.insertEntries(ctx, tx, entries[:n], kept); err != nil {
			return err
		}
		if s.d.AttrsInRow {
			if err := s.insertAttrSeqs(ctx, tx, entries[:n], kept); err != nil {
				return err
			}
		} else {
			if err := s.insertAttrs(ctx, tx, entries[:n]); err != nil { // attrs.go
				return err
			}
			if err := s.insertMeta(ctx, tx, entries[:n]); err != nil {
				return err
			}
		}
		entries = entries[n:]
	}
	return nil
}

// CommitAll commits every batch in one transaction, the chains in the order of their ids:
// all of them, or none and an error. Two batches must not name the same chain.
func (s *Store) CommitAll(ctx context.Context, batches []store.Batch) error {
	if err := s.tx(ctx, func(tx *sql.Tx) error { return s.commitWhole(ctx, tx, batches, chainOrder(batches)) }); err != nil {
		return fmt.Errorf("commit of %d chains: %w", len(batches), err)
	}
	return nil
}

// chainOrder returns the indexes of batches in the order of their chains' ids.
func chainOrder(batches []store.Batch) []int {
	order := make([]int, len(batches))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(batches[a].Chain.ID, batches[b].Chain.ID) })
	return order
}

// commitWhole writes every batch inside tx, chains in the given order, entries together.
func (s *Store) commitWhole(ctx context.Context, tx *sql.Tx, batches []store.Batch, order []int) error {
	n := 0
	for _, i := range order {
		if err := s.putChain(ctx, tx, batches[i].Chain, batches[i].PrevSize); err != nil {
			return err
		}
		n += len(batches[i].Entries)
	}
	all := make([]store.Entry, 0, n)
	for _, i := range order {
		all = append(all, batches[i].Entries...)
	}
	return s.insertAll(ctx, tx, all)
}

// FindLink implements store.Store.
func (s *Store) FindLink(ctx context.Context, chain string, l ledger.Link) (uint64, bool, error) {
	k := store.ChainLink{Chain: chain, Link: l}
	used, err := s.UsedLinks(ctx, []store.ChainLink{k})
	if err != nil {
		return 0, false, fmt.Errorf("find link: %w", err)
	}
	seq, ok := used[k]
	return seq, ok, nil
}

// FindRecordIDs implements store.Store.
func (s *Store) FindRecordIDs(ctx context.Context, chain string, ids []string) (map[string]uint64, error) {
	keys := make([]store.ChainRecordID, len(ids))
	for i, id := range ids {
		keys[i] = store.ChainRecordID{Chain: chain, ID: id}
	}
	used, err := s.UsedRecordIDs(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("find record ids: %w", err)
	}
	out := make(map[string]uint64, len(used))
	for k, seq := range used {
		out[k.ID] = seq
	}
	return out, nil
}

// Entries implements store.Store.
func (s *Store) Entries(ctx context.Context, chain string, f store.Filter) ([]store.Entry, error) {
	q, args := entriesQuery(&s.d, chain, f)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("entries of %q: %w", chain, err)
	}
	out, err := s.scanEntries(rows, chain)
	if err != nil {
		return nil, err
	}
	if !s.d.AttrsInRow {
		if err := s.loadAttrs(ctx, chain, out); err != nil { // attrs.go
			return nil, err
		}
	}
	return out, nil
}

// Chains implements store.Store.
func (s *Store) Chains(ctx context.Context) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM `+s.d.Tables.Chains+` ORDER BY id`)
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

// ListChains implements store.Store.
func (s *Store) ListChains(ctx context.Context, after string, limit int) ([]store.ChainRecord, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, profile, size, head, closed, last_seal, sealed_size, created FROM `+s.d.Tables.Chains+
		` WHERE id > ? ORDER BY id LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list chains after %q: %w", after, err)
	}
	defer rows.Close()
	var out []store.ChainRecord
	for rows.Next() {
		var c store.ChainRecord
		var head []byte
		created, decodeCreated := s.scanCreated(&c.Created)
		if err := rows.Scan(&c.ID, &c.Profile, &c.Size, &head, &c.Closed, &c.LastSeal, &c.SealedSize, created); err != nil {
			return nil, fmt.Errorf("list chains: %w", err)
		}
		copy(c.Head[:], head)
		decodeCreated()
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list chains: %w", err)
	}
	return out, nil
}

// inChunk bounds the values of one IN (…) list.
const inChunk = 500

// placeholders returns "(?,?,…)" with n placeholders (n > 0).
func placeholders(n int) string {
	return "(?" + strings.Repeat(",?", n-1) + ")"
}
