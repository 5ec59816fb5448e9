package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/evident-log/evident/internal/evidentd/store"
)

// insertAttrs writes the attributes of entries inside tx, in multi-row statements.
func insertAttrs(ctx context.Context, tx *sql.Tx, entries []store.Entry) error {
	var args []any
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		n := len(args) / 4
		q := `INSERT IGNORE INTO ledger_entry_attrs (chain, seq, name, value) VALUES (?,?,?,?)` + strings.Repeat(`,(?,?,?,?)`, n-1)
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("entry attributes: %w", conflict(err))
		}
		args = args[:0]
		return nil
	}
	for i := range entries {
		e := &entries[i]
		for _, name := range store.AttrNames(e.Attrs) {
			for _, v := range e.Attrs[name] {
				args = append(args, e.Chain, e.Seq, name, v)
				if len(args) >= 4*insertRows {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
	}
	return flush()
}

// loadAttrs fills the attributes of es (all of chain, in seq order).
func (s *Store) loadAttrs(ctx context.Context, chain string, es []store.Entry) error {
	if len(es) == 0 {
		return nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT seq, name, value FROM ledger_entry_attrs WHERE chain=? AND seq>=? AND seq<=? ORDER BY seq, name, value`,
		chain, es[0].Seq, es[len(es)-1].Seq)
	if err != nil {
		return fmt.Errorf("entry attributes of %q: %w", chain, err)
	}
	if err := store.ScanAttrs(rows, es); err != nil {
		return fmt.Errorf("entry attributes of %q: %w", chain, err)
	}
	return nil
}
