package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"math/bits"
	"strings"
	"sync"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// The lookups of links and record ids in the entries (FindLink, FindRecordIDs), through
// statements of a bounded set of shapes, each prepared once and kept.

// maxUsedKeys is the most keys one lookup statement holds.
const maxUsedKeys = 256

// FindLink implements store.Store.
func (s *Store) FindLink(ctx context.Context, chain string, l ledger.Link) (uint64, bool, error) {
	k := store.ChainLink{Chain: chain, Link: l}
	used, err := s.usedLinks(ctx, []store.ChainLink{k})
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
	used, err := s.usedRecordIDs(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("find record ids: %w", err)
	}
	out := make(map[string]uint64, len(used))
	for k, seq := range used {
		out[k.ID] = seq
	}
	return out, nil
}

// usedLinks returns, of keys (over any chains), those whose chain holds the link, each with
// the seq holding it.
func (s *Store) usedLinks(ctx context.Context, keys []store.ChainLink) (map[store.ChainLink]uint64, error) {
	out := map[store.ChainLink]uint64{}
	args := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		args = append(args, k.Chain, k.Link[:])
	}
	err := s.lookup(ctx, "link", args, func(rows *sql.Rows) error {
		var k store.ChainLink
		var link []byte
		var seq uint64
		if err := rows.Scan(&k.Chain, &link, &seq); err != nil {
			return err
		}
		if len(link) != len(ledger.Link{}) {
			return fmt.Errorf("a stored link of %d bytes", len(link))
		}
		copy(k.Link[:], link)
		out[k] = seq
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("used links: %w", err)
	}
	return out, nil
}

// usedRecordIDs returns, of keys (over any chains), those whose chain holds an entry with
// the record id, each with the seq of that entry.
func (s *Store) usedRecordIDs(ctx context.Context, keys []store.ChainRecordID) (map[store.ChainRecordID]uint64, error) {
	out := map[store.ChainRecordID]uint64{}
	args := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		args = append(args, k.Chain, k.ID)
	}
	err := s.lookup(ctx, "record_id", args, func(rows *sql.Rows) error {
		var k store.ChainRecordID
		var seq uint64
		if err := rows.Scan(&k.Chain, &k.ID, &seq); err != nil {
			return err
		}
		out[k] = seq
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("used record ids: %w", err)
	}
	return out, nil
}

// lookup runs "SELECT chain, col, seq FROM ledger_entries WHERE (chain=? AND col=?) OR …"
// for the (chain, value) pairs of args, maxUsedKeys pairs a statement, calling scan for each
// row; the terms of a statement are rounded up to a power of two (orTerms).
func (s *Store) lookup(ctx context.Context, col string, args []any, scan func(*sql.Rows) error) error {
	for len(args) > 0 {
		n := min(len(args), 2*maxUsedKeys)
		if err := s.lookupChunk(ctx, col, args[:n:n], scan); err != nil {
			return err
		}
		args = args[n:]
	}
	return nil
}

// orTerms returns "term OR term …", one term for each row of args (width values a row),
// and the args to bind to it: their rows rounded up to a power of two by repeating the
// last, so that a bounded set of statements, prepared once and kept, serves every lookup.
// The rows are appended to args: its spare capacity must be free.
func orTerms(term string, width int, args []any) (string, []any) {
	terms := 1 << bits.Len(uint(len(args)/width-1))
	for len(args) < width*terms {
		args = append(args, args[len(args)-width:]...)
	}
	return term + strings.Repeat(` OR `+term, terms-1), args
}

// lookupChunk is one statement of lookup.
func (s *Store) lookupChunk(ctx context.Context, col string, args []any, scan func(*sql.Rows) error) error {
	where, args := orTerms(`(chain=? AND `+col+`=?)`, 2, args)
	st, err := s.reads.prepared(ctx, s.db, `SELECT chain, `+col+`, seq FROM ledger_entries WHERE `+where)
	if err != nil {
		return err
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// keptStmts are statements prepared at their first use and kept until close. database/sql
// prepares a kept statement again on each pooled connection it runs on.
type keptStmts struct {
	mu   sync.Mutex
	kept map[string]*sql.Stmt
}

// prepared returns the kept statement of q on db, preparing it at first use.
func (c *keptStmts) prepared(ctx context.Context, db *sql.DB, q string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.kept[q]; ok {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if c.kept == nil {
		c.kept = map[string]*sql.Stmt{}
	}
	c.kept[q] = st
	return st, nil
}

// close closes every kept statement.
func (c *keptStmts) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.kept {
		st.Close()
	}
	c.kept = nil
}
