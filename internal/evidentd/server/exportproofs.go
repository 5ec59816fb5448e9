package server

import (
	"context"
	"fmt"
	"time"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/tilelog"
)

// This file adds to an export what lets a verifier link the bundle's views of a tree to
// each other (docs/bundle.md): the log's post-quantum checkpoint key, a chain consistency
// receipt between every two successive seals, and the log checkpoints each seal's receipt
// was first cut from with a consistency proof from each to the latest checkpoint.

// exportPQKey writes trust/log-mldsa.vkey when the log signs checkpoints with ML-DSA-44.
func (s *Server) exportPQKey(bw *bundle.Writer) error {
	vk := s.c.Service.Log().PostQuantumVerifierKey()
	if vk == "" {
		return nil
	}
	return bw.WriteFile(bundle.LogPQKeyFile, []byte(vk+"\n"))
}

// sealPair is two successive seals of a chain whose sizes need a consistency proof.
type sealPair struct {
	a, b  store.Seal
	nodes proof.Nodes
}

// chainProofs computes the consistency proofs between successive seals of a chain during
// the one pass the export makes over the chain's links. It keeps only the tree nodes the
// proofs name (O(log n) per pair) and the roots at the sealed sizes, so a chain of any
// length costs no more memory than its seals.
type chainProofs struct {
	pairs []sealPair
	want  map[compact.NodeID][]byte
	roots map[uint64][]byte
	rng   *compact.Range
}

var chainRanges = compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}

// newChainProofs plans the proofs between successive seals (by number) that both lie
// within the first size entries and grow the chain (equal sizes need no proof: the roots
// must be equal, which the verifier checks directly).
func newChainProofs(seals []store.Seal, size uint64) (*chainProofs, error) {
	c := &chainProofs{want: map[compact.NodeID][]byte{}, roots: map[uint64][]byte{}, rng: chainRanges.NewEmptyRange(0)}
	for i := 1; i < len(seals); i++ {
		a, b := seals[i-1], seals[i]
		if b.N != a.N+1 || a.Size == 0 || a.Size >= b.Size || b.Size > size {
			continue
		}
		n, err := proof.Consistency(a.Size, b.Size)
		if err != nil {
			return nil, err
		}
		for _, id := range n.IDs {
			c.want[id] = nil
		}
		c.roots[b.Size] = nil
		c.pairs = append(c.pairs, sealPair{a: a, b: b, nodes: n})
	}
	return c, nil
}

// add appends the chain's next link.
func (c *chainProofs) add(l ledger.Link) error {
	if len(c.pairs) == 0 {
		return nil
	}
	err := c.rng.Append(rfc6962.DefaultHasher.HashLeaf(l[:]), func(id compact.NodeID, h []byte) {
		if _, ok := c.want[id]; ok {
			c.want[id] = h
		}
	})
	if err != nil {
		return err
	}
	if r, ok := c.roots[c.rng.End()]; ok && r == nil {
		root, err := c.rng.GetRootHash(nil)
		if err != nil {
			return err
		}
		c.roots[c.rng.End()] = root
	}
	return nil
}

// write signs and writes the receipt of every planned pair whose two seals the bundle holds.
func (c *chainProofs) write(bw *bundle.Writer, dir, chain string, written map[uint64]bool, signer *receipts.Signer, issuer string) error {
	for _, p := range c.pairs {
		if !written[p.a.N] || !written[p.b.N] {
			continue
		}
		hashes := make([][]byte, len(p.nodes.IDs))
		for i, id := range p.nodes.IDs {
			if hashes[i] = c.want[id]; hashes[i] == nil {
				return fmt.Errorf("chain consistency %d-%d: node %v not computed (the chain has fewer entries than seal %d covers)", p.a.N, p.b.N, id, p.b.N)
			}
		}
		path, err := p.nodes.Rehash(hashes, rfc6962.DefaultHasher.HashChildren)
		if err != nil {
			return err
		}
		rs, err := receipts.SignRoot(signer, receipts.Claims{Issuer: issuer, Subject: chain, IssuedAt: time.Now().Unix()}, c.roots[p.b.Size])
		if err != nil {
			return err
		}
		rc, err := receipts.NewConsistencyReceipt(rs, receipts.ConsistencyProof{Size1: p.a.Size, Size2: p.b.Size, Path: path}, nil)
		if err != nil {
			return err
		}
		if err := bw.WriteFile(bundle.ChainConsistencyFile(dir, p.a.N, p.b.N), rc); err != nil {
			return err
		}
	}
	return nil
}

// writeLogConsistency writes, for every seal the bundle holds (the same selection as
// exportChain), the checkpoint its receipt was first cut from (when it still verifies with
// the log key and is older than the latest, of size latest) and the consistency proof from
// it to the latest: the bundle then shows that the log each seal was anchored in at the
// time is a prefix of the log its receipts are now cut from.
func (s *Server) writeLogConsistency(ctx context.Context, bw *bundle.Writer, refs []bundle.ChainRef, latest uint64) error {
	l := s.c.Service.Log()
	done := map[uint64]bool{latest: true}
	for _, ref := range refs {
		seals, err := s.c.Store.Seals(ctx, ref.ID)
		if err != nil {
			return err
		}
		for _, sl := range seals {
			if !sl.Registered || sl.Size > ref.Size || sl.LogIndex >= latest || len(sl.Checkpoint) == 0 {
				continue
			}
			c, err := tilelog.VerifyCheckpoint(sl.Checkpoint, l.VerifierKey())
			if err != nil || c.Size == 0 || done[c.Size] {
				continue
			}
			done[c.Size] = true
			path, err := l.ConsistencyProof(ctx, c.Size, latest)
			if err != nil {
				return fmt.Errorf("log consistency %d-%d: %w", c.Size, latest, err)
			}
			if err := bw.WriteFile(bundle.CheckpointFile(c.Size), sl.Checkpoint); err != nil {
				return err
			}
			if err := bw.WriteFile(bundle.LogConsistencyFile(c.Size, latest), bundle.MarshalConsistencyProof(path)); err != nil {
				return err
			}
		}
	}
	return nil
}
