package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/receipts"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// chainInclusion computes, in one pass over the first size links of chain, the RFC 6962
// inclusion path of each of seqs in the chain tree of that size, and checks the tree's root
// against wantRoot (the sealed root, "sha256:<hex>"). Time O(size), memory O(len(seqs)·log size).
func (s *Server) chainInclusion(ctx context.Context, chain string, size uint64, wantRoot string, seqs []uint64) (map[uint64][][]byte, []byte, error) {
	plans := make([]proof.Nodes, len(seqs))
	want := map[compact.NodeID][]byte{}
	for i, q := range seqs {
		var err error
		if plans[i], err = proof.Inclusion(q, size); err != nil {
			return nil, nil, err
		}
		for _, id := range plans[i].IDs {
			want[id] = nil
		}
	}
	rng := chainRanges.NewEmptyRange(0)
	for rng.End() < size {
		es, err := s.c.Store.Entries(ctx, chain, store.Filter{From: rng.End(), Limit: 5000})
		if err != nil {
			return nil, nil, err
		}
		if len(es) == 0 {
			return nil, nil, fmt.Errorf("chain %q has %d entries, the seal covers %d", chain, rng.End(), size)
		}
		for _, e := range es {
			if rng.End() == size {
				break
			}
			err := rng.Append(rfc6962.DefaultHasher.HashLeaf(e.Link[:]), func(id compact.NodeID, h []byte) {
				if _, ok := want[id]; ok {
					want[id] = h
				}
			})
			if err != nil {
				return nil, nil, err
			}
		}
	}
	root, err := rng.GetRootHash(nil)
	if err != nil {
		return nil, nil, err
	}
	if got := ledger.RootString([32]byte(root)); got != wantRoot {
		return nil, nil, fmt.Errorf("chain %q: the stored links give root %s at size %d, the seal says %s", chain, got, size, wantRoot)
	}
	paths := make(map[uint64][][]byte, len(seqs))
	for i, q := range seqs {
		hashes := make([][]byte, len(plans[i].IDs))
		for j, id := range plans[i].IDs {
			if hashes[j] = want[id]; hashes[j] == nil {
				return nil, nil, fmt.Errorf("proof of seq %d: node %v not computed", q, id)
			}
		}
		if paths[q], err = plans[i].Rehash(hashes, rfc6962.DefaultHasher.HashChildren); err != nil {
			return nil, nil, err
		}
	}
	return paths, root, nil
}

// errNotSealed means no registered seal covers the entry yet.
var errNotSealed = errors.New("not covered by a registered seal")

// entryReceipt cuts the chain receipt of entry seq: an RFC 9942 inclusion receipt of its
// link in the chain tree whose root the chain's latest registered seal commits to (CWT
// subject = the chain). It returns that seal too, or errNotSealed.
func (s *Server) entryReceipt(ctx context.Context, chain string, seq uint64) ([]byte, *store.Seal, ledger.Seal, error) {
	seals, err := s.c.Store.Seals(ctx, chain)
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
		return nil, nil, ledger.Seal{}, errNotSealed
	}
	sealed, err := sealPayload(top.Statement)
	if err != nil {
		return nil, nil, ledger.Seal{}, err
	}
	paths, root, err := s.chainInclusion(ctx, chain, top.Size, sealed.Root, []uint64{seq})
	if err != nil {
		return nil, nil, ledger.Seal{}, err
	}
	rs, err := receipts.SignRoot(s.c.Service.Signer(), receipts.Claims{Issuer: s.c.Service.Issuer(), Subject: chain, IssuedAt: time.Now().Unix()}, root)
	if err != nil {
		return nil, nil, ledger.Seal{}, err
	}
	rc, err := receipts.NewInclusionReceipt(rs, receipts.InclusionProof{TreeSize: top.Size, LeafIndex: seq, Path: paths[seq]}, nil)
	return rc, top, sealed, err
}

// handleEntryReceipt answers GET /v1/chains/{chain}/entries/{seq}/receipt: an RFC 9942
// inclusion receipt (COSE, application/cose) proving that entry seq's link sits at seq in
// the chain tree whose root the chain's latest registered seal commits to. An entry after the
// latest seal answers 409 not_sealed: seal, then ask again.
func (s *Server) handleEntryReceipt(w http.ResponseWriter, r *http.Request) {
	chain := r.PathValue("chain")
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil {
		problem(w, http.StatusBadRequest, api.CodeBadQuery, "seq must be a non-negative integer", -1)
		return
	}
	h, err := s.c.Pipeline.Head(r.Context(), chain)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if seq >= h.Size {
		problem(w, http.StatusNotFound, api.CodeNoSuchEntry, fmt.Sprintf("chain %s has %d entries", chain, h.Size), -1)
		return
	}
	rc, top, sealed, err := s.entryReceipt(r.Context(), chain, seq)
	if errors.Is(err, errNotSealed) {
		problem(w, http.StatusConflict, api.CodeNotSealed, fmt.Sprintf("entry %d is not covered by a registered seal yet: POST /v1/chains/%s/seal, then ask again", seq, chain), -1)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", `application/cose; cose-type="cose-sign1"`)
	w.Header().Set("Evident-Seal", strconv.FormatUint(top.N, 10))
	w.Header().Set("Evident-Seal-Root", sealed.Root)
	w.Header().Set("Cache-Control", "no-store")
	w.Write(rc)
}
