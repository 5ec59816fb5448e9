package misbehaviour_test

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/misbehaviour"
	"github.com/evident-log/evident/tlogpolicy"
)

// forkedLog returns a log with two histories of 12 leaves: "a", and "b" that shares only
// the first 3 leaves of "a". Every checkpoint of "b" from size 4 on contradicts "a".
func forkedLog(t testing.TB) *testLog {
	t.Helper()
	l := newLog(t, "log.example/misbehaviour")
	l.grow("a", 12, "", 0)
	l.grow("b", 12, "a", 3)
	return l
}

func mustNew(t testing.TB, a, b []byte, proof [][]byte) *misbehaviour.Proof {
	t.Helper()
	p, err := misbehaviour.New(a, b, proof, "test", time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// flipIn changes one byte of s: the first byte of the first occurrence of sub.
func flipIn(t testing.TB, s, sub string) string {
	t.Helper()
	i := strings.Index(s, sub)
	if i < 0 {
		t.Fatalf("%q not in %q", sub, s)
	}
	b := []byte(s)
	b[i] ^= 0x01
	return string(b)
}

// TestCheck runs Check against real signatures (Ed25519 and ML-DSA-44) over real Merkle
// trees: only two checkpoints of the pinned key that cannot both be true are proof.
func TestCheck(t *testing.T) {
	l := forkedLog(t)
	other := newLog(t, l.origin) // same origin, another key: an impostor
	other.grow("b", 12, "", 0)
	stranger := newLog(t, "log.example/other")
	a7, b7, a4, a12, b12 := l.checkpoint(t, "a", 7), l.checkpoint(t, "b", 7), l.checkpoint(t, "a", 4), l.checkpoint(t, "a", 12), l.checkpoint(t, "b", 12)
	ed, pq := []string{l.ed}, []string{l.pq}

	fork7 := func() *misbehaviour.Proof { return mustNew(t, a7, b12, l.proof(t, "b", 7, 12)) }
	sameSize := func() *misbehaviour.Proof { return mustNew(t, a7, b7, nil) }
	type side struct {
		size uint64
		root []byte
	}
	for _, tc := range []struct {
		name   string
		proof  func() *misbehaviour.Proof
		keys   []string
		proven bool
		reason string
		sides  []side // when proven
		signer string // the pinned key named as signer, when proven
	}{
		{name: "same size, other root", proof: sameSize, keys: ed, proven: true, reason: "two checkpoints of tree size 7 with different roots",
			sides: []side{{7, l.root("a", 7)}, {7, l.root("b", 7)}}, signer: l.ed},
		{name: "same size, same root", proof: func() *misbehaviour.Proof { return mustNew(t, a7, l.checkpoint(t, "a", 7), nil) }, keys: ed, reason: "same root: they agree"},
		{name: "fork: proof from the other history, size 7", proof: fork7, keys: ed, proven: true, reason: "implies another root for tree 7",
			sides: []side{{7, l.root("a", 7)}, {12, l.root("b", 12)}}, signer: l.ed},
		{name: "fork: proof from the other history, size 4 (a power of two)", proof: func() *misbehaviour.Proof {
			return mustNew(t, a4, b12, l.proof(t, "b", 4, 12))
		}, keys: ed, reason: "tree 4 is a power of two"},
		{name: "the empty tree and a larger one", proof: func() *misbehaviour.Proof {
			return mustNew(t, l.checkpoint(t, "a", 0), b12, randomHashes(3))
		}, keys: ed, reason: "the empty tree, which every tree extends"},
		{name: "genuine extension", proof: func() *misbehaviour.Proof { return mustNew(t, a7, a12, l.proof(t, "a", 7, 12)) }, keys: ed, reason: "tree 12 extends tree 7"},
		{name: "genuine extension from a power of two", proof: func() *misbehaviour.Proof { return mustNew(t, a4, a12, l.proof(t, "a", 4, 12)) }, keys: ed, reason: "tree 12 extends tree 4"},
		{name: "garbage proof", proof: func() *misbehaviour.Proof {
			return mustNew(t, a7, b12, randomHashes(len(l.proof(t, "b", 7, 12))))
		}, keys: ed, reason: "does not lead to the log-signed root of tree 12"},
		{name: "no proof hashes", proof: func() *misbehaviour.Proof { return mustNew(t, a7, b12, nil) }, keys: ed, reason: "does not lead"},
		{name: "one checkpoint signed by another key", proof: func() *misbehaviour.Proof {
			return mustNew(t, a7, other.checkpoint(t, "b", 12), other.proof(t, "b", 7, 12))
		}, keys: ed, reason: "checkpoint 2 is not signed by the pinned log key"},
		{name: "one byte of a root changed", proof: func() *misbehaviour.Proof {
			p := sameSize()
			p.Checkpoints[1] = flipIn(t, p.Checkpoints[1], "\n7\n")
			return p
		}, keys: ed, reason: "checkpoint 2 is not signed"},
		{name: "one byte of a signature changed", proof: func() *misbehaviour.Proof {
			p := fork7()
			p.Checkpoints[0] = flipIn(t, p.Checkpoints[0], "\n\n— ")
			return p
		}, keys: ed, reason: "checkpoint 1 is not signed"},
		{name: "kind same size for two sizes", proof: func() *misbehaviour.Proof {
			p := fork7()
			p.Kind = misbehaviour.KindSameSize
			return p
		}, keys: ed, reason: "the file says same_size_other_root, but the checkpoints are of tree sizes 7 and 12"},
		{name: "kind consistency for one size", proof: func() *misbehaviour.Proof {
			p := sameSize()
			p.Kind = misbehaviour.KindInconsistent
			return p
		}, keys: ed, reason: "both checkpoints are of tree size 7"},
		{name: "ML-DSA-44 key pinned alone", proof: fork7, keys: pq, proven: true, reason: "implies another root",
			sides: []side{{7, l.root("a", 7)}, {12, l.root("b", 12)}}, signer: l.pq},
		{name: "both keys pinned", proof: sameSize, keys: []string{l.ed, l.pq}, proven: true, reason: "different roots",
			sides: []side{{7, l.root("a", 7)}, {7, l.root("b", 7)}}},
		{name: "checkpoints in the other order", proof: func() *misbehaviour.Proof {
			p := fork7()
			p.Checkpoints[0], p.Checkpoints[1] = p.Checkpoints[1], p.Checkpoints[0]
			return p
		}, keys: ed, proven: true, reason: "implies another root for tree 7", sides: []side{{7, l.root("a", 7)}, {12, l.root("b", 12)}}},
		{name: "origin of the file differs from the checkpoints'", proof: func() *misbehaviour.Proof {
			p := fork7()
			p.Origin = "log.example/elsewhere"
			return p
		}, keys: ed, reason: `checkpoint 1 is of origin "log.example/misbehaviour", not "log.example/elsewhere"`},
		{name: "another log's key pinned", proof: fork7, keys: []string{stranger.ed, stranger.pq}, reason: "not signed by the pinned log key"},
		{name: "the impostor's key pinned", proof: fork7, keys: []string{other.ed}, reason: "not signed by the pinned log key"},
		{name: "no key pinned", proof: fork7, reason: "no log key"},
		{name: "a malformed key", proof: fork7, keys: []string{"log.example+00000000+AAAA"}, reason: "log key"},
		{name: "an unknown format version", proof: func() *misbehaviour.Proof {
			p := fork7()
			p.Format = "evident-misbehaviour/v2"
			return p
		}, keys: ed, reason: "not a well-formed proof"},
		{name: "a proof hash of the wrong length", proof: func() *misbehaviour.Proof {
			p := fork7()
			p.ConsistencyProof[0] = "AAAA"
			return p
		}, keys: ed, reason: "not a well-formed proof"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := misbehaviour.Check(tc.proof(), misbehaviour.Keys{LogKeys: tc.keys})
			if res.Proven != tc.proven || !strings.Contains(res.Reason, tc.reason) {
				t.Fatalf("Check: proven %v, reason %q; want proven %v, reason with %q", res.Proven, res.Reason, tc.proven, tc.reason)
			}
			if !tc.proven {
				return
			}
			if res.Origin != l.origin || len(res.Sides) != len(tc.sides) {
				t.Fatalf("origin %q, sides %+v", res.Origin, res.Sides)
			}
			for i, s := range tc.sides {
				if res.Sides[i].Size != s.size || !bytes.Equal(res.Sides[i].Root, s.root) {
					t.Errorf("side %d: size %d root %x, want %d %x", i, res.Sides[i].Size, res.Sides[i].Root, s.size, s.root)
				}
				if tc.signer != "" && !strings.HasPrefix(tc.signer, res.Sides[i].Signer+"+") {
					t.Errorf("side %d: signer %q is not the pinned key %q", i, res.Sides[i].Signer, tc.signer)
				}
			}
		})
	}
}

// TestCheckCosignersAndReferences checks that Check names the witnesses of the policy whose
// cosignatures verify on each checkpoint, and counts only references the log key signed.
func TestCheckCosignersAndReferences(t *testing.T) {
	l := forkedLog(t)
	w1, v1 := newWitness(t, "w1.example")
	w2, v2 := newWitness(t, "w2.example")
	pol, err := tlogpolicy.Parse([]byte(fmt.Sprintf("witness w1 %s\nwitness w2 %s\ngroup g 1 w1 w2\nquorum g\n", v1, v2)))
	if err != nil {
		t.Fatal(err)
	}
	p := mustNew(t, l.checkpoint(t, "a", 7, w1, w2), l.checkpoint(t, "b", 12, w2), l.proof(t, "b", 7, 12))
	impostor := newLog(t, l.origin)
	impostor.grow("a", 12, "", 0)
	p.AddReference(l.checkpoint(t, "a", 12, w1))
	p.AddReference(impostor.checkpoint(t, "a", 12))
	p.AddReference([]byte(p.Checkpoints[0])) // a checkpoint of the proof is no reference

	res := misbehaviour.Check(p, misbehaviour.Keys{LogKeys: []string{l.ed}, Witnesses: pol})
	if !res.Proven {
		t.Fatalf("not proven: %s", res.Reason)
	}
	if got := res.Sides[0].Cosigners; !slices.Equal(got, []string{"w1", "w2"}) {
		t.Errorf("cosigners of the tree-7 checkpoint: %q", got)
	}
	if got := res.Sides[1].Cosigners; !slices.Equal(got, []string{"w2"}) {
		t.Errorf("cosigners of the tree-12 checkpoint: %q", got)
	}
	if len(p.References) != 2 || res.References != 1 {
		t.Errorf("%d references kept, %d verified; want 2 kept, 1 verified", len(p.References), res.References)
	}
	if res := misbehaviour.Check(p, misbehaviour.Keys{LogKeys: []string{l.ed}}); res.Sides[0].Cosigners != nil {
		t.Errorf("cosigners without a policy: %q", res.Sides[0].Cosigners)
	}
}

// TestConsistencyVerdicts runs Consistency over every pair of sizes up to 20 of two real
// trees that share their first leaf only: real proofs are Consistent; a proof of one
// history against the other's smaller root (from size 2 on, where they differ) is
// Inconsistent, except from a power of two,
// where the old root is not part of the proof and the verdict can only be Undetermined.
func TestConsistencyVerdicts(t *testing.T) {
	l := newEd25519Log(t, "log.example/verdicts", rand.Reader)
	l.grow("a", 20, "", 0)
	l.grow("b", 20, "a", 1)
	for m := uint64(1); m < 20; m++ {
		for n := m + 1; n <= 20; n++ {
			pb := l.proof(t, "b", m, n)
			if v := misbehaviour.Consistency(m, n, pb, l.root("b", m), l.root("b", n)); v != misbehaviour.Consistent {
				t.Fatalf("%d→%d: a real proof is %v", m, n, v)
			}
			want := misbehaviour.Inconsistent
			if m&(m-1) == 0 {
				want = misbehaviour.Undetermined
			}
			if m == 1 {
				want = misbehaviour.Consistent // the one shared leaf: both histories agree at size 1
			}
			if v := misbehaviour.Consistency(m, n, pb, l.root("a", m), l.root("b", n)); v != want {
				t.Fatalf("%d→%d: b's proof against a's root is %v, want %v", m, n, v, want)
			}
			if v := misbehaviour.Consistency(m, n, pb, l.root("b", m), l.root("a", n)); v != misbehaviour.Undetermined {
				t.Fatalf("%d→%d: b's proof to a's larger root is %v", m, n, v)
			}
			if v := misbehaviour.Consistency(m, n, randomHashes(len(pb)), l.root("a", m), l.root("b", n)); v != misbehaviour.Undetermined {
				t.Fatalf("%d→%d: random hashes are %v", m, n, v)
			}
		}
	}
	for _, tc := range []struct{ m, n uint64 }{{0, 5}, {5, 5}, {6, 5}} {
		if v := misbehaviour.Consistency(tc.m, tc.n, randomHashes(3), l.root("a", 5), l.root("a", 5)); v != misbehaviour.Undetermined {
			t.Errorf("sizes %d→%d: %v", tc.m, tc.n, v)
		}
	}
}

// TestCheckIgnoresLinesThatDoNotVerify checks that a checkpoint a pinned key signed stays
// signed whatever other signature lines it carries: a line under the name and key hash of a
// pinned key that does not verify (anyone can append one, the log included, to make its own
// fork unprovable once both its keys are pinned) is ignored, before or after the good line.
func TestCheckIgnoresLinesThatDoNotVerify(t *testing.T) {
	good := mustRead(t, "testdata/consistency_proof_failed.golden")
	ed := goldenLog(t).ed
	_, pq, err := log.GenerateMLDSAKey("log.example/golden") // the log's post-quantum key, pinned too
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		line  string // the junk line
		first bool   // before the log's signature line
		keys  []string
	}{
		{"an ML-DSA-44 line, both keys pinned", junkLine(t, pq), false, []string{ed, pq}},
		{"an ML-DSA-44 line first, both keys pinned", junkLine(t, pq), true, []string{ed, pq}},
		{"an ML-DSA-44 line, the ML-DSA-44 key pinned first", junkLine(t, pq), false, []string{pq, ed}},
		{"an Ed25519 line before the good one", junkLine(t, ed), true, []string{ed}},
		{"an Ed25519 line after the good one", junkLine(t, ed), false, []string{ed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := misbehaviour.Parse(good)
			if err != nil {
				t.Fatal(err)
			}
			for i := range p.Checkpoints {
				p.Checkpoints[i] = withLine(p.Checkpoints[i], tc.line, tc.first)
			}
			res := misbehaviour.Check(p, misbehaviour.Keys{LogKeys: tc.keys})
			if !res.Proven {
				t.Fatalf("not proven: %s", res.Reason)
			}
			for i, s := range res.Sides {
				if !strings.HasPrefix(ed, s.Signer+"+") {
					t.Errorf("side %d: signer %q, want the Ed25519 key %q", i, s.Signer, ed)
				}
			}
		})
	}
}

