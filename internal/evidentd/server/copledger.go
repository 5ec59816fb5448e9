package server

import (
	"fmt"
	"net/http"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/echo"
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
		problem(w, http.StatusNotFound, api.CodeNotCOP, fmt.Sprintf("chain %s is a %s chain; a COP Ledger exists only for %s Topics", echo.Quote(chain), h.Profile, cop.Profile), -1)
		return
	}
	if s.c.COPNode == nil {
		problem(w, http.StatusNotFound, api.CodeNoCOPNode, "this evidentd has no COP node key", -1)
		return
	}
	w.Header().Set("Content-Type", "application/jsonl")
	w.Header().Set("Cache-Control", "no-store")
	if _, err := s.ex.COPLedger(r.Context(), w, chain, h.Size); err != nil {
		// Headers are gone; the client sees a ledger shorter than the chain, which fails its check.
		s.streamFailed(r, "cop ledger failed", "chain", chain, "err", err)
	}
}
