package testbundle

import (
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/receipts"
)

// pendingSeal is a seal registered in the log, waiting for its receipt.
type pendingSeal struct {
	stmt []byte // the signed statement
	idx  uint64 // its leaf index in the log
}

// seal seals the chain as it is now at time at: the seal, signed by the issuer as a COSE
// statement naming the previous seal, is registered in the log after Options.Filler other
// statements.
func (bd *builder) seal(at time.Time) {
	bd.tb.Helper()
	chain := bd.chain
	s := ledger.Seal{Chain: chain.ID, Profile: chain.Profile, Size: chain.Size, Head: chain.Head, Root: ledger.RootString(chain.Root()),
		PrevSeal: bd.lastSeal, SealedAt: ledger.Timestamp(at)}
	payload, err := s.Canonical()
	bd.must(err)
	stmt, err := receipts.SignStatement(bd.issuer, payload, receipts.StatementOptions{
		Claims:      receipts.Claims{Issuer: "https://evident.test", Subject: chain.ID, IssuedAt: at.Unix()},
		ContentType: ledger.SealContentType,
	})
	bd.must(err)
	entry, err := receipts.EntryHash(stmt)
	bd.must(err)
	bd.lastSeal = ledger.Link(entry).String()
	bd.addFiller()
	idx := bd.tree.Size()
	bd.tree.AppendData(entry[:])
	bd.pending = append(bd.pending, pendingSeal{stmt: stmt, idx: idx})
}

// attachReceipts writes each seal with its receipt as seals/<n>: cut from the checkpoint
// right after the seal's registration or, with Options.ReceiptsAtEnd, all from the final
// tree (after one more round of other statements).
func (bd *builder) attachReceipts() {
	bd.tb.Helper()
	if bd.o.ReceiptsAtEnd {
		bd.addFiller()
	}
	for k, p := range bd.pending {
		// The checkpoint right after this seal's registration (fillers of the next seal come later).
		size := p.idx + 1
		if bd.o.ReceiptsAtEnd {
			size = bd.tree.Size()
		}
		ts, err := receipts.AttachReceipts(p.stmt, bd.receipt(p.idx, size, bd.checkpointAt(size)))
		bd.must(err)
		bd.b.Files[bundle.SealFile(bd.b.Dir, uint64(k))] = ts
	}
}

// receipt is the RFC 9942 receipt of leaf idx in the tree of size size: the issuer-signed
// root, the inclusion proof and, unless Options.NoCheckpoint, the checkpoint cp.
func (bd *builder) receipt(idx uint64, size uint64, cp []byte) []byte {
	bd.tb.Helper()
	path, err := bd.tree.InclusionProof(idx, size)
	bd.must(err)
	rs, err := receipts.SignRoot(bd.issuer, receipts.Claims{Issuer: "https://evident.test", Subject: bd.b.Origin, IssuedAt: Base.Unix()}, bd.tree.HashAt(size))
	bd.must(err)
	if bd.o.NoCheckpoint {
		cp = nil
	}
	r, err := receipts.NewInclusionReceipt(rs, receipts.InclusionProof{TreeSize: size, LeafIndex: idx, Path: path}, cp)
	bd.must(err)
	return r
}
