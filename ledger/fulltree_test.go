package ledger

import (
	"bytes"
	"context"
	"testing"

	"github.com/transparency-dev/merkle/proof"
)

// TestFullTreeMatchesProver: for every size up to 70 and every leaf, FullTree's root and
// inclusion paths are the streaming Prover's, and they verify with transparency-dev/merkle.
func TestFullTreeMatchesProver(t *testing.T) {
	var links []Link
	prev := Genesis
	for i := range 70 {
		prev = NextLink([]byte{byte(i), 'x'}, prev)
		links = append(links, prev)
	}
	seq := func(n int) func(func(Link, error) bool) {
		return func(yield func(Link, error) bool) {
			for _, l := range links[:n] {
				if !yield(l, nil) {
					return
				}
			}
		}
	}
	for size := 1; size <= 70; size++ {
		ft, err := NewFullTree(context.Background(), uint64(size), seq(70))
		if err != nil {
			t.Fatal(err)
		}
		p := NewProver()
		for i := range size {
			if err := p.PlanInclusion(uint64(i), uint64(size)); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Run(context.Background(), seq(size)); err != nil {
			t.Fatal(err)
		}
		root, _ := p.Root(uint64(size))
		if ft.Root() != root {
			t.Fatalf("size %d: root %x, prover %x", size, ft.Root(), root)
		}
		for i := range size {
			got, err := ft.Inclusion(uint64(i))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := p.Inclusion(uint64(i), uint64(size))
			if len(got) != len(want) {
				t.Fatalf("size %d leaf %d: %d hashes, prover %d", size, i, len(got), len(want))
			}
			for k := range got {
				if !bytes.Equal(got[k], want[k]) {
					t.Fatalf("size %d leaf %d: hash %d differs", size, i, k)
				}
			}
			leaf := Hasher.HashLeaf(links[i][:])
			if err := proof.VerifyInclusion(Hasher, uint64(i), uint64(size), leaf, got, root[:]); err != nil {
				t.Fatalf("size %d leaf %d: %v", size, i, err)
			}
		}
	}
	if _, err := NewFullTree(context.Background(), 71, seq(70)); err == nil {
		t.Fatal("a tree of 71 from 70 links")
	}
}
