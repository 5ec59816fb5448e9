package server

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/echo"
	"github.com/evident-log/evident/internal/evidentd/ingest"
	"github.com/evident-log/evident/internal/evidentd/scitt"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/regpolicy"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// Media types of the SCRAPI surface (draft-ietf-scitt-scrapi-11). Signed statements,
// receipts and transparent statements are all application/cose (the draft defines no
// parameters for it); the service keys, a COSE_KeySet and a COSE_Key (RFC 9052 section 7),
// are application/cbor.
const (
	COSEType = api.MediaCOSE
	CBORType = "application/cbor"
	// LegacyStatementType is still accepted on POST /entries from clients of earlier drafts.
	LegacyStatementType = "application/scitt-statement+cose"
)

// DefaultRegistrationWait is how long POST /entries waits for the log to publish a
// registration before answering 202 Accepted instead of 201 Created.
const DefaultRegistrationWait = 5 * time.Second

// SCITTConfig configures the SCITT transparency service surface.
type SCITTConfig struct {
	// Registrar registers statements (POST /entries) under the registration policy.
	Registrar *scitt.Registrar
	// Keys is the service's key history, served at /.well-known/scitt-keys and exported.
	Keys *scitt.KeyRing
	// Wait bounds how long POST /entries waits for publication (default
	// DefaultRegistrationWait); a negative value never waits.
	Wait time.Duration
	// RetryAfter is the Retry-After given with the 202 (to POST /entries) and 204 (to GET
	// /entries/{id}) answers of a pending registration (default: the log's checkpoint
	// interval rounded up to a second).
	RetryAfter time.Duration
	// PublicURL is the service's public base URL (scheme and host, optionally a path
	// prefix), used to make Location headers absolute; empty: built from each request's
	// scheme and Host.
	PublicURL string
}

// CheckPublicURL validates a public base URL for SCITTConfig.PublicURL: an absolute
// http or https URL without query or fragment. It returns the URL without a trailing slash.
func CheckPublicURL(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("public URL %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("public URL %q: want an absolute http or https URL without credentials, query or fragment", raw)
	}
	return strings.TrimSuffix(raw, "/"), nil
}

// entryURL is the absolute URL of the registration id, for Location headers: SCRAPI
// wants a valid URL there, and a relative one is not followed the same way by every client.
func (s *Server) entryURL(r *http.Request, id string) string {
	base := s.c.SCITT.PublicURL
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	return base + "/entries/" + id
}

// scittDefaults fills in the registration wait and Retry-After of a SCITT configuration that
// leaves them unset. (The SCITT routes are in the table of server.go.)
func (s *Server) scittDefaults() {
	sc := s.c.SCITT
	if sc == nil {
		return
	}
	if sc.Wait == 0 {
		sc.Wait = DefaultRegistrationWait
	}
	if sc.RetryAfter <= 0 {
		sc.RetryAfter = time.Second
	}
}

