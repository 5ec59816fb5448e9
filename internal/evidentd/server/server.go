// Package server is evidentd's HTTP surface: evidence ingest and seals under
// /v1/chains, offline bundles under /v1/export, the tile log under /log/, and operations
// endpoints. Bodies are the wire types of package api; refusals are RFC 9457 problem details
// carrying a stable api.ProblemCode (a record refusal passes the ledger's code through).
//
// Writes are authenticated with bearer tokens scoped to chain-id prefixes; with no token
// configured, writes are accepted from loopback clients only.
package server

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/echo"
	"github.com/evident-log/evident/internal/evidentd/export"
	"github.com/evident-log/evident/internal/evidentd/ingest"
	"github.com/evident-log/evident/internal/evidentd/scitt"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile"
	"github.com/evident-log/evident/log"
)

// Defaults for request bounds.
const (
	DefaultMaxBody     = 64 << 20 // bytes per ingest request
	DefaultMaxBatch    = 10000    // records per ingest request
	DefaultSealTimeout = 30 * time.Second
)

// Token grants writes to chains whose id starts with Prefix ("" = all chains).
type Token struct {
	Secret string
	Prefix string
	// Operator is the identity of whoever holds the token (e.g. "operator:chieflab-post@acme"),
	// passed to the profile as ledger.Position.Submitter; ChiefLab records it in every entry.
	Operator string
}

// Config configures the HTTP surface.
type Config struct {
	Pipeline *ingest.Pipeline
	Store    store.Store
	Service  *scitt.Service
	Tokens   []Token
	// ClientCerts, when set, authorizes writes by verified TLS client certificates (mTLS; the
	// listener verifies them against the configured CA): see ClientCertScope.
	ClientCerts bool
	MaxBody     int64
	MaxBatch    int
	// MaxInFlight bounds the request body bytes held at once across every request
	// (--max-inflight-bytes, inflight.go); 0 takes DefaultInFlightBodies × MaxBody.
	MaxInFlight int64
	// WriteTimeout, when set, is how long one write of a response may go without progress:
	// each write moves the connection's write deadline to that far ahead, so a response is
	// cut when its client stops reading, never for being long (an export of any size streams
	// as long as it is read). Zero leaves the deadline to the http.Server.
	WriteTimeout time.Duration
	// Limits are the record limits (--max-depth, --max-record-bytes) a record must keep to;
	// zero fields take canonical.DefaultLimits.
	Limits canonical.Limits
	// PacketBound says the size limit is the database's (its max_allowed_packet), below
	// --max-record-bytes: a refusal then names that as what to raise.
	PacketBound bool
	SealTimeout time.Duration
	Producer    string // written into bundles, e.g. "evidentd v0.1.0"
	Logger      *slog.Logger
	// AccessLog logs one line per request at Info: method, path, status, bytes, duration,
	// remote address.
	AccessLog bool
	// SCITT configures SCRAPI (POST /entries, /.well-known/scitt-keys, consistency
	// receipts): scrapi.go. Nil serves none of it.
	SCITT *SCITTConfig
	// Extensions are the profiles' extensions (ledger/profile/service): their routes are
	// served below each chain of their profile and their files exported with it
	// (extension.go). CheckExtensions tells whether they fit beside evidentd's own routes.
	Extensions []profile.Extension
	// Profiles is the registry of the served profiles; the HTTP status each of their codes
	// declares (ledger.CodeDoc.HTTP) is the status of a record refused with it. Nil is
	// profile.Default().
	Profiles *profile.Registry
	// Metrics are served at GET /metrics besides the server's own (e.g. the witness refusals
	// the daemon counts).
	Metrics []prometheus.Collector
}

// Server serves evidentd's HTTP API.
type Server struct {
	c        Config
	mux      *http.ServeMux
	handler  http.Handler // mux behind the access log and the request metrics
	m        *metrics
	ex       *export.Exporter
	inflight *inflight           // request body bytes held at once (inflight.go)
	openAPI  []byte              // the OpenAPI description, the extensions' routes included
	statuses map[ledger.Code]int // the HTTP status the profiles declare for their codes
}

// route is one route of the API: a ServeMux pattern, its handler, and when it is served.
type route struct {
	pattern string                     // "METHOD /path/{wildcard}", as http.ServeMux takes it
	handler func(*Server) http.Handler // the handler, built once by New
	when    func(*Server) bool         // nil: always served
}

