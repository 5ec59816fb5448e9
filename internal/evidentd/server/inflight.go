package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/evident-log/evident/api"
)

// Request bodies in flight. A route that reads its body into memory (ingest, evidence
// heads, SCRAPI registration) takes the body's bytes from one budget shared by the whole
// server, Config.MaxInFlight, before it reads them, and gives them back when its handler
// returns: after the records parsed from the body, which the pipeline holds while it
// checks and stores them, are no longer needed. A request the budget has no room for is
// answered 503 overloaded with Retry-After, its body unread. So what evidentd buffers of
// request bodies is bounded by the budget however many clients send at once, instead of by
// --max-body times the number of connections.
//
// A body of known length (Content-Length) reserves that length up front. A body of unknown
// length (chunked) reserves inflightStep bytes up front and further steps as it is read; a
// step the budget cannot give fails the read with errOverloaded, which the handler answers
// 503 overloaded like an up-front refusal. A body declaring more than the route takes is
// refused 413 by the route's own check without a byte of it being read.

// DefaultInFlightBodies is how many bodies of the largest size (Config.MaxBody) the budget
// holds at once when Config.MaxInFlight is unset: 4 × 64 MiB = 256 MiB by default.
const DefaultInFlightBodies = 4

// inflightStep is what a body of unknown length reserves at a time while it is read.
const inflightStep = 256 << 10

// maxEvidenceHeadBody bounds the body of POST …/evidence-head: a head and a count, or the
// workspace.describe result around them.
const maxEvidenceHeadBody = 1 << 20

// errOverloaded fails the read of a body of unknown length when the budget has no room for
// its next bytes.
var errOverloaded = errors.New("request bodies in flight at the limit")

// inflight is the budget of request body bytes held at once.
type inflight struct {
	mu    sync.Mutex
	used  int64
	limit int64
}

// take reserves n bytes, or reports that the budget has no room for them.
func (b *inflight) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.limit-b.used {
		return false
	}
	b.used += n
	return true
}

func (b *inflight) give(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// inUse is the bytes reserved now, for the evident_request_body_bytes_in_flight gauge.
func (b *inflight) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// reservation is what one request holds of the budget.
type reservation struct {
	b    *inflight
	held int64
}

func (r *reservation) take(n int64) bool {
	if n <= 0 {
		return true
	}
	if !r.b.take(n) {
		return false
	}
	r.held += n
	return true
}

func (r *reservation) release() {
	if r.held > 0 {
		r.b.give(r.held)
		r.held = 0
	}
}

// takesBody puts a handler that reads at most bound(s).max bytes of its request body behind
// the in-flight budget; a refusal is in the route family's problem format (conciseRoute). The
// reservation is released when the handler returns.
func takesBody(h handlerMethod, bound func(*Server) bodyBound) handlerMethod {
	return func(s *Server, w http.ResponseWriter, r *http.Request) {
		most := bound(s).max
		res := &reservation{b: s.inflight}
		defer res.release()
		switch n := r.ContentLength; {
		case n > most:
			// The route refuses it 413 at its first read; nothing of it is read or reserved.
			r = withBody(r, tooLarge{most})
		case n >= 0:
			if !res.take(n) {
				s.overloaded(w, r)
				return
			}
		default:
			// Unknown length: reserved as it is read, up to the route's limit.
			if !res.take(min(inflightStep, most)) {
				s.overloaded(w, r)
				return
			}
			r = withBody(r, &reservedBody{ReadCloser: r.Body, res: res, limit: most})
		}
		h(s, w, r)
	}
}

// withBody returns a shallow copy of r reading body. The server keeps the request it made, and
// looks at that request's own body after the handler to decide whether the connection can
// serve another request (a body not read after Expect: 100-continue closes it rather than
// being waited for), so it must not be changed under it.
func withBody(r *http.Request, body io.ReadCloser) *http.Request {
	r = r.WithContext(r.Context())
	r.Body = body
	return r
}

// tooLarge is the body of a request whose Content-Length is over its route's limit: its
// first read fails as http.MaxBytesReader's would at the limit.
type tooLarge struct{ limit int64 }

func (t tooLarge) Read([]byte) (int, error) { return 0, &http.MaxBytesError{Limit: t.limit} }
func (t tooLarge) Close() error             { return nil }

// reservedBody reads a body of unknown length no further than its reservation, which it
// extends by inflightStep at a time up to the route's limit. Past that limit it reads the one
// byte http.MaxBytesReader asks for to tell a body at the limit from a longer one (which it
// never keeps), then fails as http.MaxBytesReader would.
type reservedBody struct {
	io.ReadCloser
	res   *reservation
	limit int64 // the route's
	read  int64
}

func (b *reservedBody) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	switch {
	case b.read > b.limit:
		return 0, &http.MaxBytesError{Limit: b.limit}
	case b.read == b.limit:
		p = p[:1]
	case b.read == b.res.held:
		if !b.res.take(min(inflightStep, b.limit-b.res.held)) {
			return 0, errOverloaded
		}
		fallthrough
	default:
		if avail := b.res.held - b.read; int64(len(p)) > avail {
			p = p[:avail]
		}
	}
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	return n, err
}

// overloadedDetail is the detail of a 503 overloaded.
func (s *Server) overloadedDetail() string {
	return fmt.Sprintf("evidentd is holding as many request bodies as it takes at once (%d bytes, --max-inflight-bytes); retry after the indicated delay", s.c.MaxInFlight)
}

// overloaded answers a request the in-flight budget has no room for, in its route family's
// problem format.
func (s *Server) overloaded(w http.ResponseWriter, r *http.Request) {
	s.m.overloaded.Add(1)
	if conciseRoute(r.Pattern) {
		conciseProblem(w, http.StatusServiceUnavailable, api.CodeOverloaded, s.overloadedDetail(), r.URL.Path)
		return
	}
	problem(w, http.StatusServiceUnavailable, api.CodeOverloaded, s.overloadedDetail(), -1)
}

// bodySize is the length r's body declared when it is within limit (the reservation takesBody
// made for it), else -1.
func bodySize(r *http.Request, limit int64) int64 {
	if r.ContentLength > limit {
		return -1
	}
	return r.ContentLength
}

// readAllSized reads r whole, as io.ReadAll does, but into one buffer of size bytes (the
// length the body declared; -1 when it declared none) rather than growing one, which for a
// body of tens of MiB leaves garbage of several times its size behind and holds up to a
// quarter more than the body.
func readAllSized(r io.Reader, size int64) ([]byte, error) {
	if size < 0 {
		return io.ReadAll(r)
	}
	// One byte more than declared, so that the read that finds the end needs no room.
	b := make([]byte, 0, size+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		switch {
		case err == io.EOF:
			return b, nil
		case err != nil:
			return b, err
		case len(b) == cap(b):
			b = append(b, 0)[:len(b)] // more than declared: the reader's limit will tell
		}
	}
}
