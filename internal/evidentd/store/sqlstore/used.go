package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"math/bits"
	"strings"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// maxUsedKeys is the most keys one lookup statement of UsedLinks and UsedRecordIDs holds.
const maxUsedKeys = 256

// UsedLinks returns, of keys (over any chains), those whose chain holds the link, each with
// the seq holding it.
func (s *Store) UsedLinks(ctx context.Context, keys []store.ChainLink) (map[store.ChainLink]uint64, error) {
	if s.d.Keys != nil {
		out, err := readKeyed(ctx, s, keys, s.keyedLinks) // keys.go
		if err != nil {
			return nil, fmt.Errorf("used links: %w", err)
		}
		return out, nil
	}
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

// UsedRecordIDs returns, of keys (over any chains), those whose chain holds an entry with
// the record id, each with the seq of that entry.
func (s *Store) UsedRecordIDs(ctx context.Context, keys []store.ChainRecordID) (map[store.ChainRecordID]uint64, error) {
	if s.d.Keys != nil {
		out, err := readKeyed(ctx, s, keys, s.keyedRecordIDs) // keys.go
		if err != nil {
			return nil, fmt.Errorf("used record ids: %w", err)
		}
		return out, nil
	}
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

// lookup runs "SELECT chain, col, seq FROM entries WHERE (chain=? AND col=?) OR …" for
// the (chain, value) pairs of args, maxUsedKeys pairs a statement, calling scan for each
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
	st, err := s.reads.prepared(ctx, s.r, `SELECT chain, `+col+`, seq FROM `+s.d.Tables.Entries+` WHERE `+where)
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

// EachRecordID calls fn with every (chain, record id) the store's entries hold, in batches
// of up to n, chain by chain and in seq order; it stops at fn's first error. Each batch is
// a statement of its own, so no read lasts the whole walk (a SQLite read holds the WAL back
// from its checkpoint while it lasts); a pair added meanwhile may or may not be seen, a
// pair held when it began is.
func (s *Store) EachRecordID(ctx context.Context, n int, fn func([]store.ChainRecordID) error) error {
	keys := make([]store.ChainRecordID, 0, n)
	for after := ""; ; {
		chains, err := s.ListChains(ctx, after, 1000)
		if err != nil {
			return fmt.Errorf("record ids: %w", err)
		}
		if len(chains) == 0 {
			break
		}
		after = chains[len(chains)-1].ID
		for _, c := range chains {
			for from := int64(-1); ; {
				limit := n - len(keys)
				got, last, err := s.recordIDsAfter(ctx, c.ID, from, limit, keys)
				if err != nil {
					return err
				}
				added := len(got) - len(keys)
				from = last
				if keys = got; len(keys) == n {
					if err := fn(keys); err != nil {
						return err
					}
					keys = keys[:0]
				}
				if added < limit {
					break // the chain has no more
				}
			}
		}
	}
	if len(keys) > 0 {
		return fn(keys)
	}
	return nil
}

// recordIDsAfter appends to keys up to limit record ids of chain's entries past seq after,
// in seq order, and returns the seq of the last (after when there are none).
func (s *Store) recordIDsAfter(ctx context.Context, chain string, after int64, limit int, keys []store.ChainRecordID) ([]store.ChainRecordID, int64, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT seq, record_id FROM `+s.d.Tables.Entries+
		` WHERE chain=? AND seq>? AND record_id IS NOT NULL ORDER BY seq LIMIT ?`, chain, after, limit)
	if err != nil {
		return nil, after, fmt.Errorf("record ids of %q: %w", chain, err)
	}
	defer rows.Close()
	for rows.Next() {
		k := store.ChainRecordID{Chain: chain}
		if err := rows.Scan(&after, &k.ID); err != nil {
			return nil, after, fmt.Errorf("record ids of %q: %w", chain, err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, after, fmt.Errorf("record ids of %q: %w", chain, err)
	}
	return keys, after, nil
}