// routes is the table of every route evidentd serves: New registers it on the mux, and a
// test checks it against the OpenAPI description (api/openapi.json). Adding a route is one
// line here and one path in the description.
func routes() []route {
	return []route{
		{ingestRoute, write(consumes(ingestTypes, takesBody((*Server).handleIngest, ingestBound))), nil},
		{"POST /v1/chains/{chain}/seal", write((*Server).handleSeal), nil},
		{"POST /v1/chains/{chain}/evidence-head", write(consumes(evidenceHeadTypes, takesBody((*Server).handleEvidenceHead, evidenceHeadBound))), nil},
		{"GET /v1/chains", read((*Server).handleChains), nil},
		{"GET /v1/chains/{chain}", read((*Server).handleHead), nil},
		{"GET /v1/chains/{chain}/entries", read((*Server).handleEntries), nil},
		{"GET /v1/chains/{chain}/entries/{seq}/receipt", read((*Server).handleEntryReceipt), nil},
		{"GET /v1/chains/{chain}/entries/{seq}/statement", read((*Server).handleEntryStatement), nil},
		{"GET /v1/chains/{chain}/entries/{seq}/entry-receipt", read((*Server).handleEntryReceiptObject), nil},
		{"GET /v1/chains/{chain}/seals", read((*Server).handleSeals), nil},
		{"GET /v1/chains/{chain}/consistency", read((*Server).handleChainConsistency), hasSCITT},
		{"GET /v1/log/consistency", read((*Server).handleLogConsistency), hasSCITT},
		{"GET /v1/export", read((*Server).handleExport), nil},
		{"GET /v1/openapi.json", read((*Server).handleOpenAPI), nil},
		{"GET /log/", (*Server).handleTiles, nil},
		{"GET /log/vkey", read((*Server).handleLogVKey), nil},
		{"GET /log/mldsa.vkey", read((*Server).handleLogMLDSAVKey), nil},
		{"GET /.well-known/evident-trust", read((*Server).handleTrustFile), nil},
		{"POST /entries", read(takesBody((*Server).handleRegister, statementBound)), hasRegistrar},
		{"GET /entries/{id}", read((*Server).handleRegistration), hasRegistrar},
		{"GET /entries/{id}/statement", read((*Server).handleTransparent), hasRegistrar},
		{"GET /.well-known/scitt-keys", read((*Server).handleKeySet), hasKeys},
		{"GET /.well-known/scitt-keys/{kid}", read((*Server).handleKey), hasKeys},
		{"GET /healthz", read((*Server).handleHealth), nil},
		{"GET /readyz", read((*Server).handleReady), nil},
		{"GET /metrics", func(s *Server) http.Handler { return s.m.handler(s.c.Logger) }, nil},
	}
}

type handlerMethod = func(*Server, http.ResponseWriter, *http.Request)

// read serves a route as it is; write puts it behind the write authorization.
func read(h handlerMethod) func(*Server) http.Handler {
	return func(s *Server) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(s, w, r) })
	}
}

func write(h handlerMethod) func(*Server) http.Handler {
	return func(s *Server) http.Handler {
		return s.write(func(w http.ResponseWriter, r *http.Request) { h(s, w, r) })
	}
}

func hasSCITT(s *Server) bool     { return s.c.SCITT != nil }
func hasRegistrar(s *Server) bool { return s.c.SCITT != nil && s.c.SCITT.Registrar != nil }
func hasKeys(s *Server) bool      { return s.c.SCITT != nil && s.c.SCITT.Keys != nil }

// New returns the HTTP handler of evidentd.
func New(c Config) *Server {
	c.defaults()
	var keys *scitt.KeyRing
	if c.SCITT != nil {
		keys = c.SCITT.Keys
	}
	ex := export.New(export.Config{Pipeline: c.Pipeline, Store: c.Store, Service: c.Service, Keys: keys, Extensions: c.Extensions, Profiles: c.Profiles, Producer: c.Producer})
	s := &Server{c: c, mux: http.NewServeMux(), ex: ex, inflight: &inflight{limit: c.MaxInFlight}, statuses: map[ledger.Code]int{}}
	for _, pc := range c.Profiles.Codes() {
		if pc.HTTP != 0 {
			s.statuses[pc.Code] = pc.HTTP
		}
	}
	s.m = newMetrics(s.logSize, s.conflictRetries, append(s.groupCommitMetrics(), append(s.inflightMetrics(), c.Metrics...)...)...)
	s.scittDefaults()
	desc, err := Describe(c.Extensions)
	if err != nil {
		panic(err) // api/openapi.json is embedded and tested
	}
	s.openAPI = desc
	for _, rt := range append(routes(), extensionRoutes(c.Extensions)...) {
		if rt.when == nil || rt.when(s) {
			s.mux.Handle(rt.pattern, rt.handler(s))
		}
	}
	s.handler = s.observe(s.mux)
	return s
}

