// Package keyindex is the embedded store's index of entries' links and record ids: 64-bit
// keys, each naming the seq of the entry it was made from, kept as sorted runs in two
// tables of the store's database instead of as B-tree indexes of the entries.
//
// A B-tree index takes every new key at a random place, so each transaction of many
// entries writes a page of it for nearly every entry. Here a transaction writes its
// entries' keys as one new run, sorted, in blocks of consecutive rows; when Fanout runs of
// one level exist, they are merged into one run of the next level in the same
// transaction, so every key is rewritten once a level, in order, and the number of runs
// grows with the logarithm of the entries. Runs are not merged past MaxRunPairs pairs.
//
// A key is the first 8 bytes of a SHA-256 of the chain and the link or record id (LinkKey,
// IDKey), so keys of different things may collide: a lookup returns candidate seqs, which
// the caller checks against the entries themselves. Everything is written inside the
// caller's transaction: a rolled-back transaction leaves no run and no merge behind.
package keyindex

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/evident-log/evident/ledger"
)

// Schema creates the index's two tables (SQLite): one row per run, and the runs' pairs in
// blocks, each block's row keyed by its run and its first key.
const Schema = `
CREATE TABLE key_runs (
	id INTEGER PRIMARY KEY,
	level INTEGER NOT NULL,
	pairs INTEGER NOT NULL
);
CREATE TABLE key_blocks (
	run INTEGER NOT NULL,
	first INTEGER NOT NULL,
	pairs BLOB NOT NULL
);
CREATE UNIQUE INDEX key_blocks_at ON key_blocks(run, first);
`

// ErrCorrupt is returned for a block that is not a sorted sequence of pairs.
var ErrCorrupt = errors.New("keyindex: corrupt block")

// Key is an index key: the first 8 bytes of a SHA-256 naming a chain's link or record id.
type Key uint64

// LinkKey returns the key of link l of chain.
func LinkKey(chain string, l ledger.Link) Key { return key('L', chain, l[:]) }

// IDKey returns the key of record id id of chain.
func IDKey(chain, id string) Key { return key('I', chain, []byte(id)) }

// key hashes kind, the chain's length and bytes, and v.
func key(kind byte, chain string, v []byte) Key {
	var buf [160]byte
	b := append(buf[:0], kind)
	b = binary.BigEndian.AppendUint32(b, uint32(len(chain)))
	b = append(append(b, chain...), v...)
	sum := sha256.Sum256(b)
	return Key(binary.BigEndian.Uint64(sum[:]))
}

// Pair is one key and the seq of the entry it names.
type Pair struct {
	Key Key
	Seq uint64
}

// comparePairs orders pairs by key, then seq.
func comparePairs(a, b Pair) int {
	switch {
	case a.Key < b.Key:
		return -1
	case a.Key > b.Key:
		return 1
	case a.Seq < b.Seq:
		return -1
	case a.Seq > b.Seq:
		return 1
	}
	return 0
}

// Tx is what the index needs of a transaction: *sql.Tx, or one whose statements are kept.
type Tx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Index says how runs are written and merged; the zero value is the default.
type Index struct {
	// Fanout is how many runs of one level are merged into one of the next (default 4;
	// below 2, the default: a fanout of 1 would move every new run through every level).
	Fanout int
	// MaxRunPairs bounds a merged run (default 4,194,304 pairs, 64 MiB): runs that would
	// merge into a larger one stay as they are, so that no transaction rewrites more.
	MaxRunPairs int
	// BlockPairs is the pairs of a block (default 224: a block's row fits a 4 KiB page).
	BlockPairs int
}

func (ix *Index) fanout() int      { return atLeast(ix.Fanout, 2, 4) }
func (ix *Index) maxRunPairs() int { return atLeast(ix.MaxRunPairs, 1, 4<<20) }
func (ix *Index) blockPairs() int  { return atLeast(ix.BlockPairs, 1, 224) }

