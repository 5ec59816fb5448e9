package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/recordfile"
	"github.com/evident-log/evident/ledger"
)

// insertRows and insertBytes bound one multi-row INSERT: in rows, and in record bytes so a
// statement stays far below MySQL's max_allowed_packet (16 MiB by default on MariaDB,
// 64 MiB on MySQL) and SQLite's bound on variables.
const (
	insertRows  = 500
	insertBytes = 4 << 20
)

// batchLen returns how many of es (at least one) go in the next INSERT.
func batchLen(es []store.Entry) int {
	n, size := 0, 0
	for n < len(es) && n < insertRows && (n == 0 || size+len(es[n].Record) < insertBytes) {
		size += len(es[n].Record) + 256
		n++
	}
	return n
}

// insertEntries writes es in one INSERT inside tx; a taken seq, link or record id is
// store.ErrConflict. With Dialect.AttrsInRow each row also holds the entry's metadata and
// attributes, kept[i] those of es[i] (indexedAttrs).
func (s *Store) insertEntries(ctx context.Context, tx *sql.Tx, es []store.Entry, kept [][]attrValues) error {
	cols := 11
	head := s.d.InsertOrAbort + ` INTO ` + s.d.Tables.Entries + ` (chain, seq, prev, link, arrival, ` + s.d.RecordColumn + `, record_id, method, sender, ts, signed`
	var places []recordfile.Place
	if s.d.Records != nil {
		recs := make([][]byte, len(es))
		for i := range es {
			recs[i] = es[i].Record
		}
		var err error
		if places, err = s.d.Records.Put(ctx, tx, recs); err != nil {
			return fmt.Errorf("%d entries from %q seq %d: %w", len(es), es[0].Chain, es[0].Seq, err)
		}
		cols += 2
		head += `, rec_off, rec_len`
	}
	if s.d.AttrsInRow {
		cols += 2
		head += `, attrs, meta`
	}
	head += `)`
	args := make([]any, 0, cols*len(es))
	size := 0
	for i := range es {
		e := &es[i]
		var rid, ts any
		if e.RecordID != "" {
			rid = e.RecordID
		}
		if !e.TS.IsZero() {
			ts = ms(e.TS)
		}
		rec := e.Record
		if places != nil {
			rec = []byte{} // the record is in the record file, at places[i]
		}
		args = append(args, e.Chain, e.Seq, e.Prev[:], e.Link[:], ms(e.Arrival), rec, rid, e.Method, e.Sender, ts, e.Signed)
		if places != nil {
			args = append(args, places[i].Off, places[i].Len)
		}
		if s.d.AttrsInRow {
			var attrs any
			if a := encodeAttrs(kept[i]); a != "" { // attrs.go
				attrs = a
			}
			args = append(args, attrs, e.Meta)
			size += len(e.Meta)
		}
		size += len(rec)
	}
	if err := s.insertRows(ctx, tx, head, cols, args, size); err != nil {
		return fmt.Errorf("%d entries from %q seq %d on: %w", len(es), es[0].Chain, es[0].Seq, s.conflict(err))
	}
	return nil
}

// preparedFrom is the size of a statement's values from which it is sent prepared (the values
// apart from the text, in binary) rather than with its values written into its text, as the
// MySQL store's driver does otherwise: at batches of 100 records, lexing and unescaping the
// written records took a third of MariaDB's CPU (BENCHMARKS.md). Below it, for a few small
// records, the round trip of the preparation costs more than the lexing saved.
const preparedFrom = 4 << 10

// execSized runs q with args inside tx; size is the bytes of its values.
func execSized(ctx context.Context, tx *sql.Tx, size int, q string, args []any) error {
	if size < preparedFrom {
		_, err := tx.ExecContext(ctx, q, args...)
		return err
	}
	st, err := tx.PrepareContext(ctx, q)
	if err != nil {
		return err
	}
	defer st.Close()
	_, err = st.ExecContext(ctx, args...)
	return err
}

// entriesQuery returns the SELECT answering Entries(chain, f) on the tables of d, so a
// filter means the same thing on every dialect. It selects the records' places in the
// record file where d keeps records there (Dialect.Records), and the attributes where rows
// hold them (Dialect.AttrsInRow). Times are Unix milliseconds.
func entriesQuery(d *Dialect, chain string, f store.Filter) (string, []any) {
	t := &d.Tables
	q := `SELECT e.seq, e.prev, e.link, e.arrival, e.` + d.RecordColumn + `, e.record_id, e.method, e.sender, e.ts, e.signed`
	if d.AttrsInRow {
		q += `, e.meta, e.attrs`
	} else {
		q += `, m.meta`
	}
	if d.Records != nil {
		q += `, e.rec_off, e.rec_len`
	}
	q += ` FROM ` + t.Entries + ` e`
	if !d.AttrsInRow {
		q += ` LEFT JOIN ` + t.Meta + ` m ON m.chain=e.chain AND m.seq=e.seq`
	}
	q += ` WHERE e.chain=? AND e.seq>=?`
	args := []any{chain, f.From}
	if f.Method != "" {
		q += ` AND e.method=?`
		args = append(args, f.Method)
	}
	if f.Sender != "" {
		q += ` AND e.sender=?`
		args = append(args, f.Sender)
	}
	if !f.Since.IsZero() {
		q += ` AND e.arrival>=?`
		args = append(args, f.Since.UnixMilli())
	}
	if !f.Until.IsZero() {
		q += ` AND e.arrival<?`
		args = append(args, f.Until.UnixMilli())
	}
	// Every listed value of every listed attribute, driven by the attributes' index. A
	// value the dictionary lacks numbers NULL, which no row equals.
	for _, name := range attrNames(f.Attrs) {
		for _, v := range f.Attrs[name] {
			if d.AttrsInRow {
				q += ` AND e.seq IN (SELECT seq FROM ` + t.AttrSeqs + ` WHERE value=(SELECT id FROM ` + t.AttrValues + ` WHERE chain=? AND name=? AND value=?))`
			} else {
				q += ` AND e.seq IN (SELECT seq FROM ` + t.Attrs + ` WHERE chain=? AND name=? AND value=?)`
			}
			args = append(args, chain, name, v)
		}
	}
	q += ` ORDER BY e.seq`
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	return q, args
}

