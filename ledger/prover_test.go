package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"iter"
	"testing"

	"github.com/transparency-dev/merkle/proof"
	"golang.org/x/mod/sumdb/tlog"
)

// testLink is a deterministic link for leaf i.
func testLink(i uint64) Link {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], i)
	return Link(sha256.Sum256(b[:]))
}

// testLinks yields the links of a chain of n entries and counts how many were read.
func testLinks(n uint64, read *uint64) iter.Seq2[Link, error] {
	return func(yield func(Link, error) bool) {
		for i := uint64(0); i < n; i++ {
			if read != nil {
				*read = i + 1
			}
			if !yield(testLink(i), nil) {
				return
			}
		}
	}
}

// treeRoot is the root of the first n test links, from Tree (a separate compact range).
func treeRoot(n uint64) [32]byte {
	t := NewTree()
	for i := uint64(0); i < n; i++ {
		t.Append(testLink(i))
	}
	return t.Root()
}

// proveAll plans every inclusion proof at size2 and every consistency proof into size2,
// runs the prover over a chain of size2+extra links and checks each result against the
// reference verifier of github.com/transparency-dev/merkle.
func proveAll(t *testing.T, size2, extra uint64) *Prover {
	t.Helper()
	p := NewProver()
	for i := uint64(0); i < size2; i++ {
		if err := p.PlanInclusion(i, size2); err != nil {
			t.Fatal(err)
		}
	}
	for s1 := uint64(0); s1 <= size2; s1++ {
		if err := p.PlanConsistency(s1, size2); err != nil {
			t.Fatal(err)
		}
	}
	var read uint64
	if err := p.Run(context.Background(), testLinks(size2+extra, &read)); err != nil {
		t.Fatalf("size %d: %v", size2, err)
	}
	if read != size2 {
		t.Fatalf("size %d: read %d links, want exactly %d", size2, read, size2)
	}
	root2, err := p.Root(size2)
	if err != nil {
		t.Fatal(err)
	}
	if want := treeRoot(size2); root2 != want {
		t.Fatalf("root at %d = %x, Tree says %x", size2, root2, want)
	}
	for i := uint64(0); i < size2; i++ {
		path, err := p.Inclusion(i, size2)
		if err != nil {
			t.Fatal(err)
		}
		l := testLink(i)
		if err := proof.VerifyInclusion(Hasher, i, size2, Hasher.HashLeaf(l[:]), path, root2[:]); err != nil {
			t.Errorf("inclusion of %d at %d: %v", i, size2, err)
		}
	}
	for s1 := uint64(0); s1 <= size2; s1++ {
		path, err := p.Consistency(s1, size2)
		if err != nil {
			t.Fatal(err)
		}
		if path == nil {
			t.Errorf("consistency %d-%d: nil proof, want a non-nil (possibly empty) one", s1, size2)
		}
		root1, err := p.Root(s1)
		if err != nil {
			t.Fatal(err)
		}
		if want := treeRoot(s1); root1 != want {
			t.Fatalf("root at %d = %x, Tree says %x", s1, root1, want)
		}
		if s1 == 0 {
			if len(path) != 0 {
				t.Errorf("consistency 0-%d: %d hashes, want none", size2, len(path))
			}
			continue
		}
		if err := proof.VerifyConsistency(Hasher, s1, size2, path, root1[:], root2[:]); err != nil {
			t.Errorf("consistency %d-%d: %v", s1, size2, err)
		}
	}
	return p
}

func TestProverMatchesMerkleVerifier(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []uint64
		extra uint64
	}{
		{"small", []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}, 0},
		{"around powers of two", []uint64{31, 32, 33, 63, 64, 65, 127, 128, 129}, 0},
		{"more links than needed", []uint64{1, 7, 8, 100}, 50},
		{"odd sizes", []uint64{97, 200, 255, 257}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range tc.sizes {
				proveAll(t, n, tc.extra)
			}
		})
	}
}

// tlogHashes is the stored-hash layout of golang.org/x/mod/sumdb/tlog over n test links.
type tlogHashes []tlog.Hash

func newTLogHashes(t *testing.T, n uint64) tlogHashes {
	t.Helper()
	var s tlogHashes
	for i := uint64(0); i < n; i++ {
		l := testLink(i)
		hs, err := tlog.StoredHashes(int64(i), l[:], s)
		if err != nil {
			t.Fatal(err)
		}
		s = append(s, hs...)
	}
	return s
}

func (s tlogHashes) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		out[i] = s[x]
	}
	return out, nil
}

func hashesEqual(a [][]byte, b []tlog.Hash) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i][:]) {
			return false
		}
	}
	return true
}

