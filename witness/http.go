package witness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/evident-log/evident/tlogwitness"
)

// Content types of the tlog-witness protocol.
const (
	ContentTypeTlogSize = tlogwitness.SizeContentType
	contentTypeText     = "text/plain; charset=utf-8"
	// ContentTypeJSON is the media type of a refusal that carries a proof of misbehaviour and
	// of GET /<hex sha256(origin)>/forks.
	ContentTypeJSON = "application/json"
)

// HeaderMisbehaviour, on a refusal that carries a proof of misbehaviour, says what
// misbehaviour.Check makes of it under the log keys the witness knows: "proven" (the log
// signed two histories) or "not-proven" (a faulty consistency proof, not a fork).
const HeaderMisbehaviour = "Evident-Misbehaviour"

// Handler serves the witness over HTTP:
//
//	POST /add-checkpoint                 C2SP tlog-witness
//	GET  /<hex sha256(origin)>/checkpoint the latest cosigned checkpoint (monitors)
//	GET  /<hex sha256(origin)>/forks      the proofs of misbehaviour kept, a JSON array of
//	                                      misbehaviour.Proof
//
// A refusal of a validly signed checkpoint that contradicts the held one (409 for the held
// size with another root, 422 for a consistency proof that does not verify) carries the
// proof of misbehaviour as its body (ContentTypeJSON, HeaderMisbehaviour); tlog-witness
// prescribes only the status.
//
//	GET  /healthz
func (w *Witness) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /add-checkpoint", w.handleAdd)
	mux.HandleFunc("GET /{id}/checkpoint", w.handleCheckpoint)
	mux.HandleFunc("GET /{id}/forks", w.handleForks)
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", contentTypeText)
		io.WriteString(rw, "ok\n")
	})
	return mux
}

// Status returns the HTTP status tlog-witness prescribes for an AddCheckpoint error.
func Status(err error) int {
	var conflict *ConflictError
	switch {
	case err == nil:
		return http.StatusOK
	case errors.As(err, &conflict), errors.Is(err, ErrSameSizeOtherRoot):
		return http.StatusConflict
	case errors.Is(err, ErrUnknownLog):
		return http.StatusNotFound
	case errors.Is(err, ErrNoTrustedSignature):
		return http.StatusForbidden
	case errors.Is(err, ErrMalformed), errors.Is(err, ErrOldSizeTooLarge):
		return http.StatusBadRequest
	case errors.Is(err, ErrBadProof):
		return http.StatusUnprocessableEntity
	default:
		return http.StatusInternalServerError
	}
}

func (w *Witness) handleAdd(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, MaxRequestSize))
	if err != nil {
		http.Error(rw, "request body too large or unreadable", http.StatusBadRequest)
		return
	}
	req, err := ParseRequest(body)
	var sigs []byte
	if err == nil {
		sigs, err = w.AddCheckpoint(r.Context(), req)
	}
	if err != nil {
		status := Status(err)
		var conflict *ConflictError
		var fork *ForkError
		if errors.As(err, &fork) {
			w.writeFork(rw, status, fork)
			return
		}
		if errors.As(err, &conflict) {
			rw.Header().Set("Content-Type", ContentTypeTlogSize)
			rw.WriteHeader(status)
			fmt.Fprintf(rw, "%d\n", conflict.Size)
			return
		}
		if status == http.StatusInternalServerError {
			w.logger.Error("add-checkpoint", "err", err)
			http.Error(rw, "internal error", status)
			return
		}
		http.Error(rw, err.Error(), status)
		return
	}
	rw.Header().Set("Content-Type", contentTypeText)
	rw.Write(sigs)
}

// writeFork answers a refused contradicting checkpoint with its proof of misbehaviour.
// Never text/x.tlog.size: that would make the log retry from the size in the body.
func (w *Witness) writeFork(rw http.ResponseWriter, status int, fork *ForkError) {
	b, err := fork.Proof.Marshal()
	if err != nil {
		w.logger.Error("writing a proof of misbehaviour", "err", err)
		http.Error(rw, fork.Error(), status)
		return
	}
	verdict := "not-proven"
	if fork.Result.Proven {
		verdict = "proven"
	}
	rw.Header().Set("Content-Type", ContentTypeJSON)
	rw.Header().Set(HeaderMisbehaviour, verdict)
	rw.WriteHeader(status)
	rw.Write(b)
}

func (w *Witness) handleCheckpoint(rw http.ResponseWriter, r *http.Request) {
	_, cp, err := w.Latest(strings.ToLower(r.PathValue("id")))
	switch {
	case errors.Is(err, ErrUnknownLog):
		http.Error(rw, "unknown log", http.StatusNotFound)
	case err != nil:
		w.logger.Error("reading checkpoint", "err", err)
		http.Error(rw, "internal error", http.StatusInternalServerError)
	case cp == nil:
		http.Error(rw, "no checkpoint cosigned yet for this log", http.StatusNotFound)
	default:
		rw.Header().Set("Content-Type", contentTypeText)
		rw.Header().Set("Cache-Control", "no-store")
		rw.Write(cp)
	}
}

func (w *Witness) handleForks(rw http.ResponseWriter, r *http.Request) {
	proofs, err := w.Forks(strings.ToLower(r.PathValue("id")))
	switch {
	case errors.Is(err, ErrUnknownLog):
		http.Error(rw, "unknown log", http.StatusNotFound)
	case err != nil:
		w.logger.Error("reading proofs of misbehaviour", "err", err)
		http.Error(rw, "internal error", http.StatusInternalServerError)
	default:
		rw.Header().Set("Content-Type", ContentTypeJSON)
		rw.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(rw).Encode(proofs)
	}
}