// defaults fills in the bounds and logger left unset; a batch bound below one record is
// unset too (splitBody would refuse every body with it).
func (c *Config) defaults() {
	if c.Profiles == nil {
		c.Profiles = profile.Default()
	}
	if c.MaxBody == 0 {
		c.MaxBody = DefaultMaxBody
	}
	if c.MaxBatch < 1 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultInFlightBodies * c.MaxBody
	}
	if c.SealTimeout == 0 {
		c.SealTimeout = DefaultSealTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") }

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", api.MediaJSON)
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Write(s.openAPI)
}

// write wraps a handler that changes state with the authentication check.
func (s *Server) write(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		chain := r.PathValue("chain")
		if err := validChainID(chain); err != nil {
			problem(w, http.StatusBadRequest, api.CodeInvalidChainID, err.Error(), -1)
			return
		}
		if !s.authorized(r, chain) {
			if len(s.c.Tokens) == 0 && !s.c.ClientCerts {
				problem(w, http.StatusForbidden, api.CodeForbidden, "no token is configured: writes are accepted from loopback only", -1)
			} else {
				w.Header().Set("WWW-Authenticate", `Bearer realm="evidentd"`)
				problem(w, http.StatusUnauthorized, api.CodeUnauthorized, "a bearer token scoped to this chain is required", -1)
			}
			return
		}
		if op := s.operator(r, chain); op != "" {
			r = r.WithContext(ingest.WithSubmitter(r.Context(), op))
		}
		h(w, r)
	}
}

// operator returns the Operator of the token authorizing r for chain ("" when none).
func (s *Server) operator(r *http.Request, chain string) string {
	secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	for _, t := range s.c.Tokens {
		if constantTimeEqual(t.Secret, secret) && strings.HasPrefix(chain, t.Prefix) {
			return t.Operator
		}
	}
	return ""
}

func (s *Server) authorized(r *http.Request, chain string) bool {
	if s.c.ClientCerts && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		if prefixes := ClientCertScope(r.TLS.VerifiedChains[0][0]); len(prefixes) == 0 || slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(chain, p) }) {
			return true
		}
	}
	if len(s.c.Tokens) == 0 && !s.c.ClientCerts {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			return false
		}
		ip := net.ParseIP(host)
		return ip != nil && ip.IsLoopback()
	}
	auth := r.Header.Get("Authorization")
	secret, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		return false
	}
	for _, t := range s.c.Tokens {
		if constantTimeEqual(t.Secret, secret) && strings.HasPrefix(chain, t.Prefix) {
			return true
		}
	}
	return false
}

// ChainScopeURIPrefix starts the URI SANs that scope a client certificate to chain-id
// prefixes: "urn:evident:chains:wsp_" allows writes to chains whose id starts with "wsp_".
const ChainScopeURIPrefix = "urn:evident:chains:"

// ClientCertScope returns the chain-id prefixes a verified client certificate may write to;
// none (no such URI SAN) means every chain.
func ClientCertScope(cert *x509.Certificate) []string {
	var out []string
	for _, u := range cert.URIs {
		if p, ok := strings.CutPrefix(u.String(), ChainScopeURIPrefix); ok {
			out = append(out, p)
		}
	}
	return out
}

// validChainID accepts 1–256 bytes of printable ASCII without '/', spaces or controls.
func validChainID(id string) error {
	if id == "" || len(id) > 256 {
		return errors.New("a chain id is 1 to 256 characters")
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c <= ' ' || c >= 0x7f || c == '/' || c == '\\' || c == '%' {
			return fmt.Errorf("chain id %s: only printable ASCII without spaces, '/', '\\' or '%%'", echo.Quote(id))
		}
	}
	return nil
}

