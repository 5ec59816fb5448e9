package client

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
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

// DefaultPollInterval is how long Register first waits between polls of a pending
// registration when the service gives no Retry-After; without one, each later wait doubles
// (with jitter) up to MaxPollInterval.
const DefaultPollInterval = time.Second

// MinPollInterval is the least Register waits between two polls, also when the service
// says Retry-After: 0: a service that always does so is not polled in a tight loop.
const MinPollInterval = 100 * time.Millisecond

// MaxPollInterval caps every wait between two polls of a pending registration, also a
// longer Retry-After: Register asks again after at most this long.
const MaxPollInterval = 30 * time.Second

// maxPolls caps how often Register asks for one pending registration (draft -11 section 5.1
// has a client that retries cap the number of its retries); ctx usually ends it first.
var maxPolls = 10000

// Register registers a signed statement (COSE_Sign1) with SCRAPI's POST /entries and
// returns its receipt. It speaks draft-ietf-scitt-scrapi-11: 201 Created carries the
// receipt; 202 Accepted says the registration runs, and Register polls the Location it
// names, which answers 204 No Content while the registration still runs and 200 with the
// receipt once it is done. Between two polls Register waits the Retry-After the service
// gave (section 5.1: a minimum interval), capped at MaxPollInterval; without one it backs
// off exponentially with jitter from DefaultPollInterval. It polls until the receipt is
// there, ctx ends, or it has asked 10000 times. The 303 See Other and 302 Found of draft -10 (older evidentd) are
// understood the same way as 202 and 204. A refusal is an *Error with the problem code of
// the service's concise problem detail (e.g. api.CodeUnknownIssuer).
func (c *Client) Register(ctx context.Context, statement []byte) (*Registration, error) {
	resp, err := c.scrapi(ctx, http.MethodPost, c.base.String()+"/entries", statement)
	if err != nil {
		return nil, err
	}
	var loc string // the registration's locator, polled while it is pending
	backoff := DefaultPollInterval
	for polls := 0; ; polls++ {
		switch resp.status {
		case http.StatusOK, http.StatusCreated:
			if resp.location == "" {
				resp.location = loc
			}
			return &Registration{Location: resp.location, Receipt: resp.body}, nil
		case http.StatusAccepted, http.StatusSeeOther, http.StatusFound:
			// Registration is running: the Location names what to poll (a 302 of draft -10
			// names the registration itself again).
			if resp.location == "" {
				return nil, fmt.Errorf("client: SCRAPI %d without a Location", resp.status)
			}
			loc = resp.location
		case http.StatusNoContent:
			// Still running (draft -11 section 2.4.2): ask the same locator again.
			if loc == "" {
				return nil, fmt.Errorf("client: SCRAPI answered 204 to the registration itself")
			}
		default:
			return nil, fmt.Errorf("client: SCRAPI answered %d", resp.status)
		}
		if polls >= maxPolls {
			return nil, fmt.Errorf("client: registration %s still pending after %d polls", loc, polls)
		}
		pause := resp.retryAfter
		if !resp.hasRetryAfter {
			pause = jittered(backoff)
			backoff = min(2*backoff, MaxPollInterval)
		}
		if err := wait.Sleep(ctx, min(max(pause, MinPollInterval), MaxPollInterval)); err != nil {
			return nil, fmt.Errorf("client: registration %s still pending: %w", loc, err)
		}
		if resp, err = c.scrapi(ctx, http.MethodGet, loc, nil); err != nil {
			return nil, err
		}
	}
}

// jittered is d spread uniformly over [d/2, d), so that clients polling the same service
// do not ask in step.
func jittered(d time.Duration) time.Duration {
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + rand.N(half)
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
	status        int
	location      string
	retryAfter    time.Duration
	hasRetryAfter bool // the answer carried a Retry-After that parses (0 included)
	body          []byte
}

// scrapi sends one SCRAPI request under the retry policy without following redirects (a
// pending registration of draft -10 redirected to itself) and turns a 4xx or 5xx into an
// *Error.
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
	ra := resp.Header.Get("Retry-After")
	a.retryAfter = retryAfter(ra)
	a.hasRetryAfter = a.retryAfter > 0 || strings.TrimSpace(ra) == "0"
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
