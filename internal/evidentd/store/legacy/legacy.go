// Package legacy reads the embedded store written by evidentd releases before the Pebble
// store — schema version 8 of the SQLite database ledger.db, the record file
// ledger.db.records beside it and the entry journal in journal/ — read-only, so that
// evidentd migrate can copy it into the new store.
//
// It is self-contained: the decoding it needs of the old packages (the SQL of the tables,
// the frames of the record file and of the journal's segments, the journal's payloads) is
// condensed here, so that those packages could go. Nothing is ever written: the database is
// opened with mode=ro, the record file and the journal's segments are only read, and a
// torn tail of the journal is left in place (and out of what is read), where the old store
// would have cut it off.
//
// What the old store acknowledged is what the database holds plus the journal's batches it
// had not yet folded in (after a kill -9): a chain's size in the database says which of its
// batches it holds, as the old store's recovery decided, so every batch counts once.
package legacy

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/legacy/internal/oldfmt"
	"github.com/evident-log/evident/ledger"

	_ "modernc.org/sqlite" // the "sqlite" driver
)

// SchemaVersion is the one schema version of ledger.db (its PRAGMA user_version) that
// Reader reads: that of the last release before the Pebble store.
const SchemaVersion = 8

// Names of the old store's files in the data directory.
const (
	DBFile      = "ledger.db"
	RecordsFile = "ledger.db.records"
	JournalDir  = "journal"
)

var (
	// ErrNoLegacy means the data directory holds no old store (no ledger.db).
	ErrNoLegacy = errors.New("no embedded store of an earlier evidentd (ledger.db)")
	// ErrSchema means ledger.db has a schema version other than SchemaVersion.
	ErrSchema = errors.New("ledger.db has a schema version this migration does not read")
	// ErrCorrupt means the old files do not hold what they should: a journal frame that
	// does not check (other than a torn tail), a payload that does not decode, a record
	// outside the record file or not the one its link hashes, a journal that does not
	// continue the database.
	ErrCorrupt = oldfmt.ErrCorrupt
)

// recordsMagic begins the record file; places count from after it.
const recordsMagic = "EVRECS1\n"

// Reader reads the old store of one data directory. Its methods may be called
// concurrently.
type Reader struct {
	dir  string
	db   *sql.DB
	recs *os.File // nil when there is no record file (and the database names none of it)
	kept int64    // bytes of the record file (past its magic) the database holds

	// What the journal holds that the database does not: each chain's state after its
	// last unfolded batch, and the entries of those batches in seq order.
	jchains  map[string]store.ChainRecord
	jentries map[string][]store.Entry
}

