package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/evident-log/evident/internal/evidentd/store"
)

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

// insertAttrs writes the attributes of entries inside tx.
func insertAttrs(ctx context.Context, tx *sql.Tx, entries []store.Entry) error {
	var stmt *sql.Stmt
	for i := range entries {
		e := &entries[i]
		for _, name := range store.AttrNames(e.Attrs) {
			for _, v := range e.Attrs[name] {
				if !store.Indexable(name, v) { // the same bounds as every store
					continue
				}
				if stmt == nil {
					var err error
					if stmt, err = tx.PrepareContext(ctx, `INSERT OR IGNORE INTO entry_attrs (chain, seq, name, value) VALUES (?,?,?,?)`); err != nil {
						return fmt.Errorf("entry attributes: %w", err)
					}
					defer stmt.Close()
				}
				if _, err := stmt.ExecContext(ctx, e.Chain, e.Seq, name, v); err != nil {
					return fmt.Errorf("entry %d attributes: %w", e.Seq, err)
				}
			}
		}
	}
	return nil
}

// loadAttrs fills the attributes of es (entries of chain in seq order), reading only the
// rows of those entries.
func (s *Store) loadAttrs(ctx context.Context, chain string, es []store.Entry) error {
	const chunk = 500
	for start := 0; start < len(es); start += chunk {
		part := es[start:min(start+chunk, len(es))]
		args := make([]any, 0, len(part)+1)
		args = append(args, chain)
		for _, e := range part {
			args = append(args, e.Seq)
		}
		rows, err := s.r.QueryContext(ctx, `SELECT seq, name, value FROM entry_attrs WHERE chain=? AND seq IN (?`+strings.Repeat(",?", len(part)-1)+`) ORDER BY seq, name, value`, args...)
		if err != nil {
			return fmt.Errorf("entry attributes of %q: %w", chain, err)
		}
		if err := store.ScanAttrs(rows, part); err != nil {
			return fmt.Errorf("entry attributes of %q: %w", chain, err)
		}
	}
	return nil
}
