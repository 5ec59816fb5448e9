package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/evidentd/export"
	"github.com/evident-log/evident/internal/evidentd/ingest"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// errNotSealed means no registered seal covers the entry yet.
var errNotSealed = export.ErrNotSealed

// handleEntryReceipt answers GET /v1/chains/{chain}/entries/{seq}/receipt: an RFC 9942
// inclusion receipt (COSE, application/cose) proving that entry seq's link sits at seq in
// the chain tree whose root the chain's latest registered seal commits to. An entry after the
// latest seal answers 409 not_sealed: seal, then ask again.
func (s *Server) handleEntryReceipt(w http.ResponseWriter, r *http.Request) {
	chain, seq, _, ok := s.entryAt(w, r)
	if !ok {
		return
	}
	rc, top, sealed, ok := s.sealedReceipt(w, r, chain, seq)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", `application/cose; cose-type="cose-sign1"`)
	w.Header().Set("Evident-Seal", strconv.FormatUint(top.N, 10))
	w.Header().Set("Evident-Seal-Root", sealed.Root)
	w.Header().Set("Cache-Control", "no-store")
	w.Write(rc)
}

// entryAt reads the {chain} and {seq} of an entry's path and the chain's head. When seq is not
// a number, or the chain does not hold that entry, it answers the problem itself and ok is false.
func (s *Server) entryAt(w http.ResponseWriter, r *http.Request) (chain string, seq uint64, h ingest.Head, ok bool) {
	chain = r.PathValue("chain")
	seq, err := parseNumber("seq", r.PathValue("seq"))
	if err != nil {
		problem(w, http.StatusBadRequest, api.CodeBadQuery, err.Error(), -1)
		return chain, 0, h, false
	}
	if h, err = s.c.Pipeline.Head(r.Context(), chain); err != nil {
		s.fail(w, r, err)
		return chain, seq, h, false
	}
	if seq >= h.Size {
		problem(w, http.StatusNotFound, api.CodeNoSuchEntry, fmt.Sprintf("chain %s has %d entries", chain, h.Size), -1)
		return chain, seq, h, false
	}
	return chain, seq, h, true
}

// sealedReceipt cuts the chain receipt of entry seq under the chain's latest registered seal;
// when there is none covering it (409 not_sealed) or it fails, it answers itself and ok is false.
func (s *Server) sealedReceipt(w http.ResponseWriter, r *http.Request, chain string, seq uint64) ([]byte, *store.Seal, ledger.Seal, bool) {
	rc, top, sealed, err := s.ex.EntryReceipt(r.Context(), chain, seq)
	if errors.Is(err, errNotSealed) {
		problem(w, http.StatusConflict, api.CodeNotSealed, fmt.Sprintf("entry %d is not covered by a registered seal yet: POST /v1/chains/%s/seal, then ask again", seq, chain), -1)
		return nil, nil, ledger.Seal{}, false
	}
	if err != nil {
		s.fail(w, r, err)
		return nil, nil, ledger.Seal{}, false
	}
	return rc, top, sealed, true
}