// TestProverMatchesSumdbTLog compares roots and proofs byte for byte with
// golang.org/x/mod/sumdb/tlog, an implementation that shares no code with the prover.
func TestProverMatchesSumdbTLog(t *testing.T) {
	const most = 70
	hs := newTLogHashes(t, most+5)
	for _, size := range []uint64{1, 2, 3, 5, 8, 13, 16, 21, 34, 55, 64, 65, 70} {
		p := proveAll(t, size, 0)
		th, err := tlog.TreeHash(int64(size), hs)
		if err != nil {
			t.Fatal(err)
		}
		if root, _ := p.Root(size); root != th {
			t.Errorf("root at %d: %x, tlog %x", size, root, th)
		}
		for i := uint64(0); i < size; i++ {
			want, err := tlog.ProveRecord(int64(size), int64(i), hs)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := p.Inclusion(i, size); !hashesEqual(got, want) {
				t.Errorf("inclusion of %d at %d: %x, tlog %x", i, size, got, want)
			}
		}
		for s1 := uint64(1); s1 <= size; s1++ {
			want, err := tlog.ProveTree(int64(size), int64(s1), hs)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := p.Consistency(s1, size); !hashesEqual(got, want) {
				t.Errorf("consistency %d-%d: %x, tlog %x", s1, size, got, want)
			}
		}
	}
}

// TestProverManySizesOnePass plans proofs at several sizes in one prover, as an export does
// for successive seals.
func TestProverManySizesOnePass(t *testing.T) {
	seals := []uint64{1, 5, 6, 64, 100, 101}
	p := NewProver()
	for i := 1; i < len(seals); i++ {
		if err := p.PlanConsistency(seals[i-1], seals[i]); err != nil {
			t.Fatal(err)
		}
		if err := p.PlanInclusion(seals[i]-1, seals[i]); err != nil {
			t.Fatal(err)
		}
	}
	if p.Need() != 101 {
		t.Fatalf("Need = %d, want 101", p.Need())
	}
	for i := uint64(0); i < 150; i++ { // push style; links past Need are ignored
		if err := p.Append(testLink(i)); err != nil {
			t.Fatal(err)
		}
	}
	if p.Size() != 101 {
		t.Fatalf("Size = %d, want 101", p.Size())
	}
	for i := 1; i < len(seals); i++ {
		a, b := seals[i-1], seals[i]
		ra, _ := p.Root(a)
		rb, _ := p.Root(b)
		c, err := p.Consistency(a, b)
		if err != nil {
			t.Fatal(err)
		}
		if err := proof.VerifyConsistency(Hasher, a, b, c, ra[:], rb[:]); err != nil {
			t.Errorf("consistency %d-%d: %v", a, b, err)
		}
		in, err := p.Inclusion(b-1, b)
		if err != nil {
			t.Fatal(err)
		}
		l := testLink(b - 1)
		if err := proof.VerifyInclusion(Hasher, b-1, b, Hasher.HashLeaf(l[:]), in, rb[:]); err != nil {
			t.Errorf("inclusion of %d at %d: %v", b-1, b, err)
		}
	}
}

func TestProverErrors(t *testing.T) {
	errIter := errors.New("store down")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name  string
		plan  func(p *Prover) error
		ctx   context.Context
		links iter.Seq2[Link, error]
		run   error // want from Run (errors.Is)
		read  func(p *Prover) error
		after error // want from read
	}{
		{name: "index beyond size", plan: func(p *Prover) error { return p.PlanInclusion(5, 5) }},
		{name: "empty tree inclusion", plan: func(p *Prover) error { return p.PlanInclusion(0, 0) }},
		{name: "sizes reversed", plan: func(p *Prover) error { return p.PlanConsistency(6, 5) }},
		{
			name:  "short chain",
			plan:  func(p *Prover) error { return p.PlanInclusion(3, 10) },
			links: testLinks(7, nil),
			run:   ErrShortChain,
			read:  func(p *Prover) error { _, err := p.Inclusion(3, 10); return err },
			after: ErrShortChain,
		},
		{
			name:  "root of a short chain",
			plan:  func(p *Prover) error { return p.PlanRoot(10) },
			links: testLinks(9, nil),
			run:   ErrShortChain,
			read:  func(p *Prover) error { _, err := p.Root(10); return err },
			after: ErrShortChain,
		},
		{
			name:  "not planned",
			plan:  func(p *Prover) error { return p.PlanInclusion(3, 10) },
			links: testLinks(10, nil),
			read:  func(p *Prover) error { _, err := p.Inclusion(4, 10); return err },
			after: ErrNotPlanned,
		},
		{
			name:  "consistency not planned",
			plan:  func(p *Prover) error { return p.PlanConsistency(3, 10) },
			links: testLinks(10, nil),
			read:  func(p *Prover) error { _, err := p.Consistency(2, 10); return err },
			after: ErrNotPlanned,
		},
		{
			name:  "plan after the first link",
			plan:  func(p *Prover) error { return p.PlanRoot(10) },
			links: testLinks(3, nil),
			run:   ErrShortChain,
			read:  func(p *Prover) error { return p.PlanRoot(2) },
			after: ErrPlanLate,
		},
		{
			name: "iterator error",
			plan: func(p *Prover) error { return p.PlanRoot(10) },
			links: func(yield func(Link, error) bool) {
				if yield(testLink(0), nil) {
					yield(Link{}, errIter)
				}
			},
			run: errIter,
		},
		{
			name:  "canceled",
			plan:  func(p *Prover) error { return p.PlanRoot(10) },
			ctx:   canceled,
			links: testLinks(10, nil),
			run:   context.Canceled,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewProver()
			err := tc.plan(p)
			if tc.links == nil {
				if err == nil {
					t.Fatal("plan accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			if err := p.Run(ctx, tc.links); !errors.Is(err, tc.run) || (tc.run == nil) != (err == nil) {
				t.Fatalf("Run: %v, want %v", err, tc.run)
			}
			if tc.read != nil {
				if err := tc.read(p); !errors.Is(err, tc.after) {
					t.Fatalf("got %v, want %v", err, tc.after)
				}
			}
		})
	}
}

