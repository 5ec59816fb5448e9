package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/keyindex"
	"github.com/evident-log/evident/ledger"
)

// The entries' links and record ids in a store with Dialect.Keys: keys in sorted runs
// (package keyindex) in place of unique indexes of the entries table. A run's keys name
// candidate seqs; what the entry at a candidate seq holds decides.

// keptTx is a write transaction whose statements go through the store's kept ones.
type keptTx struct {
	s  *Store
	tx *sql.Tx
}

func (k keptTx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return k.s.execTx(ctx, k.tx, q, args...)
}

func (k keptTx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return k.s.queryTx(ctx, k.tx, q, args...)
}

// addKeys writes the keys of es, every link and every record id, as a run inside tx.
func (s *Store) addKeys(ctx context.Context, tx *sql.Tx, es []store.Entry) error {
	pairs := make([]keyindex.Pair, 0, 2*len(es))
	for i := range es {
		e := &es[i]
		pairs = append(pairs, keyindex.Pair{Key: keyindex.LinkKey(e.Chain, e.Link), Seq: e.Seq})
		if e.RecordID != "" {
			pairs = append(pairs, keyindex.Pair{Key: keyindex.IDKey(e.Chain, e.RecordID), Seq: e.Seq})
		}
	}
	if err := s.d.Keys.Add(ctx, keptTx{s, tx}, pairs); err != nil {
		return fmt.Errorf("%d entries from %q seq %d: %w", len(es), es[0].Chain, es[0].Seq, err)
	}
	return nil
}

// refuseTaken returns store.ErrConflict when an entry of b repeats a link or record id of
// the batch before it or of the stored chain, as a unique index would: Commit's check in a
// store with Dialect.Keys. (The journal's folds, CommitAll, come checked.)
func (s *Store) refuseTaken(ctx context.Context, tx *sql.Tx, b store.Batch) error {
	links := make(map[ledger.Link]bool, len(b.Entries))
	ids := make(map[string]bool, len(b.Entries))
	var lks []store.ChainLink
	var rids []store.ChainRecordID
	for _, e := range b.Entries {
		if links[e.Link] {
			return fmt.Errorf("chain %q: link %s twice in the batch: %w", e.Chain, e.Link, store.ErrConflict)
		}
		links[e.Link] = true
		lks = append(lks, store.ChainLink{Chain: e.Chain, Link: e.Link})
		if e.RecordID != "" {
			if ids[e.RecordID] {
				return fmt.Errorf("chain %q: record id %.80q twice in the batch: %w", e.Chain, e.RecordID, store.ErrConflict)
			}
			ids[e.RecordID] = true
			rids = append(rids, store.ChainRecordID{Chain: e.Chain, ID: e.RecordID})
		}
	}
	q := keptTx{s, tx}
	usedLinks, err := s.keyedLinks(ctx, q, lks)
	if err != nil {
		return err
	}
	for k, seq := range usedLinks {
		return fmt.Errorf("chain %q: link %s used at seq %d: %w", k.Chain, k.Link, seq, store.ErrConflict)
	}
	usedIDs, err := s.keyedRecordIDs(ctx, q, rids)
	if err != nil {
		return err
	}
	for k, seq := range usedIDs {
		return fmt.Errorf("chain %q: record id %.80q used at seq %d: %w", k.Chain, k.ID, seq, store.ErrConflict)
	}
	return nil
}

// keyedLinks is UsedLinks in a store with Dialect.Keys, reading through q.
func (s *Store) keyedLinks(ctx context.Context, q keyindex.Tx, keys []store.ChainLink) (map[store.ChainLink]uint64, error) {
	return keyed(ctx, s, q, `link`, keys, func(k store.ChainLink) (string, keyindex.Key, []byte) {
		return k.Chain, keyindex.LinkKey(k.Chain, k.Link), k.Link[:]
	})
}

// keyedRecordIDs is UsedRecordIDs in a store with Dialect.Keys, reading through q.
func (s *Store) keyedRecordIDs(ctx context.Context, q keyindex.Tx, keys []store.ChainRecordID) (map[store.ChainRecordID]uint64, error) {
	return keyed(ctx, s, q, `record_id`, keys, func(k store.ChainRecordID) (string, keyindex.Key, []byte) {
		return k.Chain, keyindex.IDKey(k.Chain, k.ID), []byte(k.ID)
	})
}

// keyed returns, of keys, those whose chain holds an entry whose column col is the key's
// value, each with that entry's seq: of gives a key's chain, index key and value. The
// index names candidate seqs; the entry at each decides.
func keyed[K comparable](ctx context.Context, s *Store, q keyindex.Tx, col string, keys []K, of func(K) (chain string, key keyindex.Key, value []byte)) (map[K]uint64, error) {
	out := map[K]uint64{}
	ks := make([]keyindex.Key, len(keys))
	for i, k := range keys {
		_, ks[i], _ = of(k)
	}
	found, err := keyindex.Lookup(ctx, q, ks)
	if err != nil {
		return nil, err
	}
	for i, k := range keys {
		chain, _, value := of(k)
		for _, seq := range found[ks[i]] {
			held, err := s.candidate(ctx, q, col, chain, seq)
			if err != nil {
				return nil, err
			}
			if held != nil && bytes.Equal(held, value) {
				out[k] = seq
			}
		}
	}
	return out, nil
}

// readKeyed is keyed in a read-only transaction of the reader database: one snapshot for
// the lookup's several statements (a merge committed between two of them could move a key
// from a run not yet read to one already read).
func readKeyed[K comparable](ctx context.Context, s *Store, keys []K, lookup func(context.Context, keyindex.Tx, []K) (map[K]uint64, error)) (map[K]uint64, error) {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("begin read: %w", err)
	}
	defer tx.Rollback()
	return lookup(ctx, tx, keys)
}

// candidate returns column col of chain's entry at seq: nil when the column is NULL or
// the table lacks the entry the index names.
func (s *Store) candidate(ctx context.Context, q keyindex.Tx, col, chain string, seq uint64) ([]byte, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+col+` FROM `+s.d.Tables.Entries+` WHERE chain=? AND seq=?`, chain, seq)
	if err != nil {
		return nil, fmt.Errorf("entry %q seq %d: %w", chain, seq, err)
	}
	defer rows.Close()
	var held []byte
	if rows.Next() {
		if err := rows.Scan(&held); err != nil {
			return nil, fmt.Errorf("entry %q seq %d: %w", chain, seq, err)
		}
	}
	return held, rows.Err()
}
