package keyindex

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/evident-log/evident/ledger"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// openDB returns a new SQLite database holding the index's tables.
func openDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "keys.db"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(Schema); err != nil {
		t.Fatal(err)
	}
	return db
}

// inTx runs fn in a transaction of db and commits it.
func inTx(t testing.TB, db *sql.DB, fn func(*sql.Tx) error) {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// lookup looks keys up in one transaction of db.
func lookup(t testing.TB, db *sql.DB, keys []Key) map[Key][]uint64 {
	t.Helper()
	var out map[Key][]uint64
	inTx(t, db, func(tx *sql.Tx) (err error) {
		out, err = Lookup(context.Background(), tx, keys)
		return err
	})
	return out
}

// TestKeys: keys are SHA-256 of what they name, as an independent implementation
// (Python's hashlib) computes them: they are stored, so they must never change. The chain's
// length keeps ("ab", "c") apart from ("a", "bc"), and a link's key from an id's.
func TestKeys(t *testing.T) {
	var l ledger.Link
	for i := range l {
		l[i] = byte(i)
	}
	for _, tc := range []struct {
		got  Key
		want Key
	}{
		{LinkKey("wsp_1", l), 0xe1bc45986628276c},
		{IDKey("wsp_1", "id-1"), 0xa44d92eab5897593},
		{IDKey("", ""), 0x7244e162a74aac7f},
		{IDKey("ab", "c"), 0xd2bc5574ac32a88c},
		{IDKey("a", "bc"), 0x099812c11a9842c6},
	} {
		if tc.got != tc.want {
			t.Errorf("key %016x, want %016x", tc.got, tc.want)
		}
	}
	if LinkKey("c", l) == IDKey("c", string(l[:])) {
		t.Error("a link's key equals the key of the same bytes as a record id")
	}
	long := string(make([]byte, 1000)) // past the stack buffer
	if IDKey(long, long) == IDKey(long, long[1:]) {
		t.Error("long ids collide")
	}
}

// TestAddLookup adds pairs over many transactions, with parameters small enough that runs
// are merged and frozen and keys share blocks, and checks after each that every key
// added, and no other, is found with exactly its seqs, and that the runs are as Fanout and
// MaxRunPairs say.
func TestAddLookup(t *testing.T) {
	ctx := context.Background()
	for _, ix := range []*Index{
		{Fanout: 2, BlockPairs: 1, MaxRunPairs: 40},
		{Fanout: 3, BlockPairs: 4, MaxRunPairs: 200},
		{Fanout: 1, BlockPairs: 2, MaxRunPairs: 100}, // a fanout below 2 is the default's
		{}, // the defaults
	} {
		db := openDB(t)
		rng := rand.New(rand.NewPCG(1, uint64(ix.Fanout)))
		want := map[Key][]uint64{}
		// Keys at the edges of the signed order the blocks are stored in, and repeated
		// keys, besides random ones.
		edges := []Key{0, 1, math.MaxInt64, math.MaxInt64 + 1, math.MaxUint64 - 1, math.MaxUint64}
		seq := uint64(0)
		for round := range 60 {
			var pairs []Pair
			for range 1 + rng.IntN(12) {
				k := Key(rng.Uint64())
				switch rng.IntN(6) {
				case 0:
					k = edges[rng.IntN(len(edges))]
				case 1:
					k = Key(rng.IntN(8)) // often the same few keys
				}
				pairs = append(pairs, Pair{k, seq})
				want[k] = append(want[k], seq)
				seq++
			}
			inTx(t, db, func(tx *sql.Tx) error { return ix.Add(ctx, tx, pairs) })

			keys := []Key{}
			for k := range want {
				keys = append(keys, k)
			}
			absent := []Key{2, math.MaxInt64 - 1, Key(rng.Uint64())}
			for _, k := range absent {
				if _, ok := want[k]; !ok {
					keys = append(keys, k)
				}
			}
			got := lookup(t, db, keys)
			for _, v := range got {
				slices.Sort(v)
			}
			if len(got) != len(want) {
				t.Fatalf("%+v round %d: %d keys found, want %d", ix, round, len(got), len(want))
			}
			for k, w := range want {
				if !slices.Equal(got[k], w) {
					t.Fatalf("%+v round %d: key %016x: seqs %v, want %v", ix, round, k, got[k], w)
				}
			}
			checkRuns(t, db, ix, int(seq))
		}
	}
}

// checkRuns fails the test unless the runs hold n pairs in all, no level short of frozen
// holds Fanout runs, every run's count is its pairs, and no run but a frozen one passes
// MaxRunPairs.
func checkRuns(t *testing.T, db *sql.DB, ix *Index, n int) {
	t.Helper()
	var rs []run
	inTx(t, db, func(tx *sql.Tx) (err error) {
		rs, err = runs(context.Background(), tx)
		return err
	})
	total := 0
	per := map[int64]int{}
	for _, r := range rs {
		total += r.pairs
		per[r.level]++
		var blocks, bytes int
		if err := db.QueryRow(`SELECT count(*), coalesce(sum(length(pairs)), 0) FROM key_blocks WHERE run=?`, r.id).Scan(&blocks, &bytes); err != nil {
			t.Fatal(err)
		}
		if bytes != pairBytes*r.pairs || blocks == 0 {
			t.Fatalf("run %d counts %d pairs, its %d blocks hold %d bytes", r.id, r.pairs, blocks, bytes)
		}
		if r.level != frozen && r.level > 0 && r.pairs > ix.maxRunPairs() {
			t.Fatalf("run %d of level %d holds %d pairs, past %d", r.id, r.level, r.pairs, ix.maxRunPairs())
		}
	}
	if total != n {
		t.Fatalf("the runs hold %d pairs, want %d", total, n)
	}
	for level, c := range per {
		if level != frozen && c >= ix.fanout() {
			t.Fatalf("level %d holds %d runs, Fanout is %d", level, c, ix.fanout())
		}
	}
	var orphans int
	if err := db.QueryRow(`SELECT count(*) FROM key_blocks WHERE run NOT IN (SELECT id FROM key_runs)`).Scan(&orphans); err != nil || orphans != 0 {
		t.Fatalf("%d blocks of no run (%v)", orphans, err)
	}
}

// TestOneKeyManyPairs: more pairs of one key than a block holds stay in one block (so a
// lookup reads one block a run and finds them all), in a new run and in a merged one.
func TestOneKeyManyPairs(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	ix := &Index{Fanout: 2, BlockPairs: 3}
	var want []uint64
	for range 2 {
		var pairs []Pair
		for range 10 {
			pairs = append(pairs, Pair{5, uint64(len(want))})
			want = append(want, uint64(len(want)))
		}
		pairs = append(pairs, Pair{4, 100}, Pair{6, 101}, Pair{7, 102})
		inTx(t, db, func(tx *sql.Tx) error { return ix.Add(ctx, tx, pairs) })
	}
	got := lookup(t, db, []Key{5})[5]
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("seqs %v, want %v", got, want)
	}
	var runs, biggest int
	if err := db.QueryRow(`SELECT count(DISTINCT run), max(length(pairs)) FROM key_blocks`).Scan(&runs, &biggest); err != nil {
		t.Fatal(err)
	}
	// The merged run's first block is full after 4, 4, 5 but goes on to the last 5.
	if runs != 1 || biggest != 22*pairBytes {
		t.Fatalf("%d runs, largest block %d bytes; want the merged run, its first block 4, 4 and key 5's 20 pairs", runs, biggest)
	}
}

