package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger/profile/cop"
)

// handleCOPLedger serves a COP Topic's ledger (COP 1.0 §9.6) as JSON Lines: one record per
// accepted event, in chain order, signed by evidentd's node key. The records are derived from
// the stored entries at read time: the node key is Ed25519, whose signatures are
// deterministic, so the ledger of an entry never changes once the entry is durable
// (docs/profiles/cop.md, "COP Ledger").
func (s *Server) handleCOPLedger(w http.ResponseWriter, r *http.Request) {
	chain := r.PathValue("chain")
	h, err := s.c.Pipeline.Head(r.Context(), chain)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if h.Profile != cop.Profile {
		problem(w, http.StatusNotFound, api.CodeNotCOP, fmt.Sprintf("chain %.80q is a %s chain; a COP Ledger exists only for %s Topics", chain, h.Profile, cop.Profile), -1)
		return
	}
	if s.c.COPNode == nil {
		problem(w, http.StatusNotFound, api.CodeNoCOPNode, "this evidentd has no COP node key", -1)
		return
	}
	w.Header().Set("Content-Type", "application/jsonl")
	w.Header().Set("Cache-Control", "no-store")
	if _, err := s.writeCOPLedger(r.Context(), w, chain, h.Size); err != nil {
		// Headers are gone; the client sees a ledger shorter than the chain, which fails its check.
		s.c.Logger.Error("cop ledger failed", "chain", chain, "err", err)
	}
}

// writeCOPLedger writes the ledger records of the chain's first size entries to w and
// returns how many it wrote.
func (s *Server) writeCOPLedger(ctx context.Context, w io.Writer, chain string, size uint64) (uint64, error) {
	lw := cop.NewLedgerWriter(*s.c.COPNode)
	buf := bufio.NewWriterSize(w, 1<<16)
	var n uint64
	for n < size {
		es, err := s.c.Store.Entries(ctx, chain, store.Filter{From: n, Limit: 5000})
		if err != nil {
			return n, err
		}
		if len(es) == 0 {
			break
		}
		for _, e := range es {
			if e.Seq >= size {
				break
			}
			if e.Seq != n {
				return n, fmt.Errorf("cop ledger: entry %d where %d was expected", e.Seq, n)
			}
			line, err := lw.Append(e.Record, e.Arrival)
			if err != nil {
				return n, fmt.Errorf("cop ledger: entry %d: %w", e.Seq, err)
			}
			buf.Write(line)
			if err := buf.WriteByte('\n'); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, buf.Flush()
}

// exportCOPLedger adds a COP Topic's ledger (its first size entries) and, once per bundle,
// the node key file to a bundle. It does nothing for other profiles or without a node key.
func (s *Server) exportCOPLedger(ctx context.Context, bw *bundle.Writer, chain, profile string, size uint64, wroteKeys *bool) error {
	if profile != cop.Profile || s.c.COPNode == nil {
		return nil
	}
	lf, err := bw.Create(bundle.COPLedgerFile(bundle.ChainDir(chain)))
	if err != nil {
		return err
	}
	if n, err := s.writeCOPLedger(ctx, lf, chain, size); err != nil {
		return err
	} else if n != size {
		return fmt.Errorf("cop ledger of %s: %d records for %d entries", chain, n, size)
	}
	if *wroteKeys {
		return nil
	}
	*wroteKeys = true
	kb, err := cop.MarshalNodeKeys([]cop.NodeKey{{NodeID: s.c.COPNode.ID, KeyID: s.c.COPNode.KeyID, Public: s.c.COPNode.Signer.Public()}})
	if err != nil {
		return err
	}
	return bw.WriteFile(bundle.COPNodesFile, kb)
}