// TestVerifiersAmbiguousKeys checks that one key given twice is one verifier, and that two
// different keys of one name and key hash are refused: a signature line could be either's.
func TestVerifiersAmbiguousKeys(t *testing.T) {
	a, b := collidingKeys(t, "log.example/golden")
	if vs, err := misbehaviour.Verifiers([]string{a, " " + a + "\n"}); err != nil || len(vs) != 1 {
		t.Fatalf("one key twice: %d verifiers, %v; want 1", len(vs), err)
	}
	if _, err := misbehaviour.Verifiers([]string{a, b}); err == nil || !strings.Contains(err.Error(), "one name and key hash") {
		t.Fatalf("two keys of one name and hash: %v, want an error saying so", err)
	}
	p, err := misbehaviour.Parse(mustRead(t, "testdata/same_size_other_root.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if res := misbehaviour.Check(p, misbehaviour.Keys{LogKeys: []string{goldenLog(t).ed, a, b}}); res.Proven || !strings.Contains(res.Reason, "one name and key hash") {
		t.Fatalf("Check with ambiguous keys: proven %v, %s", res.Proven, res.Reason)
	}
}

func mustRead(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSigned checks that Signed drops exactly the lines that name a given key and do not
// verify, keeps every other line (a witness's cosignature among them) in its place, names
// the key that verified, and fails when no line of the keys verifies.
func TestSigned(t *testing.T) {
	l := forkedLog(t)
	w, _ := newWitness(t, "witness.example/w1")
	cp := l.checkpoint(t, "a", 7, w)
	vs, err := misbehaviour.Verifiers([]string{l.ed})
	if err != nil {
		t.Fatal(err)
	}
	junk := junkLine(t, l.ed)
	for _, first := range []bool{true, false} {
		signed, v, err := misbehaviour.Signed([]byte(withLine(string(cp), junk, first)), vs)
		if err != nil {
			t.Fatalf("junk line first=%v: %v", first, err)
		}
		if string(signed) != string(cp) {
			t.Errorf("junk line first=%v: got\n%s\nwant\n%s", first, signed, cp)
		}
		if v.KeyHash() != vs[0].KeyHash() {
			t.Errorf("signer %08x, want %08x", v.KeyHash(), vs[0].KeyHash())
		}
	}
	onlyJunk := string(cp[:strings.Index(string(cp), "\n\n")+2]) + junk
	if _, _, err := misbehaviour.Signed([]byte(onlyJunk), vs); err == nil || !strings.Contains(err.Error(), "do not verify") {
		t.Errorf("a note whose only line of the key is junk: %v, want \"do not verify\"", err)
	}
	_, impostor, err := note.GenerateKey(rand.Reader, "log.example/misbehaviour")
	if err != nil {
		t.Fatal(err)
	}
	ivs, err := misbehaviour.Verifiers([]string{impostor})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := misbehaviour.Signed(cp, ivs); err == nil || !strings.Contains(err.Error(), "no signature line") {
		t.Errorf("a note no line of the keys signs: %v, want \"no signature line\"", err)
	}
}