// retryAfterUnavailable is the Retry-After, in seconds, of a 503 answer that sets none.
const retryAfterUnavailable = "1"

// retryable gives a 503 answer a Retry-After when it has none: every 503 evidentd sends
// is temporary (the log pushed back, a writer contended, a wait timed out, not ready yet),
// and says when to try again.
func retryable(w http.ResponseWriter, status int) {
	if status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", retryAfterUnavailable)
	}
}

// problem writes an RFC 9457 problem detail; index >= 0 names the refused record.
func problem(w http.ResponseWriter, status int, code api.ProblemCode, detail string, index int) {
	problemLimit(w, status, code, detail, index, nil)
}

// maxDetail bounds a problem's detail. The parts of a detail that repeat what the client sent
// are bounded where they are written (echo.String, echo.Quote); this bounds the whole, whoever
// wrote it (a profile's refusal, an error of a package below).
const maxDetail = 2048

// problemLimit is problem naming the limit the request went past (nil: none).
func problemLimit(w http.ResponseWriter, status int, code api.ProblemCode, detail string, index int, limit *api.ProblemLimit) {
	retryable(w, status)
	detail = echo.Cut(detail, maxDetail)
	if limit != nil {
		detail += fmt.Sprintf(" (evidentd's %s limit is %d: raise it with %s or %s and send it again)", limit.Name, limit.Value, limit.Flag, limit.Env)
	}
	p := api.Problem{Type: code.Type(), Title: http.StatusText(status), Status: status, Detail: detail, Code: code, Limit: limit}
	if index >= 0 {
		p.Index = &index
	}
	w.Header().Set("Content-Type", api.MediaProblem)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(p)
}

// fail maps an error to a problem detail.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var re *ledger.RecordError
	var be *bodyError
	switch {
	case errors.Is(err, errOverloaded): // the budget ran out while the body was read
		s.overloaded(w, r)
	case errors.As(err, &be):
		status, code, detail, limit := s.bodyProblem(r, be)
		problemLimit(w, status, code, detail, -1, limit)
	case errors.As(err, &re):
		status := http.StatusUnprocessableEntity
		switch re.Code {
		case ledger.CodeMalformed, ledger.CodeNumber, ledger.CodeBadTimestamp, ledger.CodeSignatureFormat:
			status = http.StatusBadRequest
		case ledger.CodeTooLarge:
			status = http.StatusRequestEntityTooLarge
		case ledger.CodeFork, ledger.CodePrevMismatch, ledger.CodeIDReused, ledger.CodeClosed, ledger.CodeProfileMismatch:
			status = http.StatusConflict
		default:
			if st, ok := s.statuses[re.Code]; ok { // a profile's own refusal, with the status it declares
				status = st
			}
		}
		problemLimit(w, status, api.LedgerCode(re.Code), re.Detail, re.Index, s.recordLimit(re))
	case errors.Is(err, ingest.ErrNoChain):
		problem(w, http.StatusNotFound, api.CodeNoSuchChain, err.Error(), -1)
	case errors.Is(err, ingest.ErrUnknownProfile):
		problem(w, http.StatusBadRequest, api.CodeUnknownProfile, err.Error(), -1)
	case errors.Is(err, log.ErrPushback):
		s.m.pushbacks.Add(1)
		problem(w, http.StatusServiceUnavailable, api.CodePushback, "the log is busy; retry after the indicated delay", -1)
	case errors.Is(err, store.ErrConflict):
		problem(w, http.StatusServiceUnavailable, api.CodeConcurrentWriter, "the chain is busy with other writers; retry after the indicated delay", -1)
	case errors.Is(err, context.DeadlineExceeded):
		problem(w, http.StatusServiceUnavailable, api.CodeTimeout, "the operation did not finish in time; it will complete in the background", -1)
	case errors.Is(err, context.Canceled):
		problem(w, 499, api.CodeCanceled, "request canceled", -1)
	default:
		s.c.Logger.Error("request failed", "method", echo.String(r.Method), "path", echo.String(r.URL.Path), "err", err)
		problem(w, http.StatusInternalServerError, api.CodeInternal, "internal error; see the service log", -1)
	}
}

