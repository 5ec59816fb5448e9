package export

import (
	"context"
	"fmt"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/receipts"
)

// This file adds to an export what lets a verifier link the bundle's views of a tree to
// each other (docs/bundle.md): a chain consistency receipt between every two successive
// seals, and the log checkpoints each seal's receipt was first cut from with a consistency
// proof from each to the latest checkpoint. The log's post-quantum key is in trust.go.

// sealProofs are the consistency proofs between successive seals of a chain, computed by a
// ledger.Prover during the one pass the export makes over the chain's links: it keeps only
// the tree nodes the proofs name and the roots at the sealed sizes, so a chain of any length
// costs no more memory than its seals.
type sealProofs struct {
	pairs  [][2]store.Seal
	prover *ledger.Prover
}

// planSealProofs plans the proofs between successive seals (by number) that both lie
// within the first size entries and grow the chain (equal sizes need no proof: the roots
// must be equal, which the verifier checks directly), and the root at size, so that the
// prover takes every exported link and its CurrentRoot is the exported chain's root.
func planSealProofs(seals []store.Seal, size uint64) (*sealProofs, error) {
	p := &sealProofs{prover: ledger.NewProver()}
	if err := p.prover.PlanRoot(size); err != nil {
		return nil, err
	}
	for i := 1; i < len(seals); i++ {
		a, b := seals[i-1], seals[i]
		if b.N != a.N+1 || a.Size == 0 || a.Size >= b.Size || b.Size > size {
			continue
		}
		if err := p.prover.PlanConsistency(a.Size, b.Size); err != nil {
			return nil, err
		}
		p.pairs = append(p.pairs, [2]store.Seal{a, b})
	}
	return p, nil
}

// writeSealProofs signs and writes the receipt of every planned pair whose two seals the
// bundle holds.
func (x *Exporter) writeSealProofs(bw *bundle.Writer, p *sealProofs, dir, chain string, written map[uint64]bool) error {
	for _, pair := range p.pairs {
		a, b := pair[0], pair[1]
		if !written[a.N] || !written[b.N] {
			continue
		}
		path, err := p.prover.Consistency(a.Size, b.Size)
		if err != nil {
			return fmt.Errorf("chain consistency %d-%d (seal %d covers %d entries): %w", a.N, b.N, b.N, b.Size, err)
		}
		root, err := p.prover.Root(b.Size)
		if err != nil {
			return fmt.Errorf("chain consistency %d-%d: %w", a.N, b.N, err)
		}
		rc, err := x.consistencyReceipt(chain, root, a.Size, b.Size, path)
		if err != nil {
			return err
		}
		if err := bw.WriteFile(bundle.ChainConsistencyFile(dir, a.N, b.N), rc); err != nil {
			return err
		}
	}
	return nil
}

// consistencyReceipt signs the consistency receipt of chain from size1 to size2, whose
// tree root at size2 is root.
func (x *Exporter) consistencyReceipt(chain string, root [32]byte, size1, size2 uint64, path [][]byte) ([]byte, error) {
	rs, err := x.signChainRoot(chain, root)
	if err != nil {
		return nil, err
	}
	return receipts.NewConsistencyReceipt(rs, receipts.ConsistencyProof{Size1: size1, Size2: size2, Path: path}, nil)
}

// signChainRoot signs a root of chain's tree as the service (CWT subject = the chain): the
// one signature every chain receipt cut from that tree carries.
func (x *Exporter) signChainRoot(chain string, root [32]byte) (receipts.RootSignature, error) {
	return receipts.SignRoot(x.c.Service.Signer(), receipts.Claims{Issuer: x.c.Service.Issuer(), Subject: chain, IssuedAt: time.Now().Unix()}, root[:])
}

// writeSeal writes seal statement se into the chain directory dir of a bundle with its log
// receipt, cut from checkpoint cp, attached (a transparent statement).
func (x *Exporter) writeSeal(ctx context.Context, bw *bundle.Writer, dir string, se store.Seal, cp []byte) error {
	rcpt, err := x.c.Service.Receipt(ctx, se.LogIndex, cp)
	if err != nil {
		return fmt.Errorf("seal %d: %w", se.N, err)
	}
	ts, err := receipts.AttachReceipts(se.Statement, rcpt)
	if err != nil {
		return fmt.Errorf("seal %d: %w", se.N, err)
	}
	return bw.WriteFile(bundle.SealFile(dir, se.N), ts)
}

// writeLogConsistency writes, for every seal the bundle holds (the same selection as
// exportChain), the checkpoint its receipt was first cut from (when it still verifies with
// the log key and is older than the latest, of size latest) and the consistency proof from
// it to the latest: the bundle then shows that the log each seal was anchored in at the
// time is a prefix of the log its receipts are now cut from.
func (x *Exporter) writeLogConsistency(ctx context.Context, bw *bundle.Writer, refs []bundle.ChainRef, latest uint64) error {
	l := x.c.Service.Log()
	done := map[uint64]bool{latest: true}
	for _, ref := range refs {
		seals, err := x.c.Store.Seals(ctx, ref.ID)
		if err != nil {
			return err
		}
		for _, sl := range seals {
			if !sl.Registered || sl.Size > ref.Size || sl.LogIndex >= latest || len(sl.Checkpoint) == 0 {
				continue
			}
			c, err := log.VerifyCheckpoint(sl.Checkpoint, l.VerifierKey())
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