// TestRolledBack: a transaction that adds pairs and merges runs, then rolls back, leaves
// the index as it was.
func TestRolledBack(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	ix := &Index{Fanout: 2}
	inTx(t, db, func(tx *sql.Tx) error { return ix.Add(ctx, tx, []Pair{{1, 1}}) })
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Add(ctx, tx, []Pair{{2, 2}}); err != nil { // merges with the first run
		t.Fatal(err)
	}
	tx.Rollback()
	if got := lookup(t, db, []Key{1, 2}); len(got) != 1 || !slices.Equal(got[1], []uint64{1}) {
		t.Fatalf("after the rollback: %v", got)
	}
	checkRuns(t, db, ix, 1)
}

// TestCorruptBlock: a block that is not a sorted whole number of pairs is ErrCorrupt, on
// lookup and on merge.
func TestCorruptBlock(t *testing.T) {
	ctx := context.Background()
	for name, damage := range map[string]string{
		"cut":      `UPDATE key_blocks SET pairs = substr(pairs, 1, 20)`,
		"empty":    `UPDATE key_blocks SET pairs = x''`,
		"reversed": `UPDATE key_blocks SET pairs = substr(pairs, 17, 16) || substr(pairs, 1, 16)`,
	} {
		t.Run(name, func(t *testing.T) {
			db := openDB(t)
			ix := &Index{Fanout: 2}
			inTx(t, db, func(tx *sql.Tx) error { return ix.Add(ctx, tx, []Pair{{1, 1}, {2, 2}}) })
			if _, err := db.Exec(damage); err != nil {
				t.Fatal(err)
			}
			tx, err := db.Begin()
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			if _, err := Lookup(ctx, tx, []Key{1}); !errors.Is(err, ErrCorrupt) {
				t.Errorf("lookup: %v, want ErrCorrupt", err)
			}
			if err := ix.Add(ctx, tx, []Pair{{3, 3}}); !errors.Is(err, ErrCorrupt) {
				t.Errorf("merge: %v, want ErrCorrupt", err)
			}
		})
	}
}

