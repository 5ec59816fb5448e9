package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/receipts"
)

func (s *Server) handleExport(w http.ResponseWriter, r *http.Request) {
	if sel := r.URL.Query().Get("registrations"); sel != "" && !r.URL.Query().Has("chain") {
		s.handleExportRegistrations(w, r, sel) // SCITT registrations (exportscitt.go)
		return
	}
	if q := r.URL.Query(); q.Has("task") || q.Has("logical_id") {
		if ids := q["chain"]; len(ids) != 1 || ids[0] == "" || q.Get("task")+q.Get("logical_id") == "" {
			problem(w, http.StatusBadRequest, api.CodeBadQuery, "a case slice needs one ?chain=<id> and a non-empty task= or logical_id=", -1)
			return
		}
		s.handleSliceExport(w, r, q.Get("chain"), Slice{Task: q.Get("task"), LogicalID: q.Get("logical_id")}) // slice.go
		return
	}
	ids := r.URL.Query()["chain"]
	if len(ids) == 0 || slices.Contains(ids, "") {
		problem(w, http.StatusBadRequest, api.CodeBadQuery, "export needs ?chain=<id> (repeat chain= for several chains in one bundle)", -1)
		return
	}
	chain := ids[0]
	reqs := make([]ExportChain, 0, len(ids))
	for _, id := range ids {
		if slices.ContainsFunc(reqs, func(q ExportChain) bool { return q.Chain == id }) {
			problem(w, http.StatusBadRequest, api.CodeBadQuery, fmt.Sprintf("chain %.80q is named twice", id), -1)
			return
		}
		h, err := s.c.Pipeline.Head(r.Context(), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		reqs = append(reqs, ExportChain{Chain: id, Size: h.Size})
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", bundle.ChainDir(chain)+".evident.zip"))
	if err := s.ExportChains(r.Context(), w, reqs); err != nil {
		// Headers are gone; the truncated zip fails to open, which the client notices.
		s.c.Logger.Error("export failed", "chain", chain, "err", err)
		return
	}
	s.m.exports.Add(1)
}

// Export writes the offline bundle of chain up to size entries to w.
func (s *Server) Export(ctx context.Context, w io.Writer, chain string, size uint64) error {
	return s.ExportChains(ctx, w, []ExportChain{{Chain: chain, Size: size}})
}

// ExportChain names a chain to export and how many of its entries.
type ExportChain struct {
	Chain string
	Size  uint64
}

// ExportChains writes one offline bundle holding several chains (each up to its size) to w:
// one set of trust files and one checkpoint for all of them, so that references between the
// chains (OWP provenance) can be checked offline.
func (s *Server) ExportChains(ctx context.Context, w io.Writer, chains []ExportChain) error {
	bw := bundle.NewWriter(w)
	l := s.c.Service.Log()
	if err := s.writeTrust(bw); err != nil { // trust/ files (slice.go)
		return err
	}
	// Every receipt is cut afresh from the latest checkpoint, so one checkpoint anchors all
	// the seals of the bundle and no consistency proof between checkpoints is needed.
	cp, c, err := s.latestCheckpoint(ctx)
	if err != nil {
		return err
	}
	var refs []bundle.ChainRef
	wroteCP, wroteCOPKeys := false, false
	for _, ec := range chains {
		ref, wrote, err := s.exportChain(ctx, bw, ec.Chain, ec.Size, cp, c.Size)
		if err != nil {
			return err
		}
		if err := s.exportCOPLedger(ctx, bw, ref.ID, ref.Profile, ref.Size, &wroteCOPKeys); err != nil {
			return err
		}
		refs = append(refs, ref)
		wroteCP = wroteCP || wrote
	}
	if wroteCP {
		if err := bw.WriteFile(bundle.CheckpointFile(c.Size), cp); err != nil {
			return err
		}
		// The seals' first checkpoints and their consistency with cp (exportproofs.go).
		if err := s.writeLogConsistency(ctx, bw, refs, c.Size); err != nil {
			return err
		}
	}
	scope := bundle.Scope{Chain: chains[0].Chain}
	if len(chains) > 1 {
		scope = bundle.Scope{}
		for _, ec := range chains {
			scope.Chains = append(scope.Chains, ec.Chain)
		}
	}
	return bw.Close(bundle.Manifest{
		Producer: s.c.Producer,
		Created:  ledger.Timestamp(time.Now()),
		Scope:    scope,
		Log:      bundle.LogInfo{Origin: l.Origin()},
		Chains:   refs,
	})
}

// exportChain writes one chain's entries (up to size) and its seals, with receipts cut from
// the checkpoint cp of tree size cpSize, and returns the chain's manifest entry and whether a
// receipt was written.
func (s *Server) exportChain(ctx context.Context, bw *bundle.Writer, chain string, size uint64, cp []byte, cpSize uint64) (bundle.ChainRef, bool, error) {
	h, err := s.c.Pipeline.Head(ctx, chain)
	if err != nil {
		return bundle.ChainRef{}, false, err
	}
	dir := bundle.ChainDir(chain)
	ew, err := bw.Create(bundle.EntriesFile(dir))
	if err != nil {
		return bundle.ChainRef{}, false, err
	}
	buf := bufio.NewWriterSize(ew, 1<<16)
	enc := json.NewEncoder(buf)
	var n uint64
	var head ledger.Link
	tree := ledger.NewTree()
	seals, err := s.c.Store.Seals(ctx, chain)
	if err != nil {
		return bundle.ChainRef{}, false, err
	}
	proofs, err := newChainProofs(seals, size) // consistency between successive seals (exportproofs.go)
	if err != nil {
		return bundle.ChainRef{}, false, err
	}
	for n < size {
		es, err := s.c.Store.Entries(ctx, chain, store.Filter{From: n, Limit: 5000})
		if err != nil {
			return bundle.ChainRef{}, false, err
		}
		if len(es) == 0 {
			break
		}
		for _, e := range es {
			if e.Seq >= size {
				break
			}
			if err := enc.Encode(bundle.EntryLine{Seq: e.Seq, Prev: e.Prev, Link: e.Link, Arrival: ledger.Timestamp(e.Arrival), Record: e.Record}); err != nil {
				return bundle.ChainRef{}, false, err
			}
			head = e.Link
			tree.Append(e.Link)
			if err := proofs.add(e.Link); err != nil {
				return bundle.ChainRef{}, false, err
			}
			n = e.Seq + 1
		}
	}
	if err := buf.Flush(); err != nil {
		return bundle.ChainRef{}, false, err
	}
	wroteCP := false
	written := map[uint64]bool{}
	for _, sl := range seals {
		if !sl.Registered || sl.Size > n || sl.LogIndex >= cpSize {
			continue
		}
		rcpt, err := s.c.Service.Receipt(ctx, sl.LogIndex, cp)
		if err != nil {
			return bundle.ChainRef{}, false, fmt.Errorf("seal %d: %w", sl.N, err)
		}
		ts, err := receipts.AttachReceipts(sl.Statement, rcpt)
		if err != nil {
			return bundle.ChainRef{}, false, fmt.Errorf("seal %d: %w", sl.N, err)
		}
		if err := bw.WriteFile(bundle.SealFile(dir, sl.N), ts); err != nil {
			return bundle.ChainRef{}, false, err
		}
		wroteCP = true
		written[sl.N] = true
	}
	if err := proofs.write(bw, dir, chain, written, s.c.Service.Signer(), s.c.Service.Issuer()); err != nil {
		return bundle.ChainRef{}, false, err
	}
	return bundle.ChainRef{ID: chain, Dir: dir, Profile: h.Profile, Size: n, Head: head, Root: ledger.RootString(tree.Root())}, wroteCP, nil
}
