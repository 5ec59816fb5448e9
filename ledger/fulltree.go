package ledger

import (
	"context"
	"fmt"
	"iter"
)

// FullTree is a chain tree of fixed size held whole in memory: every node of every level,
// 2·size hashes of 32 bytes. It answers any inclusion proof in O(log size) after one pass
// over the links, where the streaming Prover needs a pass per proof: for a service asked for
// the receipt of every entry under one seal.
type FullTree struct {
	levels [][][32]byte // levels[0] are the leaf hashes; the last level is the root
}

// FullTreeBytes is the memory a FullTree of size leaves holds.
func FullTreeBytes(size uint64) uint64 { return 2 * size * 32 }

// NewFullTree builds the tree of the first size links that links yields. Fewer links than
// size is ErrShortChain.
func NewFullTree(ctx context.Context, size uint64, links iter.Seq2[Link, error]) (*FullTree, error) {
	if size == 0 {
		return nil, fmt.Errorf("ledger: a tree of no leaf")
	}
	leaves := make([][32]byte, 0, size)
	for l, err := range links {
		if err != nil {
			return nil, err
		}
		if uint64(len(leaves)) == size {
			break
		}
		if len(leaves)%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		leaves = append(leaves, [32]byte(hashLeaf(l)))
	}
	if uint64(len(leaves)) < size {
		return nil, fmt.Errorf("%w: %d links, want %d", ErrShortChain, len(leaves), size)
	}
	t := &FullTree{levels: [][][32]byte{leaves}}
	// Bottom-up with the last node of an odd level carried up unchanged: the same tree as
	// RFC 6962's split at the largest power of two below the size.
	for lv := leaves; len(lv) > 1; {
		next := make([][32]byte, (len(lv)+1)/2)
		for i := range next {
			if 2*i+1 < len(lv) {
				next[i] = [32]byte(hashChildren(lv[2*i][:], lv[2*i+1][:]))
			} else {
				next[i] = lv[2*i]
			}
		}
		t.levels = append(t.levels, next)
		lv = next
	}
	return t, nil
}

// Size is the number of leaves.
func (t *FullTree) Size() uint64 { return uint64(len(t.levels[0])) }

// Root is the tree's root hash.
func (t *FullTree) Root() [32]byte { return t.levels[len(t.levels)-1][0] }

// Inclusion returns the RFC 9162 inclusion path of leaf index, leaf to root.
func (t *FullTree) Inclusion(index uint64) ([][]byte, error) {
	if index >= t.Size() {
		return nil, fmt.Errorf("ledger: inclusion of leaf %d in a tree of %d", index, t.Size())
	}
	var path [][]byte
	i := index
	for _, lv := range t.levels[:len(t.levels)-1] {
		if sib := i ^ 1; sib < uint64(len(lv)) {
			h := lv[sib]
			path = append(path, h[:])
		}
		i >>= 1
	}
	return path, nil
}
