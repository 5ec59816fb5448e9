package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/wait"
)

// SCRAPI (draft-ietf-scitt-scrapi): the SCITT registration surface, outside /v1.

// Registration is a registered signed statement.
type Registration struct {
	// Location is the absolute URL of the registration; GET it for its receipt.
	Location string
	// Receipt is the statement's RFC 9942 receipt (a COSE_Sign1, application/cose).
	Receipt []byte
}

// Bound on a SCRAPI answer the client reads: receipts, transparent statements, key sets.
const maxCOSE = 1 << 20

// DefaultPollInterval is how long Register waits between polls of a pending registration
// when the service gives no Retry-After.
const DefaultPollInterval = time.Second

// Register registers a signed statement (COSE_Sign1) with SCRAPI's POST /entries and
// returns its receipt. While the log has not published it yet — 303 See Other to POST,
// 302 Found to GET — Register polls the registration's Location, waiting Retry-After
// between polls, until the receipt is there or ctx ends. A refusal is an *Error with the
// problem code of the service's concise problem detail (e.g. api.CodeUnknownIssuer).
func (c *Client) Register(ctx context.Context, statement []byte) (*Registration, error) {
	resp, err := c.scrapi(ctx, http.MethodPost, c.base.String()+"/entries", statement)
	if err != nil {
		return nil, err
	}
	for {
		switch resp.status {
		case http.StatusOK, http.StatusCreated:
			return &Registration{Location: resp.location, Receipt: resp.body}, nil
		case http.StatusSeeOther, http.StatusFound:
			if resp.location == "" {
				return nil, fmt.Errorf("client: SCRAPI %d without a Location", resp.status)
			}
			pause := resp.retryAfter
			if pause <= 0 {
				pause = DefaultPollInterval
			}
			if err := wait.Sleep(ctx, pause); err != nil {
				return nil, fmt.Errorf("client: registration %s still pending: %w", resp.location, err)
			}
			loc := resp.location
			if resp, err = c.scrapi(ctx, http.MethodGet, loc, nil); err != nil {
				return nil, err
			}
			if resp.location == "" {
				resp.location = loc
			}
		default:
			return nil, fmt.Errorf("client: SCRAPI answered %d", resp.status)
		}
	}
}

// SCITTKeys returns the service's COSE_KeySet (GET /.well-known/scitt-keys,
// application/cbor): every key its statements and receipts were ever signed with.
func (c *Client) SCITTKeys(ctx context.Context) ([]byte, error) {
	resp, err := c.scrapi(ctx, http.MethodGet, c.base.String()+"/.well-known/scitt-keys", nil)
	if err != nil {
		return nil, err
	}
	if resp.status != http.StatusOK {
		return nil, fmt.Errorf("client: /.well-known/scitt-keys answered %d", resp.status)
	}
	return resp.body, nil
}

type scrapiAnswer struct {
	status     int
	location   string
	retryAfter time.Duration
	body       []byte
}

// scrapi sends one SCRAPI request under the retry policy without following redirects (a
// pending registration redirects to itself) and turns a 4xx or 5xx into an *Error.
func (c *Client) scrapi(ctx context.Context, method, u string, body []byte) (*scrapiAnswer, error) {
	h := http.Header{"Accept": {api.MediaCOSE + ", application/cbor, " + api.MediaConciseProblem}}
	if body != nil {
		h.Set("Content-Type", api.MediaCOSE)
	}
	resp, err := c.send(ctx, c.noRedirect, method, u, h, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxCOSE))
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %s: %w", method, u, resp.Status, err)
	}
	a := &scrapiAnswer{status: resp.StatusCode, body: b}
	a.retryAfter = retryAfter(resp.Header.Get("Retry-After"))
	if loc := resp.Header.Get("Location"); loc != "" {
		// A relative Location (earlier evidentd versions) is resolved against the request.
		if l, err := resp.Request.URL.Parse(loc); err == nil {
			a.location = l.String()
		}
	}
	if resp.StatusCode < 400 {
		return a, nil
	}
	path := u
	if pu, err := url.Parse(u); err == nil {
		path = pu.RequestURI()
	}
	e := &Error{Method: method, Path: path, StatusCode: resp.StatusCode, Status: resp.Status, RetryAfter: a.retryAfter}
	if p, err := api.ParseConciseProblem(b); err == nil {
		e.Code, e.Detail = api.ProblemCode(p.Code), p.Detail
	}
	return nil, e
}
