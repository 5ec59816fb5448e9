package server

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/entryreceipt"
	"github.com/evident-log/evident/internal/echo"
	"github.com/evident-log/evident/receipts"
)

// entryContentTypes lists the content types an entry statement of a chain of profile may
// carry, the profile's own first. A CHAP chain also answers CHAP 0.2's, which the 0.2
// reference Coordinators name in the statements they build (audit-scitt/1.0).
func entryContentTypes(profile string) []string {
	out := []string{EntryContentType(profile)}
	if strings.HasPrefix(profile, "chap/") {
		for _, v := range []string{"0.2", "0.3"} {
			if cty := "application/chap+json;version=" + v; cty != out[0] {
				out = append(out, cty)
			}
		}
	}
	return out
}

// handleEntryReceiptObject answers GET /v1/chains/{chain}/entries/{seq}/entry-receipt: the entry
// receipt (docs/entry-receipt.md) of entry seq against the chain's latest registered seal, as
// application/json; 409 not_sealed until a seal covers the entry. ?content_type= picks the
// entry statement's content type among entryContentTypes.
func (s *Server) handleEntryReceiptObject(w http.ResponseWriter, r *http.Request) {
	chain, seq, h, ok := s.entryAt(w, r)
	if !ok {
		return
	}
	allowed := entryContentTypes(h.Profile)
	cty := allowed[0]
	if q := r.URL.Query().Get("content_type"); q != "" { // a raw ';' was refused before (observe)
		if !slices.Contains(allowed, q) {
			problem(w, http.StatusBadRequest, api.CodeBadQuery, fmt.Sprintf("content_type %s is not one of a %s chain's: %s", echo.Quote(q), h.Profile, strings.Join(allowed, ", ")), -1)
			return
		}
		cty = q
	}
	rc, top, sealed, ok := s.sealedReceipt(w, r, chain, seq)
	if !ok {
		return
	}
	e, ok := s.storedEntry(w, r, chain, seq, h.Size)
	if !ok {
		return
	}
	stmt, err := s.entryStatement(chain, cty, e)
	if err == nil {
		stmt, err = receipts.AttachReceiptsLimit(stmt, receipts.MaxEntryStatementSize, rc)
	}
	var sealTS []byte
	if err == nil {
		sealTS, err = receipts.AttachReceipts(top.Statement, top.Receipt)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out, err := (&entryreceipt.Receipt{Format: entryreceipt.Format, Chain: chain, Seq: seq,
		Statement: stmt, Seal: sealTS, Checkpoint: string(top.Checkpoint)}).Marshal()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Evident-Seal", strconv.FormatUint(top.N, 10))
	w.Header().Set("Evident-Seal-Root", sealed.Root)
	w.Header().Set("Cache-Control", "no-store")
	w.Write(out)
}