// scanEntries reads the rows of an entriesQuery and closes them, then the records kept in
// the record file. Without Dialect.AttrsInRow the entries' attributes are not read.
func (s *Store) scanEntries(rows *sql.Rows, chain string) ([]store.Entry, error) {
	defer rows.Close()
	var out []store.Entry
	var places []recordfile.Place
	var kept []int // the indexes in out of the entries whose records are in places
	// Each row is scanned into these, then copied into its entry: one set of destinations
	// for every row.
	var (
		e          store.Entry
		prev, link []byte
		arrival    int64
		rid        sql.NullString
		ts, off, n sql.NullInt64
		attrs      []byte
		dest       = []any{&e.Seq, &prev, &link, &arrival, &e.Record, &rid, &e.Method, &e.Sender, &ts, &e.Signed, &e.Meta}
	)
	if s.d.AttrsInRow {
		dest = append(dest, &attrs)
	}
	if s.d.Records != nil {
		dest = append(dest, &off, &n)
	}
	for rows.Next() {
		e = store.Entry{Chain: chain}
		off, n = sql.NullInt64{}, sql.NullInt64{}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("entries of %q: %w", chain, err)
		}
		if attrs != nil {
			var err error
			if e.Attrs, err = decodeAttrs(attrs); err != nil { // attrs.go
				return nil, fmt.Errorf("entries of %q: seq %d: %w", chain, e.Seq, err)
			}
		}
		if off.Valid { // else the record is in the table: stored before the record file
			places = append(places, recordfile.Place{Off: off.Int64, Len: int(n.Int64)})
			kept = append(kept, len(out))
		}
		copy(e.Prev[:], prev)
		copy(e.Link[:], link)
		e.Arrival = fromMS(arrival)
		e.RecordID = rid.String
		if ts.Valid {
			e.TS = fromMS(ts.Int64)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("entries of %q: %w", chain, err)
	}
	if len(places) > 0 {
		recs, err := s.d.Records.Get(places)
		if err != nil {
			return nil, fmt.Errorf("entries of %q: %w", chain, err)
		}
		for i, k := range kept {
			// The file is a separate file: a record is served only if it is the one its
			// entry's link hashes, so a file from another backup than the database, or
			// bytes written over, are an error and never another record.
			e := &out[k]
			if ledger.NextLink(recs[i], e.Prev) != e.Link {
				return nil, fmt.Errorf("entries of %q: seq %d: the record at %d of the record file is not the one its link hashes: %w", chain, e.Seq, places[i].Off, recordfile.ErrCorrupt)
			}
			e.Record = recs[i]
		}
	}
	return out, nil
}

// insertMeta writes the metadata of those of es that carry some inside tx.
func (s *Store) insertMeta(ctx context.Context, tx *sql.Tx, es []store.Entry) error {
	var args []any
	size := 0
	for i := range es {
		if es[i].Meta != nil {
			args = append(args, es[i].Chain, es[i].Seq, es[i].Meta)
			size += len(es[i].Meta)
		}
	}
	if err := s.insertRows(ctx, tx, s.d.InsertOrAbort+` INTO `+s.d.Tables.Meta+` (chain, seq, meta)`, 3, args, size); err != nil {
		return fmt.Errorf("entry metadata: %w", s.conflict(err))
	}
	return nil
}

// PutEvidenceHead keeps h as the chain's evidence head, replacing the one kept before.
func (s *Store) PutEvidenceHead(ctx context.Context, h *store.EvidenceHead) error {
	_, err := s.w.ExecContext(ctx, `REPLACE INTO `+s.d.Tables.Heads+` (chain, head, audit_count, reported_at) VALUES (?,?,?,?)`,
		h.Chain, h.Head[:], h.AuditCount, ms(h.ReportedAt))
	if err != nil {
		return fmt.Errorf("evidence head of %q: %w", h.Chain, err)
	}
	return nil
}

// EvidenceHead returns the evidence head kept for chain, or store.ErrNotFound.
func (s *Store) EvidenceHead(ctx context.Context, chain string) (*store.EvidenceHead, error) {
	h := &store.EvidenceHead{Chain: chain}
	var head []byte
	var at int64
	err := s.r.QueryRowContext(ctx, `SELECT head, audit_count, reported_at FROM `+s.d.Tables.Heads+` WHERE chain=?`, chain).Scan(&head, &h.AuditCount, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("evidence head of %q: %w", chain, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("evidence head of %q: %w", chain, err)
	}
	copy(h.Head[:], head)
	h.ReportedAt = fromMS(at)
	return h, nil
}
