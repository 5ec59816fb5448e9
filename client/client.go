// Package client is a Go client of evidentd's /v1 HTTP API, for Coordinators and tools
// that submit evidence, seal chains, read them back and export offline bundles.
//
// Every call takes a context that bounds it; the default http.Client also gives up on one
// attempt after DefaultTimeout. A 503 answer (the log pushed back, another writer moved
// the chain) and a connection that fails before any answer are retried with jittered
// exponential backoff, honouring Retry-After, within the context's deadline: DefaultRetry,
// or WithRetry. A refusal comes back as an *Error carrying the HTTP status and the stable
// api.ProblemCode of the problem detail:
//
//	c, err := client.New("https://evident.example", client.WithToken(token))
//	if err != nil {
//		return err
//	}
//	res, err := c.Submit(ctx, "wsp_acme", records)
//	if client.IsCode(err, api.CodePrevHashMismatch) {
//		// another writer got there first: re-read the head and retry
//	}
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/entryreceipt"
	"github.com/evident-log/evident/internal/rawjson"
	"github.com/evident-log/evident/internal/wait"
	"github.com/evident-log/evident/ledger"
)

// DefaultTimeout bounds every request of the default http.Client, body included. Give
// WithHTTPClient a client without a timeout to export large bundles.
const DefaultTimeout = 2 * time.Minute

// Bounds on the answers the client reads into memory.
const (
	maxJSON    = 1 << 30 // a page of entries: 1000 records of 1 MiB, or 30 of the default 32 MiB limit (ask for fewer)
	maxProblem = 1 << 20
)

// ErrNoRecords is returned by Submit for an empty batch.
var ErrNoRecords = errors.New("client: no records to submit")

// ErrInvalidRecord is returned by Submit for a record that is not one JSON value.
var ErrInvalidRecord = errors.New("client: a record is not one JSON value")

// Client talks to one evidentd. It is safe for concurrent use.
type Client struct {
	base       *url.URL
	hc         *http.Client
	noRedirect *http.Client // hc, not following redirects: SCRAPI's pending registrations redirect to themselves
	token      string
	retry      RetryPolicy
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends the requests with hc instead of a client with DefaultTimeout.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithToken authenticates writes with a bearer token.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// New returns a client of the evidentd at baseURL (e.g. "http://127.0.0.1:8080").
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("client: base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: want http(s)://host[:port]", baseURL)
	}
	c := &Client{base: u, hc: &http.Client{Timeout: DefaultTimeout}, retry: DefaultRetry()}
	for _, o := range opts {
		o(c)
	}
	nr := *c.hc
	nr.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.noRedirect = &nr
	return c, nil
}

// Error is a non-2xx answer of evidentd. Code, Detail and Index come from the problem
// detail; Code is empty when the body was not one.
type Error struct {
	Method     string
	Path       string // the request's path and query
	StatusCode int    // e.g. 422
	Status     string // e.g. "422 Unprocessable Entity"
	Code       api.ProblemCode
	Detail     string
	Index      *int // the refused record's position in the submitted batch
	// Limit is the service limit the request went past and how to raise it (nil for other
	// refusals); Detail names it too.
	Limit *api.ProblemLimit
	// RetryAfter is the delay the service asked for (pushback, concurrent_writer, overloaded, timeout).
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	switch {
	case e.Code == "":
		return fmt.Sprintf("%s %s: %s", e.Method, e.Path, e.Status)
	case e.Index != nil:
		return fmt.Sprintf("%s: %s (record %d of the request): %s", e.Status, e.Code, *e.Index, e.Detail)
	}
	return fmt.Sprintf("%s: %s: %s", e.Status, e.Code, e.Detail)
}

// IsCode reports whether err is (or wraps) an *Error with the given problem code.
func IsCode(err error, code api.ProblemCode) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// SubmitOption configures one Submit.
type SubmitOption func(url.Values)

// WithProfile names the profile of a chain that Submit creates (default: evidentd's).
func WithProfile(profile string) SubmitOption {
	return func(q url.Values) {
		if profile != "" {
			q.Set("profile", profile)
		}
	}
}

