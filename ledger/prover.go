package ledger

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
)

// Errors of a Prover that callers branch on.
var (
	// ErrShortChain reports links that ended before the largest size a planned proof or root needs.
	ErrShortChain = errors.New("the chain has fewer links than the proof needs")
	// ErrNotPlanned reports a proof or root asked of a Prover that was not planned before its links.
	ErrNotPlanned = errors.New("proof not planned")
	// ErrPlanLate reports a plan made after the Prover was given its first link.
	ErrPlanLate = errors.New("proofs must be planned before the first link")
)

// checkEvery is how many links Run takes between two looks at its context.
const checkEvery = 1024

// Prover computes RFC 6962 inclusion and consistency proofs and roots of a chain's Merkle
// tree (the tree Tree keeps) in one streaming pass over the chain's links. Plan every proof
// and root first, then give it the links from seq 0 (Run, or Append one at a time), then
// read the results. It keeps a compact range, O(log n) hashes, plus the nodes and roots
// the planned proofs name, so a chain of any length costs no more memory than the proofs.
// A Prover is not safe for concurrent use.
type Prover struct {
	rng   *compact.Range
	nodes map[compact.NodeID][]byte // the hashes the planned proofs name, nil until computed
	roots map[uint64][]byte         // the roots at planned sizes, nil until computed
	incl  map[[2]uint64]proof.Nodes // by {index, size}
	cons  map[[2]uint64]proof.Nodes // by {size1, size2}
	need  uint64                    // the largest planned size
}

// NewProver returns a Prover with nothing planned.
func NewProver() *Prover {
	return &Prover{
		rng:   rangeFactory.NewEmptyRange(0),
		nodes: map[compact.NodeID][]byte{},
		roots: map[uint64][]byte{},
		incl:  map[[2]uint64]proof.Nodes{},
		cons:  map[[2]uint64]proof.Nodes{},
	}
}

// PlanRoot asks for the tree root at size.
func (p *Prover) PlanRoot(size uint64) error {
	if p.rng.End() > 0 {
		return ErrPlanLate
	}
	if _, ok := p.roots[size]; !ok {
		p.roots[size] = nil
	}
	p.need = max(p.need, size)
	return nil
}

// PlanInclusion asks for the inclusion proof of leaf index in the tree of size (index < size)
// and for that tree's root.
func (p *Prover) PlanInclusion(index, size uint64) error {
	if p.rng.End() > 0 {
		return ErrPlanLate
	}
	n, err := proof.Inclusion(index, size)
	if err != nil {
		return fmt.Errorf("inclusion proof of %d at size %d: %w", index, size, err)
	}
	p.plan(n)
	p.incl[[2]uint64{index, size}] = n
	return p.PlanRoot(size)
}

// PlanConsistency asks for the consistency proof from the tree of size1 to the tree of size2
// (size1 <= size2) and for both roots. The proof is empty when size1 is 0 or equal to size2.
func (p *Prover) PlanConsistency(size1, size2 uint64) error {
	if p.rng.End() > 0 {
		return ErrPlanLate
	}
	n, err := proof.Consistency(size1, size2)
	if err != nil {
		return fmt.Errorf("consistency proof %d-%d: %w", size1, size2, err)
	}
	p.plan(n)
	p.cons[[2]uint64{size1, size2}] = n
	if err := p.PlanRoot(size1); err != nil {
		return err
	}
	return p.PlanRoot(size2)
}

func (p *Prover) plan(n proof.Nodes) {
	for _, id := range n.IDs {
		p.nodes[id] = nil
	}
}

// Need returns the number of links the planned proofs and roots need: the largest planned size.
func (p *Prover) Need() uint64 { return p.need }

// Size returns the number of links taken so far.
func (p *Prover) Size() uint64 { return p.rng.End() }