// Open opens the old store of a data directory: dir/ledger.db, dir/ledger.db.records,
// dir/journal/. It returns ErrNoLegacy (wrapped) when dir/ledger.db does not exist, and
// ErrSchema (wrapped) when its schema version is not SchemaVersion.
func Open(ctx context.Context, dir string) (*Reader, error) {
	path := filepath.Join(dir, DBFile)
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, ErrNoLegacy)
	}
	if err != nil {
		return nil, fmt.Errorf("old ledger store: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("old ledger store %s is not a file", path)
	}
	// A URI filename: mode=ro opens it read-only (a read-only connection neither checkpoints
	// nor deletes the WAL); the path's own '%', '?' and '#' are escaped.
	uri := "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	db, err := sql.Open("sqlite", uri+"?mode=ro&_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		return nil, fmt.Errorf("old ledger store %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	r := &Reader{dir: dir, db: db}
	if err := r.open(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Reader) open(ctx context.Context) error {
	path := filepath.Join(r.dir, DBFile)
	var v int
	if err := r.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("old ledger store %s: schema version: %w", path, err)
	}
	if v != SchemaVersion {
		return fmt.Errorf("%s has schema version %d, this evidentd migrates version %d only: start the previous release (the last with the SQLite store) on this data directory once to upgrade it, stop it, then migrate: %w",
			path, v, SchemaVersion, ErrSchema)
	}
	if err := r.db.QueryRowContext(ctx, `SELECT size FROM record_file WHERE id = 1`).Scan(&r.kept); err != nil {
		return fmt.Errorf("old ledger store %s: record file size: %w", path, err)
	}
	if err := r.openRecords(); err != nil {
		return err
	}
	return r.readJournal(ctx)
}

// openRecords opens the record file read-only and checks it against what the database
// says it holds.
func (r *Reader) openRecords() error {
	path := filepath.Join(r.dir, RecordsFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		if r.kept != 0 {
			return fmt.Errorf("record file %s is missing, and the database names %d bytes of it: %w", path, r.kept, ErrCorrupt)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("record file: %w", err)
	}
	head := make([]byte, len(recordsMagic))
	if _, err := io.ReadFull(f, head); err != nil || string(head) != recordsMagic {
		f.Close()
		return fmt.Errorf("record file %s does not begin with its magic: %w", path, ErrCorrupt)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("record file: %w", err)
	}
	if have := st.Size() - int64(len(recordsMagic)); have < r.kept {
		f.Close()
		return fmt.Errorf("record file %s holds %d bytes of records, the database names %d: %w", path, have, r.kept, ErrCorrupt)
	}
	r.recs = f
	return nil
}

// readJournal reads the journal's batches that the database does not hold, as the old
// store's recovery would have folded them in (journal.Ledger.recover and unheld): a
// chain's size in the database says which of its batches it holds, since a fold wrote
// batches whole and in order.
func (r *Reader) readJournal(ctx context.Context) error {
	payloads, err := oldfmt.ReadJournal(filepath.Join(r.dir, JournalDir))
	if err != nil {
		return err
	}
	r.jchains = map[string]store.ChainRecord{}
	r.jentries = map[string][]store.Entry{}
	sizes := map[string]uint64{}
	created := map[string]time.Time{}
	for i, p := range payloads {
		batches, err := oldfmt.Decode(p)
		if err != nil {
			return fmt.Errorf("journal frame %d: %w", i+1, err)
		}
		for _, b := range batches {
			id := b.Chain.ID
			size, ok := sizes[id]
			if !ok {
				c, found, err := r.dbChain(ctx, id)
				if err != nil {
					return err
				}
				if found {
					size, created[id] = c.Size, c.Created
				}
			}
			switch {
			case b.Chain.Size <= size:
				// The database holds this batch already.
			case b.PrevSize == size:
				c := b.Chain
				if c.Created.IsZero() {
					c.Created = created[id] // a chain keeps its creation time
				} else if _, ok := created[id]; !ok {
					created[id] = c.Created
				}
				r.jchains[id] = c
				for _, e := range b.Entries {
					r.jentries[id] = append(r.jentries[id], asStored(e))
				}
				size = c.Size
			default:
				return fmt.Errorf("journal frame %d: chain %q goes from size %d, but the database holds it at %d: %w", i+1, id, b.PrevSize, size, ErrCorrupt)
			}
			sizes[id] = size
		}
	}
	for id, es := range r.jentries {
		for i := range es {
			if i > 0 && (es[i].Seq != es[i-1].Seq+1 || es[i].Prev != es[i-1].Link) {
				return fmt.Errorf("journal: chain %q: entry %d does not follow entry %d: %w", id, es[i].Seq, es[i-1].Seq, ErrCorrupt)
			}
		}
	}
	return nil
}

// asStored returns a journaled entry as the old store's Entries returned it once folded
// into the database: times in milliseconds (UTC), only the indexable attributes, each
// name's values sorted and once.
func asStored(e store.Entry) store.Entry {
	e.Arrival = fromMS(e.Arrival.UnixMilli())
	if !e.TS.IsZero() {
		e.TS = fromMS(e.TS.UnixMilli())
	}
	e.Attrs = store.IndexedAttrs(e.Attrs)
	return e
}

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// Close closes the database and the record file.
func (r *Reader) Close() error {
	var errs []error
	if r.db != nil {
		errs = append(errs, r.db.Close())
		r.db = nil
	}
	if r.recs != nil {
		errs = append(errs, r.recs.Close())
		r.recs = nil
	}
	return errors.Join(errs...)
}

// Files lists the paths (dir joined with each name) of the old store's files and
// directories that exist in the data directory: ledger.db, its -wal and -shm, the record
// file and the journal directory, for moving them aside after a migration.
func (r *Reader) Files() []string {
	var out []string
	for _, name := range []string{DBFile, DBFile + "-wal", DBFile + "-shm", RecordsFile, JournalDir} {
		p := filepath.Join(r.dir, name)
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

const chainCols = `id, profile, size, head, tree, state, closed, last_seal, sealed_size, created`

func scanChain(sc interface{ Scan(...any) error }) (store.ChainRecord, error) {
	var c store.ChainRecord
	var head []byte
	var created string
	if err := sc.Scan(&c.ID, &c.Profile, &c.Size, &head, &c.Tree, &c.State, &c.Closed, &c.LastSeal, &c.SealedSize, &created); err != nil {
		return c, err
	}
	if len(head) != len(ledger.Link{}) {
		return c, fmt.Errorf("chain %q: a head of %d bytes: %w", c.ID, len(head), ErrCorrupt)
	}
	copy(c.Head[:], head)
	t, err := time.Parse(time.RFC3339Nano, created)
	if err != nil {
		return c, fmt.Errorf("chain %q: created %q: %w", c.ID, created, ErrCorrupt)
	}
	c.Created = t
	return c, nil
}

// dbChain returns a chain's row.
func (r *Reader) dbChain(ctx context.Context, id string) (store.ChainRecord, bool, error) {
	c, err := scanChain(r.db.QueryRowContext(ctx, `SELECT `+chainCols+` FROM chains WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, fmt.Errorf("old ledger store: chain %q: %w", id, err)
	}
	return c, true, nil
}

// Chains returns every chain's final state in id order: the database's row, or, when the
// journal holds batches the database has not folded in, the chain record of the last such
// batch.
func (r *Reader) Chains(ctx context.Context) ([]store.ChainRecord, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT `+chainCols+` FROM chains ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("old ledger store: chains: %w", err)
	}
	defer rows.Close()
	var out []store.ChainRecord
	seen := map[string]bool{}
	for rows.Next() {
		c, err := scanChain(rows)
		if err != nil {
			return nil, fmt.Errorf("old ledger store: chains: %w", err)
		}
		if jc, ok := r.jchains[c.ID]; ok {
			c = jc
		}
		seen[c.ID] = true
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("old ledger store: chains: %w", err)
	}
	for id, c := range r.jchains {
		if !seen[id] {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b store.ChainRecord) int { return cmp.Compare(a.ID, b.ID) })
	for i := range out {
		out[i].Tree, out[i].State = bytes.Clone(out[i].Tree), bytes.Clone(out[i].State)
	}
	return out, nil
}

// Entries returns up to n entries of chain from seq from on, in seq order (record bytes,
// attrs and meta filled, as the old store's Entries returned them), from the database and
// then from the journal's unfolded batches. An empty result means no more.
func (r *Reader) Entries(ctx context.Context, chain string, from uint64, n int) ([]store.Entry, error) {
	if n <= 0 {
		return nil, nil
	}
	out, err := r.dbEntries(ctx, chain, from, n)
	if err != nil {
		return nil, err
	}
	next := from
	if len(out) > 0 {
		next = out[len(out)-1].Seq + 1
	}
	for _, e := range r.jentries[chain] {
		if len(out) >= n {
			break
		}
		if e.Seq >= next {
			e.Record = bytes.Clone(e.Record)
			e.Meta = bytes.Clone(e.Meta)
			e.Attrs = cloneAttrs(e.Attrs)
			out = append(out, e)
		}
	}
	return out, nil
}

func cloneAttrs(m map[string][]string) map[string][]string {
	if m == nil {
		return nil
	}
	out := make(map[string][]string, len(m))
	for k, vs := range m {
		out[k] = slices.Clone(vs)
	}
	return out
}

// place is where a record is in the record file: its frame's offset past the magic, and
// the record's length.
type place struct {
	off int64
	len int
}

func (p place) end() int64 { return p.off + oldfmt.FrameHeader + int64(p.len) }

func (r *Reader) dbEntries(ctx context.Context, chain string, from uint64, n int) ([]store.Entry, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT seq, prev, link, arrival, inline_record, record_id, method, sender, ts, signed, meta, attrs, rec_off, rec_len
		FROM entries WHERE chain=? AND seq>=? ORDER BY seq LIMIT ?`, chain, from, n)
	if err != nil {
		return nil, fmt.Errorf("old ledger store: entries of %q: %w", chain, err)
	}
	defer rows.Close()
	var out []store.Entry
	var places []place
	var kept []int // indexes in out of the entries whose records are in places
	for rows.Next() {
		e := store.Entry{Chain: chain}
		var (
			prev, link, attrs []byte
			arrival           int64
			rid               sql.NullString
			ts, off, ln       sql.NullInt64
		)
		if err := rows.Scan(&e.Seq, &prev, &link, &arrival, &e.Record, &rid, &e.Method, &e.Sender, &ts, &e.Signed, &e.Meta, &attrs, &off, &ln); err != nil {
			return nil, fmt.Errorf("old ledger store: entries of %q: %w", chain, err)
		}
		if len(prev) != len(e.Prev) || len(link) != len(e.Link) {
			return nil, fmt.Errorf("old ledger store: entries of %q: seq %d: links of %d and %d bytes: %w", chain, e.Seq, len(prev), len(link), ErrCorrupt)
		}
		copy(e.Prev[:], prev)
		copy(e.Link[:], link)
		if attrs != nil {
			if e.Attrs, err = decodeAttrs(attrs); err != nil {
				return nil, fmt.Errorf("old ledger store: entries of %q: seq %d: %w", chain, e.Seq, err)
			}
		}
		if off.Valid { // else the record is in the row: stored before the record file
			places = append(places, place{off.Int64, int(ln.Int64)})
			kept = append(kept, len(out))
		}
		e.Arrival = fromMS(arrival)
		e.RecordID = rid.String
		if ts.Valid {
			e.TS = fromMS(ts.Int64)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("old ledger store: entries of %q: %w", chain, err)
	}
	if len(places) > 0 {
		recs, err := r.readRecords(places)
		if err != nil {
			return nil, fmt.Errorf("old ledger store: entries of %q: %w", chain, err)
		}
		for i, k := range kept {
			out[k].Record = recs[i]
		}
	}
	for i := range out {
		e := &out[i]
		if ledger.NextLink(e.Record, e.Prev) != e.Link {
			return nil, fmt.Errorf("old ledger store: entries of %q: seq %d: the record is not the one its link hashes: %w", chain, e.Seq, ErrCorrupt)
		}
	}
	return out, nil
}

// readRecords returns the records at places, each checked against its frame; places that
// follow each other are read together.
func (r *Reader) readRecords(places []place) ([][]byte, error) {
	path := filepath.Join(r.dir, RecordsFile)
	for _, p := range places {
		if r.recs == nil || p.off < 0 || p.len < 1 || p.len > oldfmt.FrameMaxPayload || p.off > r.kept-oldfmt.FrameHeader-int64(p.len) {
			return nil, fmt.Errorf("record file %s: a record of %d bytes at %d is outside the %d bytes the database holds: %w", path, p.len, p.off, r.kept, ErrCorrupt)
		}
	}
	const maxRead = 4 << 20
	out := make([][]byte, len(places))
	for i := 0; i < len(places); {
		j := i + 1
		for j < len(places) && places[j].off == places[j-1].end() && places[j].end()-places[i].off <= maxRead {
			j++
		}
		buf := make([]byte, places[j-1].end()-places[i].off)
		if _, err := r.recs.ReadAt(buf, int64(len(recordsMagic))+places[i].off); err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.Join(ErrCorrupt, err)
			}
			return nil, fmt.Errorf("record file %s: reading %d bytes at %d: %w", path, len(buf), places[i].off, err)
		}
		for k := i; k < j; k++ {
			p, ok := oldfmt.ParseFrame(buf[places[k].off-places[i].off:])
			if !ok || len(p) != places[k].len {
				return nil, fmt.Errorf("record file %s: the record at %d (%d bytes) does not check: %w", path, places[k].off, places[k].len, ErrCorrupt)
			}
			out[k] = p
		}
		i = j
	}
	return out, nil
}

// Seals returns the seals of every chain, by chain then n.
func (r *Reader) Seals(ctx context.Context) ([]store.Seal, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT chain, n, size, closed, statement, entry_hash, sealed_at, registered, log_index, checkpoint, receipt FROM seals ORDER BY chain, n`)
	if err != nil {
		return nil, fmt.Errorf("old ledger store: seals: %w", err)
	}
	defer rows.Close()
	var out []store.Seal
	for rows.Next() {
		var s store.Seal
		var eh []byte
		var at int64
		var idx sql.NullInt64
		if err := rows.Scan(&s.Chain, &s.N, &s.Size, &s.Closed, &s.Statement, &eh, &at, &s.Registered, &idx, &s.Checkpoint, &s.Receipt); err != nil {
			return nil, fmt.Errorf("old ledger store: seals: %w", err)
		}
		copy(s.EntryHash[:], eh)
		s.SealedAt = fromMS(at)
		s.LogIndex = uint64(idx.Int64)
		out = append(out, s)
	}
	return out, rows.Err()
}

// Forks returns the fork evidence of every chain, in stored order.
func (r *Reader) Forks(ctx context.Context) ([]store.Fork, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT chain, seq, existing_seq, record, arrival FROM forks ORDER BY rowid`)
	if err != nil {
		return nil, fmt.Errorf("old ledger store: forks: %w", err)
	}
	defer rows.Close()
	var out []store.Fork
	for rows.Next() {
		var f store.Fork
		var at int64
		if err := rows.Scan(&f.Chain, &f.Seq, &f.ExistingSeq, &f.Record, &at); err != nil {
			return nil, fmt.Errorf("old ledger store: forks: %w", err)
		}
		f.Arrival = fromMS(at)
		out = append(out, f)
	}
	return out, rows.Err()
}

// EvidenceHeads returns the evidence head kept for each chain that has one, by chain.
func (r *Reader) EvidenceHeads(ctx context.Context) ([]store.EvidenceHead, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT chain, head, audit_count, reported_at FROM evidence_heads ORDER BY chain`)
	if err != nil {
		return nil, fmt.Errorf("old ledger store: evidence heads: %w", err)
	}
	defer rows.Close()
	var out []store.EvidenceHead
	for rows.Next() {
		var h store.EvidenceHead
		var head []byte
		var at int64
		if err := rows.Scan(&h.Chain, &head, &h.AuditCount, &at); err != nil {
			return nil, fmt.Errorf("old ledger store: evidence heads: %w", err)
		}
		copy(h.Head[:], head)
		h.ReportedAt = fromMS(at)
		out = append(out, h)
	}
	return out, rows.Err()
}

// Registrations returns the SCITT registrations and registration policies, in their seq
// order (oldest first).
func (r *Reader) Registrations(ctx context.Context) ([]store.Registration, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT id, kind, statement, issuer, subject, policy_id, received, registered, log_index, checkpoint, receipt FROM scitt_registrations ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("old ledger store: registrations: %w", err)
	}
	defer rows.Close()
	var out []store.Registration
	for rows.Next() {
		var g store.Registration
		var received int64
		var idx sql.NullInt64
		if err := rows.Scan(&g.ID, &g.Kind, &g.Statement, &g.Issuer, &g.Subject, &g.PolicyID, &received, &g.Registered, &idx, &g.Checkpoint, &g.Receipt); err != nil {
			return nil, fmt.Errorf("old ledger store: registrations: %w", err)
		}
		g.Received = fromMS(received)
		g.LogIndex = uint64(idx.Int64)
		out = append(out, g)
	}
	return out, rows.Err()
}

// Claim is the state of a claim on a log entry evidentd appended (or was appending): who
// held it until when, the log size when first claimed, and once appended, its index.
type Claim struct {
	Entry    [32]byte
	Owner    string
	Until    time.Time
	From     uint64
	Appended bool
	Index    uint64
}

// Claims returns every claim on a log entry, by entry.
func (r *Reader) Claims(ctx context.Context) ([]Claim, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT entry, owner, until, from_size, log_index FROM log_claims ORDER BY entry`)
	if err != nil {
		return nil, fmt.Errorf("old ledger store: claims: %w", err)
	}
	defer rows.Close()
	var out []Claim
	for rows.Next() {
		var c Claim
		var entry []byte
		var until int64
		var idx sql.NullInt64
		if err := rows.Scan(&entry, &c.Owner, &until, &c.From, &idx); err != nil {
			return nil, fmt.Errorf("old ledger store: claims: %w", err)
		}
		if len(entry) != len(c.Entry) {
			return nil, fmt.Errorf("old ledger store: claims: an entry of %d bytes: %w", len(entry), ErrCorrupt)
		}
		copy(c.Entry[:], entry)
		c.Until = fromMS(until)
		c.Appended, c.Index = idx.Valid, uint64(idx.Int64)
		out = append(out, c)
	}
	return out, rows.Err()
}