func (s *Server) retryAfter(w http.ResponseWriter) {
	secs := int((s.c.SCITT.RetryAfter + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
}

// refusalStatus maps a policy refusal code to an HTTP status.
func refusalStatus(code string) int {
	switch code {
	case regpolicy.CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case regpolicy.CodeUnknownIssuer, regpolicy.CodeUnknownKey, regpolicy.CodeNoPolicy:
		return http.StatusForbidden
	}
	return http.StatusBadRequest
}

// scittFail answers an error of the SCITT surface as a concise problem detail.
func (s *Server) scittFail(w http.ResponseWriter, r *http.Request, err error) {
	var ref *regpolicy.Refusal
	var be *bodyError
	switch {
	case errors.Is(err, errOverloaded): // the budget ran out while the body was read
		s.overloaded(w, r)
	case errors.As(err, &be):
		status, code, detail, _ := s.bodyProblem(r, be)
		conciseProblem(w, status, code, detail, r.URL.Path)
	case errors.As(err, &ref):
		conciseProblem(w, refusalStatus(ref.Code), api.ProblemCode(ref.Code), ref.Detail, r.URL.Path)
	case errors.Is(err, scitt.ErrNoRegistration), errors.Is(err, store.ErrNotFound):
		conciseProblem(w, http.StatusNotFound, api.CodeNotFound, "no registration with this id: "+echo.String(r.PathValue("id")), r.URL.Path)
	case errors.Is(err, ingest.ErrNoChain):
		conciseProblem(w, http.StatusNotFound, api.CodeNoSuchChain, err.Error(), r.URL.Path)
	case errors.Is(err, log.ErrPushback):
		s.m.pushbacks.Add(1)
		conciseProblem(w, http.StatusServiceUnavailable, api.CodePushback, "the log is busy; retry after the indicated delay", r.URL.Path)
	case errors.Is(err, errBadQuery):
		conciseProblem(w, http.StatusBadRequest, api.CodeBadQuery, err.Error(), r.URL.Path)
	case errors.Is(err, receipts.ErrEmptyPath):
		conciseProblem(w, http.StatusBadRequest, api.CodeEmptyProof, err.Error(), r.URL.Path)
	case errors.Is(err, log.ErrBeyondPublished):
		conciseProblem(w, http.StatusBadRequest, api.CodeBeyondPublished, err.Error(), r.URL.Path)
	case errors.Is(err, context.Canceled):
		conciseProblem(w, 499, api.CodeCanceled, "request canceled", r.URL.Path)
	default:
		s.c.Logger.Error("request failed", "method", echo.String(r.Method), "path", echo.String(r.URL.Path), "err", err)
		conciseProblem(w, http.StatusInternalServerError, api.CodeInternal, "internal error; see the service log", r.URL.Path)
	}
}

var errBadQuery = errors.New("bad query")

// statementTypes are the media types of a signed statement POST /entries takes: the draft's,
// then the one clients of earlier drafts send.
var statementTypes = []string{COSEType, LegacyStatementType}

// handleRegister is SCRAPI "Register Signed Statement": POST /entries with a COSE_Sign1.
func (s *Server) handleRegister(w http.ResponseWriter, r *http.Request) {
	if err := requestMediaType(r, statementTypes); err != nil {
		w.Header().Set("Accept-Post", strings.Join(statementTypes, ", "))
		conciseProblem(w, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType, err.Error(), r.URL.Path)
		return
	}
	body, err := readBody(w, r, statementBound(s))
	if err != nil {
		s.scittFail(w, r, err)
		return
	}
	reg, done, err := s.c.SCITT.Registrar.Submit(r.Context(), body)
	if err != nil {
		s.scittFail(w, r, err)
		return
	}
	w.Header().Set("Location", s.entryURL(r, reg.ID))
	if s.c.SCITT.Wait > 0 {
		t := time.NewTimer(s.c.SCITT.Wait)
		defer t.Stop()
		select {
		case <-done:
			got, err := s.c.SCITT.Registrar.Lookup(r.Context(), reg.ID)
			if err != nil {
				s.scittFail(w, r, err)
				return
			}
			rcpt, err := s.c.SCITT.Registrar.Receipt(r.Context(), got)
			if err != nil {
				s.scittFail(w, r, err)
				return
			}
			writeCOSE(w, http.StatusCreated, COSEType, rcpt)
			return
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	}
	// draft-ietf-scitt-scrapi-11 section 2.3.2: 202 Accepted, Location (the registration's
	// locator, to poll), Retry-After, no body. Not a redirect: a client that follows
	// redirects stops here instead of looping on the locator.
	s.pending(w, http.StatusAccepted)
}

// pending answers a registration that waits for a checkpoint, with Retry-After and no
// body: 202 Accepted to POST /entries (with the Location its caller set), 204 No Content
// to GET /entries/{id} (draft-ietf-scitt-scrapi-11 section 2.4.2). Neither is cached.
func (s *Server) pending(w http.ResponseWriter, status int) {
	s.retryAfter(w)
	w.Header().Set("Cache-Control", "no-store")
	if status != http.StatusNoContent { // a 204 has no Content-Length (RFC 9110 section 8.6)
		w.Header().Set("Content-Length", "0")
	}
	w.WriteHeader(status)
}

func writeCOSE(w http.ResponseWriter, status int, ct string, b []byte) {
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// validID accepts a registration id: 64 lowercase hex digits (a log entry).
func validID(id string) bool {
	if len(id) != 64 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}

// lookup finds a registration for GET /entries/{id}…; false when it answered already.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) (*store.Registration, bool) {
	id := r.PathValue("id")
	if !validID(id) {
		conciseProblem(w, http.StatusBadRequest, api.CodeBadID, "a registration id is the 64 hex digits of its log entry", r.URL.Path)
		return nil, false
	}
	reg, err := s.c.SCITT.Registrar.Lookup(r.Context(), id)
	if err != nil {
		s.scittFail(w, r, err)
		return nil, false
	}
	if !reg.Registered {
		// draft-ietf-scitt-scrapi-11 section 2.4.2: 204 No Content with Retry-After while
		// the registration runs (no Location: there is nowhere else to go).
		s.pending(w, http.StatusNoContent)
		return nil, false
	}
	w.Header().Set("Location", s.entryURL(r, id))
	return reg, true
}

// handleRegistration is SCRAPI "Resolve Receipt" (draft-ietf-scitt-scrapi-11 section
// 2.4): 204 No Content while the statement waits for a checkpoint, then 200 with its
// receipt — under the service's current key (Registrar.Receipt), also after a rotation.
func (s *Server) handleRegistration(w http.ResponseWriter, r *http.Request) {
	reg, ok := s.lookup(w, r)
	if !ok {
		return
	}
	rcpt, err := s.c.SCITT.Registrar.Receipt(r.Context(), reg)
	if err != nil {
		s.scittFail(w, r, err)
		return
	}
	writeCOSE(w, http.StatusOK, COSEType, rcpt)
}

// handleTransparent serves the transparent statement: the registered statement with its
// receipts in header 394 — the receipt of its registration (under the current key, as GET
// /entries/{id} serves it) and, when the log has grown since, a fresh one cut from the
// latest checkpoint (several receipts, one statement).
func (s *Server) handleTransparent(w http.ResponseWriter, r *http.Request) {
	reg, ok := s.lookup(w, r)
	if !ok {
		return
	}
	cur, err := s.c.SCITT.Registrar.Receipt(r.Context(), reg)
	if err != nil {
		s.scittFail(w, r, err)
		return
	}
	rcpts := [][]byte{cur}
	svc := s.c.SCITT.Registrar.Service()
	if cp, err := svc.Log().Checkpoint(r.Context()); err == nil {
		if c, err := log.VerifyCheckpoint(cp, svc.Log().VerifierKey()); err == nil && c.Size > 0 {
			if old, err := receipts.ParseReceipt(cur); err == nil && len(old.Inclusion) == 1 && old.Inclusion[0].TreeSize < c.Size {
				if fresh, err := svc.Receipt(r.Context(), reg.LogIndex, cp); err == nil {
					rcpts = append(rcpts, fresh)
				}
			}
		}
	}
	ts, err := receipts.AttachReceipts(reg.Statement, rcpts...)
	if err != nil {
		s.scittFail(w, r, err)
		return
	}
	writeCOSE(w, http.StatusOK, COSEType, ts)
}

// handleKeySet serves the COSE_KeySet of every statement and receipt key, retired ones kept.
func (s *Server) handleKeySet(w http.ResponseWriter, r *http.Request) {
	ks, err := s.c.SCITT.Keys.KeySet()
	if err != nil {
		s.scittFail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "max-age=300")
	writeCOSE(w, http.StatusOK, CBORType, ks)
}

// handleKey serves one COSE_Key by its RFC 9679 kid (base64url without padding, or hex).
func (s *Server) handleKey(w http.ResponseWriter, r *http.Request) {
	v := r.PathValue("kid")
	kid, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(kid) != 32 {
		kid, err = hex.DecodeString(v)
	}
	if err != nil || len(kid) != 32 {
		conciseProblem(w, http.StatusBadRequest, api.CodeBadKid, "a kid is a 32-byte RFC 9679 thumbprint in base64url (or hex)", r.URL.Path)
		return
	}
	k, ok := s.c.SCITT.Keys.Key(kid)
	if !ok {
		conciseProblemTitled(w, http.StatusNotFound, TitleNoSuchKey, api.CodeNotFound, "no service key has this kid", r.URL.Path)
		return
	}
	w.Header().Set("Cache-Control", "max-age=3600")
	writeCOSE(w, http.StatusOK, CBORType, k)
}

func sizes(r *http.Request) (uint64, uint64, error) {
	from, err := queryUint(r, "from", 0)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %v", errBadQuery, err)
	}
	to, err := queryUint(r, "to", 0)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %v", errBadQuery, err)
	}
	if from == 0 || to < from {
		return 0, 0, fmt.Errorf("%w: need 0 < from < to (from=%d, to=%d)", errBadQuery, from, to)
	}
	if from == to {
		return 0, 0, fmt.Errorf("%w: from = to = %d: a tree is consistent with itself (compare the two roots), and an RFC 9942 consistency path is never empty", receipts.ErrEmptyPath, from)
	}
	return from, to, nil
}

// handleLogConsistency answers an RFC 9942 consistency receipt (396 / -2) between two
// sizes of the transparency log, signed over the root of the larger tree.
func (s *Server) handleLogConsistency(w http.ResponseWriter, r *http.Request) {
	from, to, err := sizes(r)
	if err != nil {
		s.scittFail(w, r, err)
		return
	}
	rc, err := s.LogConsistencyReceipt(r.Context(), from, to)
	if err != nil {
		s.scittFail(w, r, err)
		return
	}
	writeCOSE(w, http.StatusOK, api.MediaCOSESign1, rc)
}

// LogConsistencyReceipt builds the consistency receipt of the log between sizes from and
// to (0 < from < to <= the published size; from = to is refused with receipts.ErrEmptyPath).
func (s *Server) LogConsistencyReceipt(ctx context.Context, from, to uint64) ([]byte, error) {
	l := s.c.Service.Log()
	cp, err := l.Checkpoint(ctx)
	if err != nil {
		return nil, err
	}
	c, err := log.VerifyCheckpoint(cp, l.VerifierKey())
	if err != nil {
		return nil, err
	}
	if to > c.Size {
		return nil, fmt.Errorf("%w: size %d, published %d", log.ErrBeyondPublished, to, c.Size)
	}
	root := c.Hash
	var note []byte
	if to == c.Size {
		note = cp
	} else {
		entry, err := l.Entry(ctx, to-1)
		if err != nil {
			return nil, err
		}
		path, err := l.InclusionProof(ctx, to-1, to)
		if err != nil {
			return nil, err
		}
		if root, err = proof.RootFromInclusionProof(rfc6962.DefaultHasher, to-1, to, log.LeafHash(entry), path); err != nil {
			return nil, err
		}
	}
	path, err := l.ConsistencyProof(ctx, from, to)
	if err != nil {
		return nil, err
	}
	rs, err := receipts.SignRoot(s.c.Service.Signer(), receipts.Claims{Issuer: s.c.Service.Issuer(), Subject: l.Origin(), IssuedAt: time.Now().Unix()}, root)
	if err != nil {
		return nil, err
	}
	return receipts.NewConsistencyReceipt(rs, receipts.ConsistencyProof{Size1: from, Size2: to, Path: path}, note)
}

// MaxChainConsistency bounds the chain size a consistency receipt is computed for (the
// proof is built from the chain's links, read from the store).
const MaxChainConsistency = 1 << 22

// handleChainConsistency answers a consistency receipt between two sizes of a chain's
// Merkle tree (leaves: the chain's links), signed by the service over the larger root
// with sub = the chain id.
func (s *Server) handleChainConsistency(w http.ResponseWriter, r *http.Request) {
	chain := r.PathValue("chain")
	from, to, err := sizes(r)
	if err != nil {
		s.scittFail(w, r, err)
		return
	}
	h, err := s.c.Pipeline.Head(r.Context(), chain)
	if err != nil {
		s.scittFail(w, r, err)
		return
	}
	if to > h.Size || to > MaxChainConsistency {
		s.scittFail(w, r, fmt.Errorf("%w: to=%d beyond the chain's size %d (or the limit %d)", errBadQuery, to, h.Size, MaxChainConsistency))
		return
	}
	rc, err := s.ChainConsistencyReceipt(r.Context(), chain, from, to)
	if err != nil {
		s.scittFail(w, r, err)
		return
	}
	writeCOSE(w, http.StatusOK, api.MediaCOSESign1, rc)
}

// ChainConsistencyReceipt builds the consistency receipt of chain between sizes from and to.
func (s *Server) ChainConsistencyReceipt(ctx context.Context, chain string, from, to uint64) ([]byte, error) {
	rc, err := s.ex.ChainConsistencyReceipt(ctx, chain, from, to)
	if errors.Is(err, ledger.ErrShortChain) {
		return nil, fmt.Errorf("%w: chain %s has fewer than %d entries", errBadQuery, echo.Quote(chain), to)
	}
	return rc, err
}