// CurrentRoot returns the root of the tree of the links taken so far (Size of them), as
// Tree.Root would: with a root planned at the chain's size, one pass gives the proofs and
// the chain's root without hashing any link twice.
func (p *Prover) CurrentRoot() [32]byte { return rangeRoot(p.rng) }

// Append takes the chain's next link. Links past Need are not needed and are ignored.
func (p *Prover) Append(l Link) error {
	if p.rng.End() >= p.need {
		return nil
	}
	err := p.rng.Append(hashLeaf(l), func(id compact.NodeID, h []byte) {
		if _, ok := p.nodes[id]; ok {
			p.nodes[id] = h
		}
	})
	if err != nil {
		return fmt.Errorf("chain tree: %w", err)
	}
	if r, ok := p.roots[p.rng.End()]; ok && r == nil {
		root, err := p.rng.GetRootHash(nil)
		if err != nil {
			return fmt.Errorf("chain tree root at %d: %w", p.rng.End(), err)
		}
		p.roots[p.rng.End()] = root
	}
	return nil
}

// Run takes the chain's next links (from seq Size(), 0 on a fresh Prover) from the iterator
// until Need links are in, and stops reading there. It returns the iterator's first error,
// ctx's error when ctx ends, or ErrShortChain when the links end early.
func (p *Prover) Run(ctx context.Context, links iter.Seq2[Link, error]) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.rng.End() >= p.need {
		return nil
	}
	for l, err := range links {
		if err != nil {
			return err
		}
		if err := p.Append(l); err != nil {
			return err
		}
		if p.rng.End() >= p.need {
			return nil
		}
		if p.rng.End()%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	return fmt.Errorf("%w: %d links, %d needed", ErrShortChain, p.rng.End(), p.need)
}

// Root returns the planned root of the tree of size; the empty tree's root is SHA-256 of
// the empty string.
func (p *Prover) Root(size uint64) ([32]byte, error) {
	var out [32]byte
	r, ok := p.roots[size]
	switch {
	case !ok:
		return out, fmt.Errorf("root at size %d: %w", size, ErrNotPlanned)
	case size == 0:
		copy(out[:], Hasher.EmptyRoot())
	case r == nil:
		return out, fmt.Errorf("root at size %d: %w (%d links taken)", size, ErrShortChain, p.rng.End())
	default:
		copy(out[:], r)
	}
	return out, nil
}

// Inclusion returns the planned inclusion proof of leaf index in the tree of size.
func (p *Prover) Inclusion(index, size uint64) ([][]byte, error) {
	n, ok := p.incl[[2]uint64{index, size}]
	if !ok {
		return nil, fmt.Errorf("inclusion proof of %d at size %d: %w", index, size, ErrNotPlanned)
	}
	path, err := p.rehash(n)
	if err != nil {
		return nil, fmt.Errorf("inclusion proof of %d at size %d: %w", index, size, err)
	}
	return path, nil
}

// Consistency returns the planned consistency proof from the tree of size1 to that of size2.
func (p *Prover) Consistency(size1, size2 uint64) ([][]byte, error) {
	n, ok := p.cons[[2]uint64{size1, size2}]
	if !ok {
		return nil, fmt.Errorf("consistency proof %d-%d: %w", size1, size2, ErrNotPlanned)
	}
	path, err := p.rehash(n)
	if err != nil {
		return nil, fmt.Errorf("consistency proof %d-%d: %w", size1, size2, err)
	}
	return path, nil
}

// rehash turns the computed hashes of n's nodes into a proof; the result is never nil.
func (p *Prover) rehash(n proof.Nodes) ([][]byte, error) {
	hashes := make([][]byte, len(n.IDs))
	for i, id := range n.IDs {
		if hashes[i] = p.nodes[id]; hashes[i] == nil {
			return nil, fmt.Errorf("%w: node %d.%d not computed (%d links taken)", ErrShortChain, id.Level, id.Index, p.rng.End())
		}
	}
	return n.Rehash(hashes, hashChildren)
}
