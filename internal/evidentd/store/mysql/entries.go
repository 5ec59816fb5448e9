package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/evident-log/evident/internal/evidentd/store"
)

// The entries (ledger_entries) and what submitters sent beside their records
// (ledger_entry_meta). A chain's entries are written in the transaction that moves its row
// (chains.go); their seqs, links and record ids are unique keys of the table, so a batch
// that repeats one, or that another replica wrote first, fails whole with
// store.ErrConflict.

// insertRows and insertBytes bound one multi-row INSERT: in rows, and in record bytes so a
// statement stays far below max_allowed_packet (16 MiB by default on MariaDB, 64 MiB on
// MySQL).
const (
	insertRows  = 500
	insertBytes = 4 << 20
)

// preparedFrom is the size of a statement's values from which it is sent prepared (the values
// apart from the text, in binary) rather than with its values written into its text, as the
// driver does otherwise (Open, interpolable): at batches of 100 records, lexing and unescaping
// the written records took a third of MariaDB's CPU (BENCHMARKS.md). Below it, for a few small
// records, the round trip of the preparation costs more than the lexing saved.
const preparedFrom = 4 << 10

// Commit implements store.Store.
func (s *Store) Commit(ctx context.Context, c *store.ChainRecord, prevSize uint64, entries []store.Entry) error {
	err := s.runTx(ctx, func(tx *sql.Tx) error {
		if err := putChain(ctx, tx, c, prevSize); err != nil {
			return err
		}
		return insertAll(ctx, tx, entries)
	})
	if err != nil {
		return fmt.Errorf("commit chain %q: %w", c.ID, err)
	}
	return nil
}

// insertAll writes entries inside tx, with their attributes and metadata, in multi-row
// statements.
func insertAll(ctx context.Context, tx *sql.Tx, entries []store.Entry) error {
	for len(entries) > 0 {
		n := batchLen(entries)
		if err := insertEntries(ctx, tx, entries[:n]); err != nil {
			return err
		}
		if err := insertAttrs(ctx, tx, entries[:n]); err != nil { // attrs.go
			return err
		}
		if err := insertMeta(ctx, tx, entries[:n]); err != nil {
			return err
		}
		entries = entries[n:]
	}
	return nil
}

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
// store.ErrConflict.
func insertEntries(ctx context.Context, tx *sql.Tx, es []store.Entry) error {
	const cols = 11
	const head = `INSERT INTO ledger_entries (chain, seq, prev, link, arrival, record, record_id, method, sender, ts, signed)`
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
		args = append(args, e.Chain, e.Seq, e.Prev[:], e.Link[:], ms(e.Arrival), e.Record, rid, e.Method, e.Sender, ts, e.Signed)
		size += len(e.Record)
	}
	if err := insertValues(ctx, tx, head, cols, args, size); err != nil {
		return fmt.Errorf("%d entries from %q seq %d on: %w", len(es), es[0].Chain, es[0].Seq, conflict(err))
	}
	return nil
}

// insertMeta writes the metadata of those of es that carry some inside tx.
func insertMeta(ctx context.Context, tx *sql.Tx, es []store.Entry) error {
	var args []any
	size := 0
	for i := range es {
		if es[i].Meta != nil {
			args = append(args, es[i].Chain, es[i].Seq, es[i].Meta)
			size += len(es[i].Meta)
		}
	}
	if err := insertValues(ctx, tx, `INSERT INTO ledger_entry_meta (chain, seq, meta)`, 3, args, size); err != nil {
		return fmt.Errorf("entry metadata: %w", conflict(err))
	}
	return nil
}

// insertValues runs the multi-row INSERT "head VALUES (?,…),(?,…)…" of args, cols values a
// row, inside tx, in statements of at most insertRows rows, prepared when their values are
// large (execSized); size is the bytes of the values. No args, no statement.
func insertValues(ctx context.Context, tx *sql.Tx, head string, cols int, args []any, size int) error {
	for rows := len(args) / cols; rows > 0; {
		n := min(rows, insertRows)
		if err := execSized(ctx, tx, size*n/rows, rowsQuery(head, cols, n), args[:n*cols]); err != nil {
			return fmt.Errorf("%d rows: %w", n, err)
		}
		size -= size * n / rows
		args, rows = args[n*cols:], rows-n
	}
	return nil
}

// rowsQuery is head followed by n rows of cols placeholders.
func rowsQuery(head string, cols, n int) string {
	row := placeholders(cols)
	return head + ` VALUES ` + row + strings.Repeat(","+row, n-1)
}

// execSized runs q with args inside tx; size is the bytes of its values: from preparedFrom on
// the statement is prepared, so that its values travel apart from its text.
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

// Entries implements store.Store.
func (s *Store) Entries(ctx context.Context, chain string, f store.Filter) ([]store.Entry, error) {
	q, args := entriesQuery(chain, f)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("entries of %q: %w", chain, err)
	}
	out, err := scanEntries(rows, chain)
	if err != nil {
		return nil, err
	}
	if err := s.loadAttrs(ctx, chain, out); err != nil { // attrs.go
		return nil, err
	}
	return out, nil
}

// entriesQuery returns the SELECT answering Entries(chain, f): the entries with their
// metadata, without their attributes. Times are Unix milliseconds.
func entriesQuery(chain string, f store.Filter) (string, []any) {
	q := `SELECT e.seq, e.prev, e.link, e.arrival, e.record, e.record_id, e.method, e.sender, e.ts, e.signed, m.meta` +
		` FROM ledger_entries e LEFT JOIN ledger_entry_meta m ON m.chain=e.chain AND m.seq=e.seq WHERE e.chain=? AND e.seq>=?`
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
	// Every listed value of every listed attribute, driven by the attributes' index.
	for _, name := range attrNames(f.Attrs) {
		for _, v := range f.Attrs[name] {
			q += ` AND e.seq IN (SELECT seq FROM ledger_entry_attrs WHERE chain=? AND name=? AND value=?)`
			args = append(args, chain, name, v)
		}
	}
	q += ` ORDER BY e.seq`
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	return q, args
}

// scanEntries reads the rows of an entriesQuery and closes them.
func scanEntries(rows *sql.Rows, chain string) ([]store.Entry, error) {
	defer rows.Close()
	var out []store.Entry
	// Each row is scanned into these, then copied into its entry: one set of destinations
	// for every row.
	var (
		e          store.Entry
		prev, link []byte
		arrival    int64
		rid        sql.NullString
		ts         sql.NullInt64
		dest       = []any{&e.Seq, &prev, &link, &arrival, &e.Record, &rid, &e.Method, &e.Sender, &ts, &e.Signed, &e.Meta}
	)
	for rows.Next() {
		e = store.Entry{Chain: chain}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("entries of %q: %w", chain, err)
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
	return out, nil
}