// atLeast returns v when it is at least least, else def.
func atLeast(v, least, def int) int {
	if v >= least {
		return v
	}
	return def
}

// frozen is the level of runs no merge takes: those whose merge would pass MaxRunPairs.
const frozen = 1 << 30

// Add writes pairs (in any order; it sorts them) as a new run inside tx, then merges runs
// as Fanout and MaxRunPairs say.
func (ix *Index) Add(ctx context.Context, tx Tx, pairs []Pair) error {
	if len(pairs) == 0 {
		return nil
	}
	slices.SortFunc(pairs, comparePairs)
	w, err := ix.newRun(ctx, tx, 0)
	if err != nil {
		return err
	}
	for _, p := range pairs {
		if err := w.add(ctx, p); err != nil {
			return err
		}
	}
	if err := w.finish(ctx); err != nil {
		return err
	}
	return ix.merge(ctx, tx)
}

// run is a run's row.
type run struct {
	id, level int64
	pairs     int
}

// runs returns the runs, oldest first.
func runs(ctx context.Context, tx Tx) ([]run, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, level, pairs FROM key_runs ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("key runs: %w", err)
	}
	defer rows.Close()
	var out []run
	for rows.Next() {
		var r run
		if err := rows.Scan(&r.id, &r.level, &r.pairs); err != nil {
			return nil, fmt.Errorf("key runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("key runs: %w", err)
	}
	return out, nil
}

// merge merges, level by level from 0, the runs of any level holding Fanout of them into
// one run of the next level, or marks them frozen when together they pass MaxRunPairs.
func (ix *Index) merge(ctx context.Context, tx Tx) error {
	all, err := runs(ctx, tx)
	if err != nil {
		return err
	}
	for level := int64(0); ; level++ {
		var at []run
		deeper := false
		for _, r := range all {
			switch {
			case r.level == level:
				at = append(at, r)
			case r.level > level && r.level != frozen:
				deeper = true
			}
		}
		if len(at) < ix.fanout() {
			if !deeper {
				return nil
			}
			continue
		}
		total := 0
		for _, r := range at {
			total += r.pairs
		}
		next := level + 1
		if total > ix.maxRunPairs() {
			next = frozen
		}
		merged, err := ix.mergeRuns(ctx, tx, at, next)
		if err != nil {
			return err
		}
		all = slices.DeleteFunc(all, func(r run) bool { return r.level == level })
		all = append(all, merged...)
	}
}

// mergeRuns replaces rs by one run of level next holding all their pairs, or, when next is
// frozen, moves them to that level as they are. It returns the runs that replace them.
func (ix *Index) mergeRuns(ctx context.Context, tx Tx, rs []run, next int64) ([]run, error) {
	if next == frozen {
		for i := range rs {
			if _, err := tx.ExecContext(ctx, `UPDATE key_runs SET level=? WHERE id=?`, next, rs[i].id); err != nil {
				return nil, fmt.Errorf("key runs: freeze run %d: %w", rs[i].id, err)
			}
			rs[i].level = next
		}
		return rs, nil
	}
	readers := make([]*reader, len(rs))
	for i, r := range rs {
		readers[i] = &reader{tx: tx, run: r.id, more: true}
	}
	w, err := ix.newRun(ctx, tx, next)
	if err != nil {
		return nil, err
	}
	for {
		best := -1
		var bp Pair
		for i, rd := range readers {
			p, ok, err := rd.peek(ctx)
			if err != nil {
				return nil, err
			}
			if ok && (best < 0 || comparePairs(p, bp) < 0) {
				best, bp = i, p
			}
		}
		if best < 0 {
			break
		}
		readers[best].pos++
		if err := w.add(ctx, bp); err != nil {
			return nil, err
		}
	}
	if err := w.finish(ctx); err != nil {
		return nil, err
	}
	for _, r := range rs {
		if _, err := tx.ExecContext(ctx, `DELETE FROM key_blocks WHERE run=?`, r.id); err != nil {
			return nil, fmt.Errorf("key runs: drop run %d: %w", r.id, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM key_runs WHERE id=?`, r.id); err != nil {
			return nil, fmt.Errorf("key runs: drop run %d: %w", r.id, err)
		}
	}
	return []run{{id: w.id, level: next, pairs: w.n}}, nil
}

// readBlocks is how many blocks a merge reads of a run at a time.
const readBlocks = 32

// reader reads a run's pairs in order, readBlocks blocks at a time.
type reader struct {
	tx    Tx
	run   int64
	from  int64 // the stored first key of the last block read
	read  bool  // whether a block was read (from is set)
	more  bool  // whether the run may hold blocks past from
	pairs []Pair
	pos   int
}

// peek returns the reader's next pair, reading more blocks when it has none left.
func (r *reader) peek(ctx context.Context) (Pair, bool, error) {
	for r.pos == len(r.pairs) {
		if !r.more {
			return Pair{}, false, nil
		}
		r.pairs, r.pos = r.pairs[:0], 0
		// The first read takes the run's first block, whatever its first key: even the
		// least one a column first can hold (key 0).
		q, args := `SELECT first, pairs FROM key_blocks WHERE run=? ORDER BY first LIMIT ?`, []any{r.run, readBlocks}
		if r.read {
			q, args = `SELECT first, pairs FROM key_blocks WHERE run=? AND first>? ORDER BY first LIMIT ?`, []any{r.run, r.from, readBlocks}
		}
		rows, err := r.tx.QueryContext(ctx, q, args...)
		if err != nil {
			return Pair{}, false, fmt.Errorf("key runs: read run %d: %w", r.run, err)
		}
		n := 0
		for rows.Next() {
			var b []byte
			r.read = true
			if err := rows.Scan(&r.from, &b); err != nil {
				rows.Close()
				return Pair{}, false, fmt.Errorf("key runs: read run %d: %w", r.run, err)
			}
			if r.pairs, err = appendBlock(r.pairs, b); err != nil {
				rows.Close()
				return Pair{}, false, fmt.Errorf("key runs: run %d: %w", r.run, err)
			}
			n++
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return Pair{}, false, fmt.Errorf("key runs: read run %d: %w", r.run, err)
		}
		r.more = n == readBlocks
	}
	return r.pairs[r.pos], true, nil
}

// writer writes a new run's pairs, given in order, block by block.
type writer struct {
	ix    *Index
	tx    Tx
	id    int64
	block []byte
	last  Pair
	n     int
}

// newRun adds the row of a new run at level and returns its writer.
func (ix *Index) newRun(ctx context.Context, tx Tx, level int64) (*writer, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO key_runs (level, pairs) VALUES (?, 0)`, level)
	if err != nil {
		return nil, fmt.Errorf("key runs: new run: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return nil, fmt.Errorf("key runs: new run: %w", err)
	}
	return &writer{ix: ix, tx: tx, id: id, block: make([]byte, 0, pairBytes*ix.blockPairs())}, nil
}

// add appends p, which must not sort before the pair added last. A block ends once full,
// but never between two pairs of one key, so every key's pairs are in one block.
func (w *writer) add(ctx context.Context, p Pair) error {
	if w.n > 0 {
		if comparePairs(p, w.last) < 0 {
			return fmt.Errorf("key runs: run %d: pair %016x/%d after %016x/%d", w.id, p.Key, p.Seq, w.last.Key, w.last.Seq)
		}
		if len(w.block) >= pairBytes*w.ix.blockPairs() && p.Key != w.last.Key {
			if err := w.flush(ctx); err != nil {
				return err
			}
		}
	}
	w.block = binary.BigEndian.AppendUint64(w.block, uint64(p.Key))
	w.block = binary.BigEndian.AppendUint64(w.block, p.Seq)
	w.last = p
	w.n++
	return nil
}

// flush writes the block gathered.
func (w *writer) flush(ctx context.Context) error {
	if len(w.block) == 0 {
		return nil
	}
	first := stored(Key(binary.BigEndian.Uint64(w.block)))
	if _, err := w.tx.ExecContext(ctx, `INSERT INTO key_blocks (run, first, pairs) VALUES (?, ?, ?)`, w.id, first, w.block); err != nil {
		return fmt.Errorf("key runs: write run %d: %w", w.id, err)
	}
	w.block = w.block[:0]
	return nil
}

// finish writes the last block and the run's count of pairs.
func (w *writer) finish(ctx context.Context) error {
	if err := w.flush(ctx); err != nil {
		return err
	}
	if _, err := w.tx.ExecContext(ctx, `UPDATE key_runs SET pairs=? WHERE id=?`, w.n, w.id); err != nil {
		return fmt.Errorf("key runs: run %d: %w", w.id, err)
	}
	return nil
}

// pairBytes is the size of a pair in a block: the key and the seq, big-endian.
const pairBytes = 16

// stored is k as the column first holds it: a signed integer that sorts as k does.
func stored(k Key) int64 { return int64(uint64(k) ^ 1<<63) }

// appendBlock appends the pairs of block b to ps, refusing a block that is empty, not a
// whole number of pairs, or not in order.
func appendBlock(ps []Pair, b []byte) ([]Pair, error) {
	if len(b) == 0 || len(b)%pairBytes != 0 {
		return ps, fmt.Errorf("%w: %d bytes", ErrCorrupt, len(b))
	}
	start := len(ps)
	for i := 0; i < len(b); i += pairBytes {
		p := Pair{Key(binary.BigEndian.Uint64(b[i:])), binary.BigEndian.Uint64(b[i+8:])}
		if len(ps) > start && comparePairs(p, ps[len(ps)-1]) < 0 {
			return ps[:start], fmt.Errorf("%w: pair %d out of order", ErrCorrupt, i/pairBytes)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// Lookup returns, for each of keys found in the runs tx holds, the seqs it names. tx
// should be one transaction (a read-only one will do): a merge committed between two of
// its statements could otherwise move a key from a run not yet read to one already read.
func Lookup(ctx context.Context, tx Tx, keys []Key) (map[Key][]uint64, error) {
	out := map[Key][]uint64{}
	if len(keys) == 0 {
		return out, nil
	}
	keys = slices.Clone(keys)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	rs, err := runs(ctx, tx)
	if err != nil {
		return nil, err
	}
	var block []Pair
	for _, r := range rs {
		block = block[:0]
		for _, k := range keys {
			// The block read last holds k, if the run does, when k lies within it; else the
			// block with the greatest first key not past k does.
			if len(block) == 0 || k < block[0].Key || k > block[len(block)-1].Key {
				if block, err = blockOf(ctx, tx, r.id, k, block[:0]); err != nil {
					return nil, err
				}
			}
			i, _ := slices.BinarySearchFunc(block, k, func(p Pair, k Key) int {
				switch {
				case p.Key < k:
					return -1
				case p.Key > k:
					return 1
				}
				return 0
			})
			for ; i < len(block) && block[i].Key == k; i++ {
				out[k] = append(out[k], block[i].Seq)
			}
		}
	}
	return out, nil
}

// blockOf appends to ps the pairs of run's block that would hold k: the one with the
// greatest first key not past k (none when k sorts before the run).
func blockOf(ctx context.Context, tx Tx, run int64, k Key, ps []Pair) ([]Pair, error) {
	rows, err := tx.QueryContext(ctx, `SELECT pairs FROM key_blocks WHERE run=? AND first<=? ORDER BY first DESC LIMIT 1`, run, stored(k))
	if err != nil {
		return nil, fmt.Errorf("key runs: read run %d: %w", run, err)
	}
	defer rows.Close()
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, fmt.Errorf("key runs: read run %d: %w", run, err)
		}
		if ps, err = appendBlock(ps, b); err != nil {
			return nil, fmt.Errorf("key runs: run %d: %w", run, err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("key runs: read run %d: %w", run, err)
	}
	return ps, nil
}