// Submit appends records, in order and atomically, to chain. Each record is one JSON value
// and is sent byte for byte. A refusal is an *Error whose Index names the refused record.
func (c *Client) Submit(ctx context.Context, chain string, records [][]byte, opts ...SubmitOption) (*api.IngestResponse, error) {
	if len(records) == 0 {
		return nil, ErrNoRecords
	}
	var body bytes.Buffer
	body.WriteByte('[')
	for i, r := range records {
		if !rawjson.Valid(r) { // not encoding/json, which refuses nesting past 10,000 levels
			return nil, fmt.Errorf("%w: record %d", ErrInvalidRecord, i)
		}
		if i > 0 {
			body.WriteByte(',')
		}
		body.Write(r)
	}
	body.WriteByte(']')
	q := url.Values{}
	for _, o := range opts {
		o(q)
	}
	var out api.IngestResponse
	if err := c.doJSON(ctx, http.MethodPost, chainPath(chain, "entries"), q, api.MediaJSON, body.Bytes(), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Seal seals chain's head into the transparency log and returns once the seal is
// registered; close also closes the chain to further records.
func (c *Client) Seal(ctx context.Context, chain string, close bool) (*api.SealResponse, error) {
	q := url.Values{}
	if close {
		q.Set("close", "true")
	}
	var out api.SealResponse
	if err := c.doJSON(ctx, http.MethodPost, chainPath(chain, "seal"), q, "", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ReportEvidenceHead hands evidentd the head the chain's sender reported for its own
// evidence chain, such as a CHAP Coordinator's workspace.describe evidence_head with its
// audit_count (0: none given). evidentd checks it against the chain and keeps it for export;
// a head the chain does not have is refused with api.CodeEvidenceHeadMismatch.
func (c *Client) ReportEvidenceHead(ctx context.Context, chain string, head ledger.Link, auditCount uint64) (*api.EvidenceHeadResponse, error) {
	body, err := json.Marshal(api.EvidenceHeadRequest{EvidenceHead: head, AuditCount: auditCount})
	if err != nil {
		return nil, err
	}
	var out api.EvidenceHeadResponse
	if err := c.doJSON(ctx, http.MethodPost, chainPath(chain, "evidence-head"), nil, "application/json", body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Head returns chain's current state.
func (c *Client) Head(ctx context.Context, chain string) (*api.ChainHead, error) {
	var out api.ChainHead
	if err := c.doJSON(ctx, http.MethodGet, chainPath(chain), nil, "", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Seals returns every seal of chain, oldest first.
func (c *Client) Seals(ctx context.Context, chain string) (*api.SealsPage, error) {
	var out api.SealsPage
	if err := c.doJSON(ctx, http.MethodGet, chainPath(chain, "seals"), nil, "", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// EntriesQuery selects a page of entries. Zero fields do not filter.
type EntriesQuery struct {
	From         uint64 // the first seq to consider
	Limit        int    // entries per page, 1..1000; 0 is evidentd's default (100)
	Method       string
	Sender       string
	Since, Until time.Time
	TaskID       string
	LogicalID    string
	Tags         []string // every tag must be present
	Outcome      string   // "accepted" or "refused"
	// Attrs filters on any attribute a profile fills (attr.<name>=<value>).
	Attrs map[string]string
}

func (q EntriesQuery) values() url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.From != 0 {
		v.Set("from", strconv.FormatUint(q.From, 10))
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	set("method", q.Method)
	set("sender", q.Sender)
	if !q.Since.IsZero() {
		v.Set("since", q.Since.Format(time.RFC3339Nano))
	}
	if !q.Until.IsZero() {
		v.Set("until", q.Until.Format(time.RFC3339Nano))
	}
	set("task_id", q.TaskID)
	set("logical_id", q.LogicalID)
	for _, t := range q.Tags {
		v.Add("tag", t)
	}
	set("outcome", q.Outcome)
	for k, a := range q.Attrs {
		v.Set("attr."+k, a)
	}
	return v
}

// Entries returns one page of chain's entries; the page's Next, when set, is the From of
// the following one.
func (c *Client) Entries(ctx context.Context, chain string, q EntriesQuery) (*api.EntriesPage, error) {
	var out api.EntriesPage
	if err := c.doJSON(ctx, http.MethodGet, chainPath(chain, "entries"), q.values(), "", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// EntryReceipt returns the RFC 9942 inclusion receipt (COSE_Sign1) of entry seq of chain
// under the chain's latest registered seal; an entry after that seal is an *Error with
// api.CodeNotSealed.
func (c *Client) EntryReceipt(ctx context.Context, chain string, seq uint64) ([]byte, error) {
	resp, err := c.do(ctx, http.MethodGet, chainPath(chain, "entries", strconv.FormatUint(seq, 10), "receipt"), nil, "", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxProblem))
	if err != nil {
		return nil, fmt.Errorf("client: reading the receipt: %w", err)
	}
	return b, nil
}

// EntryReceiptObject returns the entry receipt (evident-entry-receipt/v1, package
// entryreceipt) of entry seq of chain: its statement with the chain receipt, the seal with
// its log receipt and the witnessed checkpoint, which entryreceipt.Verify checks offline.
// contentType picks the entry statement's content type ("" for the profile's own). An entry
// after the chain's latest seal is an *Error with api.CodeNotSealed: Seal, then ask again.
func (c *Client) EntryReceiptObject(ctx context.Context, chain string, seq uint64, contentType string) (*entryreceipt.Receipt, error) {
	var q url.Values
	if contentType != "" {
		q = url.Values{"content_type": {contentType}}
	}
	resp, err := c.do(ctx, http.MethodGet, chainPath(chain, "entries", strconv.FormatUint(seq, 10), "entry-receipt"), q, "", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, entryreceipt.MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("client: reading the entry receipt: %w", err)
	}
	return entryreceipt.Parse(b)
}

// ExportQuery selects an offline bundle: whole chains, or the case slice of one task or
// artefact (CHAP task_id, logical_id) of a single chain.
type ExportQuery struct {
	Chains    []string
	TaskID    string
	LogicalID string
	// Entries, when set, is called before the first byte is written with the number of
	// chain entries the bundle holds, when the service says (api.HeaderEntries); it is not
	// called for bundles the service gives no count for (case slices).
	Entries func(total uint64)
}

// Export streams the offline bundle (a zip) the query selects to w and returns its size.
// The service cannot report a failure after the first byte; a bundle cut short does not
// open (bundle.OpenZipBytes).
func (c *Client) Export(ctx context.Context, q ExportQuery, w io.Writer) (int64, error) {
	v := url.Values{"chain": q.Chains}
	if q.TaskID != "" {
		v.Set("task", q.TaskID)
	}
	if q.LogicalID != "" {
		v.Set("logical_id", q.LogicalID)
	}
	resp, err := c.do(ctx, http.MethodGet, "/v1/export", v, "", nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if q.Entries != nil {
		if total, err := strconv.ParseUint(resp.Header.Get(api.HeaderEntries), 10, 64); err == nil {
			q.Entries(total)
		}
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("client: export: %w", err)
	}
	return n, nil
}

func chainPath(chain string, rest ...string) string {
	p := "/v1/chains/" + url.PathEscape(chain)
	if len(rest) == 0 {
		return p
	}
	return p + "/" + strings.Join(rest, "/")
}

// doJSON sends a request and decodes a 2xx JSON answer into out.
func (c *Client) doJSON(ctx context.Context, method, path string, q url.Values, contentType string, body []byte, out any) error {
	resp, err := c.do(ctx, method, path, q, contentType, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJSON)).Decode(out); err != nil {
		return fmt.Errorf("client: %s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

// send sends a request with hc under the retry policy and returns the last attempt's
// response (any status) or error. Every attempt carries header and sends the body again
// from the start.
func (c *Client) send(ctx context.Context, hc *http.Client, method, u string, header http.Header, body []byte) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, u, rd)
		if err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
		for k, vs := range header {
			req.Header[k] = vs
		}
		resp, err := hc.Do(req)
		again, asked := retryable(resp, err)
		if !again || attempt >= c.retry.MaxAttempts {
			return resp, err
		}
		d := c.retry.backoff(attempt)
		if asked > 0 {
			d = min(max(d, asked), c.retry.MaxDelay)
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
			return resp, err // the context would end first: the last answer stands
		}
		if c.retry.OnRetry != nil {
			c.retry.OnRetry(attempt, attemptError(resp, err), d)
		}
		if resp != nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, maxProblem))
			resp.Body.Close()
		}
		if err := wait.Sleep(ctx, d); err != nil {
			return nil, fmt.Errorf("client: %s %s: waiting to retry: %w", method, u, err)
		}
	}
}

// attemptError describes a failed attempt for RetryPolicy.OnRetry.
func attemptError(resp *http.Response, err error) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("%s %s: %s", resp.Request.Method, resp.Request.URL.Path, resp.Status)
}

// do sends a request and returns a 2xx response, whose body the caller closes; any other
// status becomes an *Error.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, contentType string, body []byte) (*http.Response, error) {
	u := c.base.String() + path // path is escaped already
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.send(ctx, c.hc, method, u, h, body)
	if err != nil {
		return nil, err // a *url.Error naming the request; it wraps the context's error
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	e := &Error{Method: method, Path: path, StatusCode: resp.StatusCode, Status: resp.Status}
	if len(q) > 0 {
		e.Path += "?" + q.Encode()
	}
	e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"))
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxProblem))
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %s: %w", method, path, resp.Status, err)
	}
	var p api.Problem
	if json.Unmarshal(b, &p) == nil && p.Code != "" {
		e.Code, e.Detail, e.Index, e.Limit = p.Code, p.Detail, p.Index, p.Limit
	}
	return nil, e
}
