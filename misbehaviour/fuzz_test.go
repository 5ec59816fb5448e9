package misbehaviour_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/evident-log/evident/misbehaviour"
)

// addGoldenSeeds adds the golden files to a fuzz target's seed corpus (testdata/fuzz holds
// the rest).
func addGoldenSeeds(f *testing.F) {
	f.Helper()
	names, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
	if err != nil || len(names) == 0 {
		f.Fatalf("golden files: %v %v", names, err)
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// unusedKey is a log key that signed nothing: no input can be proof under it.
func unusedKey(f *testing.F) misbehaviour.Keys {
	f.Helper()
	return misbehaviour.Keys{LogKeys: []string{newEd25519Log(f, "log.example/golden", fixedEntropy("evident misbehaviour unused key")).ed}}
}

// roundTrip checks that a parsed proof marshals to a file Parse reads back to the same
// proof. An empty list and an absent member are one (Marshal omits both), so the proofs are
// compared by what Marshal writes.
func roundTrip(t *testing.T, p *misbehaviour.Proof) {
	t.Helper()
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	p2, err := misbehaviour.Parse(b)
	if err != nil {
		t.Fatalf("Parse(Marshal(p)): %v\n%s", err, b)
	}
	b2, err := p2.Marshal()
	if err != nil || !bytes.Equal(b, b2) {
		t.Fatalf("round trip changed the proof (%v):\n%s\n%s", err, b, b2)
	}
}

// FuzzParse: Parse never panics, what it accepts round-trips, and nothing is proof under a
// key that signed nothing.
func FuzzParse(f *testing.F) {
	addGoldenSeeds(f)
	keys := unusedKey(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := misbehaviour.Parse(data)
		if err != nil {
			return
		}
		roundTrip(t, p)
		if res := misbehaviour.Check(p, keys); res.Proven {
			t.Fatalf("proven under a key that signed nothing: %s", res.Reason)
		}
	})
}

// FuzzParseAll: ParseAll never panics on any input (lists, witness records, refusals), every
// proof it returns round-trips, and none is proof under a key that signed nothing.
func FuzzParseAll(f *testing.F) {
	addGoldenSeeds(f)
	keys := unusedKey(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := misbehaviour.ParseAll(data)
		if err != nil {
			return
		}
		for _, p := range ps {
			roundTrip(t, p)
			if res := misbehaviour.Check(p, keys); res.Proven {
				t.Fatalf("proven under a key that signed nothing: %s", res.Reason)
			}
		}
	})
}

// FuzzCheck mutates real proofs under the golden log key, which signed checkpoints of two
// histories: whatever the file, Check proves only a pair of checkpoints that the key signed
// and that no single history holds both of.
func FuzzCheck(f *testing.F) {
	addGoldenSeeds(f)
	l := goldenLog(f)
	keys := misbehaviour.Keys{LogKeys: []string{l.ed}}
	holds := func(tag string, s misbehaviour.Side) bool {
		return s.Size >= 1 && s.Size <= 12 && bytes.Equal(l.root(tag, s.Size), s.Root)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := misbehaviour.ParseAll(data)
		if err != nil {
			return
		}
		for _, p := range ps {
			res := misbehaviour.Check(p, keys)
			if !res.Proven {
				continue
			}
			a, b := res.Sides[0], res.Sides[1]
			if !(holds("a", a) || holds("b", a)) || !(holds("a", b) || holds("b", b)) {
				t.Fatalf("proven with a checkpoint the key never signed: %+v", res.Sides)
			}
			for _, tag := range []string{"a", "b"} {
				if holds(tag, a) && holds(tag, b) {
					t.Fatalf("proven, but history %s holds both checkpoints (%d and %d): %s", tag, a.Size, b.Size, res.Reason)
				}
			}
		}
	})
}
