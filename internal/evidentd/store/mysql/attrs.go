package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/evident-log/evident/internal/evidentd/store"
)

// The profile's attributes of each entry (store.Entry.Attrs), one row of
// ledger_entry_attrs per indexable value, for filtered reads (entriesQuery). A value past
// store.Indexable's bounds is not kept.

// inChunk bounds the values of one IN (…) list.
const inChunk = 500

// attrNames returns the attribute names of m, sorted (stable SQL and row order).
func attrNames(m map[string][]string) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// attrValues is one attribute of an entry as the store keeps it: its name and its
// indexable values, sorted and once.
type attrValues struct {
	name   string
	values []string
}

// indexedAttrs returns what the store keeps of the attributes m (store.IndexedAttrs), names
// in order; nil when there are none.
func indexedAttrs(m map[string][]string) []attrValues {
	kept := store.IndexedAttrs(m)
	var out []attrValues
	for _, name := range attrNames(kept) {
		out = append(out, attrValues{name, kept[name]})
	}
	return out
}

// insertAttrs writes the indexable attributes of entries inside tx, one row per value, in
// multi-row statements.
func insertAttrs(ctx context.Context, tx *sql.Tx, entries []store.Entry) error {
	var args []any
	size := 0
	for i := range entries {
		e := &entries[i]
		for _, a := range indexedAttrs(e.Attrs) {
			for _, v := range a.values {
				args = append(args, e.Chain, e.Seq, a.name, v)
				size += len(a.name) + len(v)
			}
		}
	}
	if err := insertValues(ctx, tx, `INSERT IGNORE INTO ledger_entry_attrs (chain, seq, name, value)`, 4, args, size); err != nil {
		return fmt.Errorf("entry attributes: %w", conflict(err))
	}
	return nil
}

// loadAttrs fills the attributes of es (entries of chain in seq order), reading only the
// rows of those entries: a range of seqs where es is one, an IN list where it has gaps.
func (s *Store) loadAttrs(ctx context.Context, chain string, es []store.Entry) error {
	for start := 0; start < len(es); start += inChunk {
		part := es[start:min(start+inChunk, len(es))]
		first, last := part[0].Seq, part[len(part)-1].Seq
		var where string
		var args []any
		if last-first == uint64(len(part)-1) {
			where, args = `seq>=? AND seq<=?`, []any{chain, first, last}
		} else {
			where = `seq IN ` + placeholders(len(part))
			args = make([]any, 0, len(part)+1)
			args = append(args, chain)
			for _, e := range part {
				args = append(args, e.Seq)
			}
		}
		rows, err := s.db.QueryContext(ctx, `SELECT seq, name, value FROM ledger_entry_attrs WHERE chain=? AND `+where+` ORDER BY seq, name, value`, args...)
		if err != nil {
			return fmt.Errorf("entry attributes of %q: %w", chain, err)
		}
		if err := scanAttrs(rows, part); err != nil {
			return fmt.Errorf("entry attributes of %q: %w", chain, err)
		}
	}
	return nil
}

// scanAttrs reads rows of (seq, name, value), ordered by seq, into the Attrs of es (sorted
// by seq); rows of entries not in es are skipped. It closes rows.
func scanAttrs(rows *sql.Rows, es []store.Entry) error {
	defer rows.Close()
	i := 0
	for rows.Next() {
		var seq uint64
		var name, value string
		if err := rows.Scan(&seq, &name, &value); err != nil {
			return err
		}
		for i < len(es) && es[i].Seq < seq {
			i++
		}
		if i == len(es) {
			break
		}
		if es[i].Seq != seq {
			continue
		}
		if es[i].Attrs == nil {
			es[i].Attrs = map[string][]string{}
		}
		es[i].Attrs[name] = append(es[i].Attrs[name], value)
	}
	return rows.Err()
}
