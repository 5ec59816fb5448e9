package export

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/receipts"
)

// ErrNotSealed means no registered seal covers the entry yet.
var ErrNotSealed = errors.New("not covered by a registered seal")

// links yields the links of chain from seq 0, read from the store a page at a time. A gap
// in the stored sequence numbers is an error: the links would give another tree.
func links(ctx context.Context, st store.Store, chain string) iter.Seq2[ledger.Link, error] {
	return func(yield func(ledger.Link, error) bool) {
		var next uint64
		for {
			es, err := st.Entries(ctx, chain, store.Filter{From: next, Limit: pageSize})
			if err != nil {
				yield(ledger.Link{}, fmt.Errorf("entries of %q from %d: %w", chain, next, err))
				return
			}
			if len(es) == 0 {
				return
			}
			for _, e := range es {
				if e.Seq != next {
					yield(ledger.Link{}, fmt.Errorf("chain %q: entry %d where %d was expected", chain, e.Seq, next))
					return
				}
				if !yield(e.Link, nil) {
					return
				}
				next++
			}
		}
	}
}

// chainInclusion computes, in one pass over the first size links of chain, the RFC 6962
// inclusion path of each of seqs in the chain tree of that size, and checks the tree's root
// against wantRoot (the sealed root, "sha256:<hex>"). Time O(size), memory O(len(seqs)·log size).
func (x *Exporter) chainInclusion(ctx context.Context, chain string, size uint64, wantRoot string, seqs []uint64) (map[uint64][][]byte, [32]byte, error) {
	p := ledger.NewProver()
	for _, q := range seqs {
		if err := p.PlanInclusion(q, size); err != nil {
			return nil, [32]byte{}, err
		}
	}
	if err := p.Run(ctx, links(ctx, x.c.Store, chain)); err != nil {
		return nil, [32]byte{}, fmt.Errorf("chain %q, sealed at size %d: %w", chain, size, err)
	}
	root, err := p.Root(size)
	if err != nil {
		return nil, [32]byte{}, err
	}
	if got := ledger.RootString(root); got != wantRoot {
		return nil, [32]byte{}, fmt.Errorf("chain %q: the stored links give root %s at size %d, the seal says %s", chain, got, size, wantRoot)
	}
	paths := make(map[uint64][][]byte, len(seqs))
	for _, q := range seqs {
		if paths[q], err = p.Inclusion(q, size); err != nil {
			return nil, [32]byte{}, err
		}
	}
	return paths, root, nil
}

// EntryReceipt cuts the chain receipt of entry seq: an RFC 9942 inclusion receipt of its
// link in the chain tree whose root the chain's latest registered seal commits to (CWT
// subject = the chain). It returns that seal and its payload too, or ErrNotSealed.
func (x *Exporter) EntryReceipt(ctx context.Context, chain string, seq uint64) ([]byte, *store.Seal, ledger.Seal, error) {
	seals, err := x.c.Store.Seals(ctx, chain)
	if err != nil {
		return nil, nil, ledger.Seal{}, err
	}
	var top *store.Seal
	for i := range seals {
		if seals[i].Registered {
			top = &seals[i]
		}
	}
	if top == nil || seq >= top.Size {
		return nil, nil, ledger.Seal{}, ErrNotSealed
	}
	sealed, err := sealPayload(top.Statement)
	if err != nil {
		return nil, nil, ledger.Seal{}, err
	}
	path, root, err := x.sealedInclusion(ctx, chain, top.Size, sealed.Root, seq)
	if err != nil {
		return nil, nil, ledger.Seal{}, err
	}
	rs, err := x.signChainRoot(chain, root)
	if err != nil {
		return nil, nil, ledger.Seal{}, err
	}
	rc, err := receipts.NewInclusionReceipt(rs, receipts.InclusionProof{TreeSize: top.Size, LeafIndex: seq, Path: path}, nil)
	return rc, top, sealed, err
}

// sealedInclusion is the inclusion path of seq in chain's tree of the sealed size, whose root
// must be wantRoot: from the cached whole tree (built in one pass on a miss), or in one pass
// over the chain when the tree does not fit the cache.
func (x *Exporter) sealedInclusion(ctx context.Context, chain string, size uint64, wantRoot string, seq uint64) ([][]byte, [32]byte, error) {
	t, ok, err := x.trees.get(ctx, chain, size, func() (*ledger.FullTree, error) {
		// A build outlives the request that started it (others may wait for it).
		t, err := ledger.NewFullTree(context.WithoutCancel(ctx), size, links(context.WithoutCancel(ctx), x.c.Store, chain))
		if err != nil {
			return nil, fmt.Errorf("chain %q, sealed at size %d: %w", chain, size, err)
		}
		if got := ledger.RootString(t.Root()); got != wantRoot {
			return nil, fmt.Errorf("chain %q: the stored links give root %s at size %d, the seal says %s", chain, got, size, wantRoot)
		}
		return t, nil
	})
	if err != nil {
		return nil, [32]byte{}, err
	}
	if !ok {
		paths, root, err := x.chainInclusion(ctx, chain, size, wantRoot, []uint64{seq})
		return paths[seq], root, err
	}
	if got := ledger.RootString(t.Root()); got != wantRoot {
		return nil, [32]byte{}, fmt.Errorf("chain %q: the tree of size %d has root %s, the seal says %s", chain, size, got, wantRoot)
	}
	path, err := t.Inclusion(seq)
	return path, t.Root(), err
}

// ChainConsistencyReceipt builds the consistency receipt of chain between sizes from and to
// (from < to), signed by the service over the root at to with sub = the chain, in one
// pass over the chain's first to links. A chain shorter than to gives ledger.ErrShortChain;
// from = to gives receipts.ErrEmptyPath (RFC 9942 has no empty consistency path).
func (x *Exporter) ChainConsistencyReceipt(ctx context.Context, chain string, from, to uint64) ([]byte, error) {
	if from != 0 && from == to {
		return nil, fmt.Errorf("chain %q consistency %d -> %d: %w", chain, from, to, receipts.ErrEmptyPath)
	}
	p := ledger.NewProver()
	if err := p.PlanConsistency(from, to); err != nil {
		return nil, err
	}
	if err := p.Run(ctx, links(ctx, x.c.Store, chain)); err != nil {
		return nil, fmt.Errorf("chain %q: %w", chain, err)
	}
	path, err := p.Consistency(from, to)
	if err != nil {
		return nil, err
	}
	root, err := p.Root(to)
	if err != nil {
		return nil, err
	}
	return x.consistencyReceipt(chain, root, from, to, path)
}