// FuzzAppendBlock: whatever a block's bytes, appendBlock refuses them or returns pairs in
// order that encode back to exactly those bytes.
func FuzzAppendBlock(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 16))
	f.Add(make([]byte, 17))
	f.Add(append(make([]byte, 15), 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := appendBlock([]Pair{{9, 9}}, b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || len(ps) != 1 {
				t.Fatalf("refused with %v, %d pairs left", err, len(ps))
			}
			return
		}
		var enc []byte
		for i, p := range ps[1:] {
			if i > 0 && comparePairs(ps[i], p) > 0 {
				t.Fatalf("pairs out of order: %v", ps)
			}
			enc = append(enc, byte(p.Key>>56), byte(p.Key>>48), byte(p.Key>>40), byte(p.Key>>32), byte(p.Key>>24), byte(p.Key>>16), byte(p.Key>>8), byte(p.Key))
			enc = append(enc, byte(p.Seq>>56), byte(p.Seq>>48), byte(p.Seq>>40), byte(p.Seq>>32), byte(p.Seq>>24), byte(p.Seq>>16), byte(p.Seq>>8), byte(p.Seq))
		}
		if string(enc) != string(b) {
			t.Fatalf("%x decoded and encoded again is %x", b, enc)
		}
	})
}

// BenchmarkLargestMerge is the largest merge the defaults make: four runs of 1,048,576
// random pairs each into one run of 4,194,304 (MaxRunPairs), timed as the Add of the fourth
// run, whose transaction writes it and then merges all four.
func BenchmarkLargestMerge(b *testing.B) {
	ctx := context.Background()
	const per = 1 << 20
	rng := rand.New(rand.NewPCG(1, 2))
	pairsOf := func(from uint64) []Pair {
		ps := make([]Pair, per)
		for i := range ps {
			ps[i] = Pair{Key(rng.Uint64()), from + uint64(i)}
		}
		return ps
	}
	ix := &Index{}
	for b.Loop() {
		b.StopTimer()
		db := openDB(b)
		for r := range 3 {
			inTx(b, db, func(tx *sql.Tx) error { return ix.Add(ctx, tx, pairsOf(uint64(r*per))) })
		}
		last := pairsOf(3 * per)
		b.StartTimer()
		inTx(b, db, func(tx *sql.Tx) error { return ix.Add(ctx, tx, last) })
		b.StopTimer()
		var n, level int
		if err := db.QueryRow(`SELECT count(*), max(level) FROM key_runs`).Scan(&n, &level); err != nil || n != 1 || level != 1 {
			b.Fatalf("after the merge: %d runs, level %d (%v); want one run of level 1", n, level, err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/(4*per), "µs/pair")
}