// recordLimit returns the record limit (Config.Limits: evidentd's --max-depth and
// --max-record-bytes) a refusal went past, nil when it went past none.
func (s *Server) recordLimit(err error) *api.ProblemLimit {
	var ce *canonical.Error
	if !errors.As(err, &ce) || ce.Limit == 0 {
		return nil
	}
	l := s.c.Limits.OrDefault()
	switch {
	case errors.Is(ce, canonical.ErrTooDeep) && ce.Limit == l.MaxDepth:
		return &api.ProblemLimit{Name: api.LimitMaxDepth, Value: int64(l.MaxDepth), Flag: "--max-depth", Env: "EVIDENT_MAX_DEPTH"}
	case errors.Is(ce, canonical.ErrTooLarge) && ce.Limit == l.MaxSize && s.c.PacketBound:
		return &api.ProblemLimit{Name: api.LimitMaxRecordBytes, Value: int64(l.MaxSize), Flag: "the database's max_allowed_packet", Env: "SET GLOBAL max_allowed_packet (then restart evidentd)"}
	case errors.Is(ce, canonical.ErrTooLarge) && ce.Limit == l.MaxSize:
		return &api.ProblemLimit{Name: api.LimitMaxRecordBytes, Value: int64(l.MaxSize), Flag: "--max-record-bytes", Env: "EVIDENT_MAX_RECORD_BYTES"}
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", api.MediaJSON)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func (s *Server) handleHead(w http.ResponseWriter, r *http.Request) {
	h, err := s.c.Pipeline.Head(r.Context(), r.PathValue("chain"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ChainHead{Chain: h.Chain, Profile: h.Profile, Size: h.Size, Head: h.Head, Root: h.Root,
		Closed: h.Closed, LastSeal: h.LastSeal, SealedSize: h.SealedSize})
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	// A store that can take no more commits (the embedded store after a failed write or
	// fsync of its log) is not ready, whatever the log says.
	if st, ok := s.c.Store.(interface{ Err() error }); ok {
		if err := st.Err(); err != nil {
			problem(w, http.StatusServiceUnavailable, api.CodeNotReady, "ledger store: "+err.Error(), -1)
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if _, err := s.c.Service.Log().Checkpoint(ctx); err != nil {
		problem(w, http.StatusServiceUnavailable, api.CodeNotReady, "no checkpoint published yet", -1)
		return
	}
	io.WriteString(w, "ready\n")
}

// maxNumber is the largest number a query or path parameter takes (2^63 - 1): every seq,
// size and count evidentd keeps is a signed 64-bit integer in its stores, so a larger one
// names nothing there.
const maxNumber = math.MaxInt64

// queryUint reads the query parameter key as a number 0..maxNumber (def when absent).
func queryUint(r *http.Request, key string, def uint64) (uint64, error) {
	v := r.URL.Query().Get(key)
	if v == "" {
		return def, nil
	}
	return parseNumber("query parameter "+key, v)
}

// parseNumber reads v, the value of the request's parameter name, as a number 0..maxNumber;
// its error is the detail of a bad_query problem.
func parseNumber(name, v string) (uint64, error) {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%s: %s is not a non-negative integer", name, echo.Quote(v))
	}
	if err != nil || n > maxNumber {
		return 0, fmt.Errorf("%s: %s is out of range: at most %d", name, echo.String(v), uint64(maxNumber))
	}
	return n, nil
}

// queryBool reads the boolean query parameter key, the one parser of every boolean
// parameter: absent is def; true or 1 is true, false or 0 is false. Anything else — an
// empty value (?close), another spelling (yes, TRUE, on), the parameter twice — is an error,
// the detail of a bad_query problem: a flag that does not parse is never read as false.
func queryBool(r *http.Request, key string, def bool) (bool, error) {
	vals, ok := r.URL.Query()[key]
	if !ok {
		return def, nil
	}
	if len(vals) != 1 {
		return false, fmt.Errorf("query parameter %s: given %d times, once at most", key, len(vals))
	}
	switch vals[0] {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, fmt.Errorf("query parameter %s: %s is not a boolean: true or false (1 or 0)", key, echo.Quote(vals[0]))
}

func queryTime(r *http.Request, key string) (time.Time, error) {
	v := r.URL.Query().Get(key)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("query parameter %s: %s is not RFC 3339", key, echo.Quote(v))
	}
	return t, nil
}