// TestProverCanceledMidway: a long run notices its context ending between links.
func TestProverCanceledMidway(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := NewProver()
	if err := p.PlanRoot(1 << 20); err != nil {
		t.Fatal(err)
	}
	links := func(yield func(Link, error) bool) {
		for i := uint64(0); ; i++ {
			if i == 3*checkEvery/2 {
				cancel()
			}
			if !yield(testLink(i), nil) {
				return
			}
		}
	}
	if err := p.Run(ctx, links); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want context.Canceled", err)
	}
	if p.Size() != 2*checkEvery {
		t.Errorf("stopped after %d links, want %d", p.Size(), 2*checkEvery)
	}
}

func TestProverEmptyRoot(t *testing.T) {
	p := NewProver()
	if err := p.PlanRoot(0); err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background(), testLinks(0, nil)); err != nil {
		t.Fatal(err)
	}
	r, err := p.Root(0)
	if err != nil || r != NewTree().Root() {
		t.Fatalf("root at 0 = %x, %v; want %x", r, err, NewTree().Root())
	}
}

// TestProverCurrentRoot checks the root of the links taken so far against Tree's, at every
// size up to the planned one and for a chain that ends before it.
func TestProverCurrentRoot(t *testing.T) {
	p := NewProver()
	if err := p.PlanRoot(40); err != nil {
		t.Fatal(err)
	}
	if got := p.CurrentRoot(); got != treeRoot(0) {
		t.Fatalf("empty: %x, want %x", got, treeRoot(0))
	}
	for i := uint64(0); i < 40; i++ {
		if err := p.Append(testLink(i)); err != nil {
			t.Fatal(err)
		}
		if got := p.CurrentRoot(); got != treeRoot(i+1) {
			t.Fatalf("after %d links: %x, want %x", i+1, got, treeRoot(i+1))
		}
	}
	if r, err := p.Root(40); err != nil || r != p.CurrentRoot() {
		t.Fatalf("Root(40) = %x, %v; CurrentRoot %x", r, err, p.CurrentRoot())
	}
	// Past the planned size a Prover takes no more links, and its root stays put.
	if err := p.Append(testLink(40)); err != nil || p.CurrentRoot() != treeRoot(40) {
		t.Fatalf("a link past the plan changed the root: %v", err)
	}
	short := NewProver()
	if err := short.PlanRoot(40); err != nil {
		t.Fatal(err)
	}
	if err := short.Run(context.Background(), testLinks(23, nil)); !errors.Is(err, ErrShortChain) {
		t.Fatalf("Run over 23 links = %v, want ErrShortChain", err)
	}
	if got := short.CurrentRoot(); got != treeRoot(23) {
		t.Fatalf("short chain: %x, want %x", got, treeRoot(23))
	}
}

