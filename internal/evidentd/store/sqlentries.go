package store

import (
	"database/sql"
	"fmt"
	"slices"
	"time"
)

// The SQL stores (store/sqlite, store/mysql) share one schema shape for entries and their
// attributes; these helpers build and read the Entries query for both, so a filter means
// the same thing on every store.

// AttrNames returns the attribute names of m, sorted (stable SQL and row order).
func AttrNames(m map[string][]string) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// EntriesQuery returns the SELECT answering Entries(chain, f) on a SQL store whose entries
// are in table entries and their attributes in table attrs. Times are Unix milliseconds.
func EntriesQuery(entries, attrs, chain string, f Filter) (string, []any) {
	q := `SELECT seq, prev, link, arrival, record, record_id, method, sender, ts, signed FROM ` + entries + ` WHERE chain=? AND seq>=?`
	args := []any{chain, f.From}
	if f.Method != "" {
		q += ` AND method=?`
		args = append(args, f.Method)
	}
	if f.Sender != "" {
		q += ` AND sender=?`
		args = append(args, f.Sender)
	}
	if !f.Since.IsZero() {
		q += ` AND arrival>=?`
		args = append(args, f.Since.UnixMilli())
	}
	if !f.Until.IsZero() {
		q += ` AND arrival<?`
		args = append(args, f.Until.UnixMilli())
	}
	// Every listed value of every listed attribute, driven by the attrs lookup index.
	for _, name := range AttrNames(f.Attrs) {
		for _, v := range f.Attrs[name] {
			q += ` AND seq IN (SELECT seq FROM ` + attrs + ` WHERE chain=? AND name=? AND value=?)`
			args = append(args, chain, name, v)
		}
	}
	q += ` ORDER BY seq`
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	return q, args
}

// ScanEntries reads the rows of an EntriesQuery (without attributes) and closes them.
func ScanEntries(rows *sql.Rows, chain string) ([]Entry, error) {
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		e := Entry{Chain: chain}
		var prev, link []byte
		var arrival int64
		var rid sql.NullString
		var ts sql.NullInt64
		if err := rows.Scan(&e.Seq, &prev, &link, &arrival, &e.Record, &rid, &e.Method, &e.Sender, &ts, &e.Signed); err != nil {
			return nil, fmt.Errorf("entries of %q: %w", chain, err)
		}
		copy(e.Prev[:], prev)
		copy(e.Link[:], link)
		e.Arrival = time.UnixMilli(arrival).UTC()
		e.RecordID = rid.String
		if ts.Valid {
			e.TS = time.UnixMilli(ts.Int64).UTC()
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("entries of %q: %w", chain, err)
	}
	return out, nil
}
