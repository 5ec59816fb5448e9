package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/receipts"
)

// EntryContentType is the COSE content type of an entry statement's payload for a profile:
// "chap/0.3" → "application/chap+json;version=0.3".
func EntryContentType(profile string) string {
	name, version, _ := strings.Cut(profile, "/")
	return "application/" + name + "+json;version=" + version
}

// EntryStatement is the entry statement (docs/scitt.md, "Entry statements"): a COSE_Sign1 by the service with
// iss = the service, sub = the chain, iat = the entry's arrival, protected seq (-70001) and
// prev link (-70002), payload = the record's canonical bytes. It is a deterministic function
// of (record, chain, seq, prev, arrival, key), so it is signed on demand and every request
// gets the same bytes. link(seq) = SHA-256(payload ‖ prev) ties it to the chain.
func (s *Server) EntryStatement(chain, profile string, e store.Entry) ([]byte, error) {
	return s.entryStatement(chain, EntryContentType(profile), e)
}

// entryStatement is EntryStatement with content type cty.
func (s *Server) entryStatement(chain, cty string, e store.Entry) ([]byte, error) {
	return receipts.SignStatement(s.c.Service.Signer(), e.Record, receipts.StatementOptions{
		Claims:      receipts.Claims{Issuer: s.c.Service.Issuer(), Subject: chain, IssuedAt: e.Arrival.Unix()},
		ContentType: cty,
		MaxSize:     receipts.MaxEntryStatementSize,
		Protected:   map[int64]any{receipts.HeaderSeq: e.Seq, receipts.HeaderPrev: e.Prev.String()},
	})
}

// handleEntryStatement answers GET /v1/chains/{chain}/entries/{seq}/statement with the
// entry statement (application/cose). When a registered seal covers the entry, the answer is
// the transparent statement: the chain receipt of the entry's link against that seal's root
// rides in header 394 (Evident-Sealed: true); otherwise the bare statement (Evident-Sealed: false).
func (s *Server) handleEntryStatement(w http.ResponseWriter, r *http.Request) {
	chain, seq, h, ok := s.entryAt(w, r)
	if !ok {
		return
	}
	e, ok := s.storedEntry(w, r, chain, seq, h.Size)
	if !ok {
		return
	}
	stmt, err := s.EntryStatement(chain, h.Profile, e)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sealed := "false"
	rc, top, sp, err := s.ex.EntryReceipt(r.Context(), chain, seq)
	switch {
	case errors.Is(err, errNotSealed):
	case err != nil:
		s.fail(w, r, err)
		return
	default:
		if stmt, err = receipts.AttachReceiptsLimit(stmt, receipts.MaxEntryStatementSize, rc); err != nil {
			s.fail(w, r, err)
			return
		}
		sealed = "true"
		w.Header().Set("Evident-Seal", strconv.FormatUint(top.N, 10))
		w.Header().Set("Evident-Seal-Root", sp.Root)
	}
	w.Header().Set("Evident-Sealed", sealed)
	w.Header().Set("Evident-Link", ledger.Link(e.Link).String())
	w.Header().Set("Content-Type", `application/cose; cose-type="cose-sign1"`)
	w.Header().Set("Cache-Control", "no-store")
	w.Write(stmt)
}

// storedEntry reads entry seq of chain (which holds size entries) from the store; when it is
// not there it answers the problem itself and ok is false.
func (s *Server) storedEntry(w http.ResponseWriter, r *http.Request, chain string, seq, size uint64) (store.Entry, bool) {
	es, err := s.c.Store.Entries(r.Context(), chain, store.Filter{From: seq, Limit: 1})
	if err != nil {
		s.fail(w, r, err)
		return store.Entry{}, false
	}
	if len(es) == 0 || es[0].Seq != seq {
		problem(w, http.StatusNotFound, api.CodeNoSuchEntry, fmt.Sprintf("chain %s has %d entries", chain, size), -1)
		return store.Entry{}, false
	}
	return es[0], true
}