// FuzzProver checks one inclusion and one consistency proof at arbitrary sizes against the
// reference verifier.
func FuzzProver(f *testing.F) {
	f.Add(uint16(1), uint16(0), uint16(1))
	f.Add(uint16(7), uint16(3), uint16(4))
	f.Add(uint16(1000), uint16(999), uint16(512))
	f.Fuzz(func(t *testing.T, size2, index, size1 uint16) {
		if size2 == 0 {
			return
		}
		n := uint64(size2)
		i := uint64(index) % n
		s1 := uint64(size1)%n + 1
		p := NewProver()
		if err := p.PlanInclusion(i, n); err != nil {
			t.Fatal(err)
		}
		if err := p.PlanConsistency(s1, n); err != nil {
			t.Fatal(err)
		}
		if err := p.Run(context.Background(), testLinks(n, nil)); err != nil {
			t.Fatal(err)
		}
		r1, err1 := p.Root(s1)
		r2, err2 := p.Root(n)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		in, err := p.Inclusion(i, n)
		if err != nil {
			t.Fatal(err)
		}
		l := testLink(i)
		if err := proof.VerifyInclusion(Hasher, i, n, Hasher.HashLeaf(l[:]), in, r2[:]); err != nil {
			t.Fatalf("inclusion of %d at %d: %v", i, n, err)
		}
		c, err := p.Consistency(s1, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := proof.VerifyConsistency(Hasher, s1, n, c, r1[:], r2[:]); err != nil {
			t.Fatalf("consistency %d-%d: %v", s1, n, err)
		}
	})
}

// mth is RFC 9162 MTH over leaf hashes, computed recursively from the definition.
func mth(leaves [][]byte) []byte {
	switch len(leaves) {
	case 0:
		return Hasher.EmptyRoot()
	case 1:
		return leaves[0]
	}
	k := split(len(leaves))
	return Hasher.HashChildren(mth(leaves[:k]), mth(leaves[k:]))
}

// split is the largest power of two smaller than n (n > 1).
func split(n int) int {
	k := 1
	for k<<1 < n {
		k <<= 1
	}
	return k
}

// subproof is RFC 9162 section 2.1.4.1 SUBPROOF(m, D[n], b), from the definition.
func subproof(m int, leaves [][]byte, b bool) [][]byte {
	n := len(leaves)
	if m == n {
		if b {
			return [][]byte{}
		}
		return [][]byte{mth(leaves)}
	}
	k := split(n)
	if m <= k {
		return append(subproof(m, leaves[:k], b), mth(leaves[k:]))
	}
	return append(subproof(m-k, leaves[k:], false), mth(leaves[:k]))
}

// path is RFC 9162 section 2.1.3.1 PATH(m, D[n]), from the definition.
func path(m int, leaves [][]byte) [][]byte {
	n := len(leaves)
	if n == 1 {
		return [][]byte{}
	}
	k := split(n)
	if m < k {
		return append(path(m, leaves[:k]), mth(leaves[k:]))
	}
	return append(path(m-k, leaves[k:]), mth(leaves[:k]))
}

// TestProverMatchesRFC9162Definitions compares every proof byte for byte with the
// recursive definitions of RFC 9162, which the chain consistency receipts were first cut from.
func TestProverMatchesRFC9162Definitions(t *testing.T) {
	var leaves [][]byte
	for i := uint64(0); i < 40; i++ {
		l := testLink(i)
		leaves = append(leaves, Hasher.HashLeaf(l[:]))
	}
	for size := uint64(1); size <= 40; size++ {
		p := proveAll(t, size, 0)
		if r, _ := p.Root(size); !bytes.Equal(r[:], mth(leaves[:size])) {
			t.Errorf("root at %d: %x, MTH %x", size, r, mth(leaves[:size]))
		}
		for i := uint64(0); i < size; i++ {
			got, _ := p.Inclusion(i, size)
			if want := path(int(i), leaves[:size]); !slicesEqual(got, want) {
				t.Errorf("inclusion of %d at %d: %x, PATH %x", i, size, got, want)
			}
		}
		for s1 := uint64(1); s1 <= size; s1++ {
			got, _ := p.Consistency(s1, size)
			if want := subproof(int(s1), leaves[:size], true); !slicesEqual(got, want) {
				t.Errorf("consistency %d-%d: %x, SUBPROOF %x", s1, size, got, want)
			}
		}
	}
}

func slicesEqual(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// BenchmarkConsistency compares the streaming prover with the recursive RFC 9162 definition
// (which holds every leaf hash in memory) on one consistency proof over 65536 links.
func BenchmarkConsistency(b *testing.B) {
	const n = 1 << 16
	links := make([]Link, n)
	for i := range links {
		links[i] = testLink(uint64(i))
	}
	b.Run("prover", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p := NewProver()
			if err := p.PlanConsistency(n/3, n); err != nil {
				b.Fatal(err)
			}
			for _, l := range links {
				if err := p.Append(l); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := p.Consistency(n/3, n); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("recursive", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			leaves := make([][]byte, 0, n)
			for _, l := range links {
				leaves = append(leaves, Hasher.HashLeaf(l[:]))
			}
			mth(leaves)
			subproof(n/3, leaves, true)
		}
	})
}
