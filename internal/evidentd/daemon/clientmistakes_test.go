package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/evidentd/server"
)

// logSink keeps a daemon's JSON log lines for a test and says when one arrives, so that
// waiting for a line needs no sleep.
type logSink struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed, and replaced, at every write
}

func newLogSink() *logSink { return &logSink{changed: make(chan struct{})} }

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	close(l.changed)
	l.changed = make(chan struct{})
	return l.b.Write(p)
}

// logLine is one line of the log, its members as encoding/json reads them.
type logLine map[string]any

func (l logLine) str(key string) string { s, _ := l[key].(string); return s }

// lines returns the lines written so far and a channel that closes at the next write.
func (l *logSink) lines(t *testing.T) ([]logLine, <-chan struct{}) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []logLine
	for line := range bytes.SplitSeq(l.b.Bytes(), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m logLine
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out, l.changed
}

// waitFor returns the first log line from the from-th on that match takes, waiting for it
// for at most 20 seconds.
func (l *logSink) waitFor(t *testing.T, from int, what string, match func(logLine) bool) logLine {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		lines, changed := l.lines(t)
		for _, line := range lines[min(from, len(lines)):] {
			if match(line) {
				return line
			}
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no log line %s in 20s", what)
		}
	}
}

// startServing opens a daemon in a fresh data directory that logs JSON at Debug (the access
// log on) into the returned sink, and serves it with Serve, its real HTTP server, on a
// loopback port; both stop when the test ends.
func startServing(t *testing.T) (addr string, logs *logSink) {
	t.Helper()
	logs = newLogSink()
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, base := serveReal(t, Config{Logger: logger, AccessLog: true})
	return strings.TrimPrefix(base, "http://"), logs
}

// How a hostile client ends its request.
const (
	waitAnswer = iota // it sent the whole request (or bad framing the server stops at) and reads the answer
	halfClose         // it closes its write side (the server reads EOF) and reads the answer
	hangUp            // it closes the connection with FIN (the server reads EOF) and reads nothing
	reset             // it resets the connection (RST) once the server reads the body, and reads nothing
)

// Problem formats of the route families.
const (
	noProblem = iota // not a problem (a success, or an answer that is not read)
	jsonProblem
	cborProblem
)

// A hostileCase is one request of a hostile client and what evidentd must answer it.
type hostileCase struct {
	name   string
	req    string // what the client sends: request line, headers, (part of) the body
	end    int    // waitAnswer, halfClose, hangUp or reset
	status int
	format int // noProblem, jsonProblem or cborProblem
	code   api.ProblemCode
}

// request returns a request without a body.
func request(method, target string) string {
	return method + " " + target + " HTTP/1.1\r\nHost: evidentd\r\nConnection: close\r\n\r\n"
}

// withBody returns a request that declares a Content-Length of length and sends body after
// its headers (shorter than length: a truncated body).
func withBody(method, target, contentType string, length int, body string) string {
	return method + " " + target + " HTTP/1.1\r\nHost: evidentd\r\nConnection: close\r\nContent-Type: " + contentType +
		fmt.Sprintf("\r\nContent-Length: %d\r\n\r\n", length) + body
}

// chunked returns a request whose body is sent with the chunked transfer coding, framing
// being the raw bytes after the headers.
func chunked(method, target, contentType, framing string) string {
	return method + " " + target + " HTTP/1.1\r\nHost: evidentd\r\nConnection: close\r\nContent-Type: " + contentType +
		"\r\nTransfer-Encoding: chunked\r\n\r\n" + framing
}

// expectContinue returns a request with Content-Length length and Expect: 100-continue, and
// no body: the client sends body once the server says 100 Continue, that is once the
// handler reads the body.
func expectContinue(method, target, contentType string, length int) string {
	return method + " " + target + " HTTP/1.1\r\nHost: evidentd\r\nContent-Type: " + contentType +
		fmt.Sprintf("\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", length)
}

// TestHostileClients drives evidentd, over real HTTP and raw connections, with the mistakes of
// a hostile client — numbers out of range, bodies cut short, bad chunked framing, connections
// dropped in the middle of a body, 100 KB ids, paths and query values — and checks that each
// is answered with a 4xx problem in its route family's format, that no answer repeats more
// than a bounded part of what the client sent, that each body it could not read is logged at
// Debug, and that no ERROR line is logged.
func TestHostileClients(t *testing.T) {
	addr, logs := startServing(t)
	const ws = "wsp_hostile"
	create := `{"jsonrpc":"2.0","id":"1","method":"workspace.create","params":{}}`
	if status, body := sendRaw(t, addr, withBody("POST", "/v1/chains/"+ws+"/entries", "application/json", len(create), create), waitAnswer); status != http.StatusCreated {
		t.Fatalf("ingest: %d %s", status, body)
	}

	const (
		over63 = "9223372036854775808"  // 2^63
		max63  = "9223372036854775807"  // 2^63-1, the largest number evidentd takes
		over64 = "18446744073709551616" // 2^64
	)
	long := strings.Repeat("a", 100000) // a 100 KB id, path segment, query value or header
	head := "sha256:" + strings.Repeat("0", 64)
	part := `{"jsonrpc":"2.0","id":"2","meth` // the start of a body, cut short
	badChunk := "zz\r\n" + part + "\r\n0\r\n\r\n"
	shortChunk := fmt.Sprintf("%x\r\n", 1000) + part // a chunk announced 1000 bytes long, cut short
	const cose = server.COSEType
	ingest, evidenceHead, register := "/v1/chains/"+ws+"/entries", "/v1/chains/"+ws+"/evidence-head", "/entries"
	countBody := `{"evidence_head":"` + head + `","audit_count":` + over63 + `}`

	cases := []hostileCase{
		// Numbers in paths and queries: 0..2^63-1, else 400 bad_query.
		{"entries from 2^63", request("GET", ingest+"?from="+over63), waitAnswer, 400, jsonProblem, api.CodeBadQuery},
		{"entries from 2^64", request("GET", ingest+"?from="+over64), waitAnswer, 400, jsonProblem, api.CodeBadQuery},
		{"entries from 2^63-1", request("GET", ingest+"?from="+max63), waitAnswer, 200, noProblem, ""},
		{"entries limit 2^63", request("GET", ingest+"?limit="+over63), waitAnswer, 400, jsonProblem, api.CodeBadQuery},
		{"chains limit 2^64", request("GET", "/v1/chains?limit="+over64), waitAnswer, 400, jsonProblem, api.CodeBadQuery},
		{"receipt seq 2^63", request("GET", ingest+"/"+over63+"/receipt"), waitAnswer, 400, jsonProblem, api.CodeBadQuery},
		{"statement seq 2^64", request("GET", ingest+"/"+over64+"/statement"), waitAnswer, 400, jsonProblem, api.CodeBadQuery},
		{"entry receipt seq 2^63-1", request("GET", ingest+"/"+max63+"/entry-receipt"), waitAnswer, 404, jsonProblem, api.CodeNoSuchEntry},
		{"chain consistency to 2^63", request("GET", "/v1/chains/"+ws+"/consistency?from=1&to="+over63), waitAnswer, 400, cborProblem, api.CodeBadQuery},
		{"log consistency from 2^63", request("GET", "/v1/log/consistency?from="+over63+"&to="+over64), waitAnswer, 400, cborProblem, api.CodeBadQuery},
		{"log consistency to 2^63-1", request("GET", "/v1/log/consistency?from=1&to="+max63), waitAnswer, 400, cborProblem, api.CodeBeyondPublished},
		{"evidence head audit_count 2^63", withBody("POST", evidenceHead, "application/json", len(countBody), countBody), waitAnswer, 400, jsonProblem, api.CodeMalformedRecord},
		{"tile index 2^63", request("GET", "/log/tile/0/x"+over63), waitAnswer, 404, jsonProblem, api.CodeNotFound},

		// A query that does not parse: Go's url.Values would drop the pair and serve the rest.
		{"entries from;limit", request("GET", ingest+"?from=1;limit=2"), waitAnswer, 400, jsonProblem, api.CodeBadQuery},
		{"entries bad escape", request("GET", ingest+"?from=%zz"), waitAnswer, 400, jsonProblem, api.CodeBadQuery},
		{"entry receipt raw ';' in a content type", request("GET", ingest+"/0/entry-receipt?content_type=application/chap%2Bjson;version=0.2"), waitAnswer, 400, jsonProblem, api.CodeBadQuery},
		{"log consistency from;to", request("GET", "/v1/log/consistency?from=1;to=2"), waitAnswer, 400, cborProblem, api.CodeBadQuery},
		{"SCITT keys a;b", request("GET", "/.well-known/scitt-keys?a;b"), waitAnswer, 400, cborProblem, api.CodeBadQuery},

		// Bodies cut short or badly framed: 400 bad_body.
		{"ingest body short of its length", withBody("POST", ingest, "application/json", 1000, part), halfClose, 400, jsonProblem, api.CodeBadBody},
		{"ingest bad chunk size", chunked("POST", ingest, "application/json", badChunk), waitAnswer, 400, jsonProblem, api.CodeBadBody},
		{"ingest chunk short of its size", chunked("POST", ingest, "application/json", shortChunk), halfClose, 400, jsonProblem, api.CodeBadBody},
		{"evidence head body short of its length", withBody("POST", evidenceHead, "application/json", 1000, part), halfClose, 400, jsonProblem, api.CodeBadBody},
		{"evidence head bad chunk size", chunked("POST", evidenceHead, "application/json", badChunk), waitAnswer, 400, jsonProblem, api.CodeBadBody},
		{"SCRAPI statement short of its length", withBody("POST", register, cose, 1000, part), halfClose, 400, cborProblem, api.CodeBadBody},
		{"SCRAPI bad chunk size", chunked("POST", register, cose, badChunk), waitAnswer, 400, cborProblem, api.CodeBadBody},
		{"SCRAPI chunk short of its size", chunked("POST", register, cose, shortChunk), halfClose, 400, cborProblem, api.CodeBadBody},
		// A seal reads no body: one cut short is not looked at (a chain that does not exist, so
		// that nothing is sealed).
		{"seal body short of its length", withBody("POST", "/v1/chains/wsp_none/seal", "application/json", 1000, part), halfClose, 404, jsonProblem, api.CodeNoSuchChain},

		// Clients that hang up in the middle of a body: nothing to answer, nothing above Debug.
		{"ingest hang-up", withBody("POST", ingest, "application/json", 1000, part), hangUp, 400, noProblem, ""},
		{"ingest reset", expectContinue("POST", ingest, "application/json", 1000), reset, 499, noProblem, ""},
		{"evidence head reset", expectContinue("POST", evidenceHead, "application/json", 1000), reset, 499, noProblem, ""},
		{"SCRAPI hang-up", withBody("POST", register, cose, 1000, part), hangUp, 400, noProblem, ""},
		{"SCRAPI reset", expectContinue("POST", register, cose, 1000), reset, 499, noProblem, ""},

		// 100 KB of client input: answered, and repeated only in part.
		{"100 KB chain id", request("GET", "/v1/chains/"+long), waitAnswer, 404, jsonProblem, api.CodeNoSuchChain},
		{"100 KB chain id, entries", request("GET", "/v1/chains/"+long+"/entries"), waitAnswer, 404, jsonProblem, api.CodeNoSuchChain},
		{"100 KB chain id, consistency", request("GET", "/v1/chains/"+long+"/consistency?from=1&to=2"), waitAnswer, 404, cborProblem, api.CodeNoSuchChain},
		{"100 KB chain id, export", request("GET", "/v1/export?chain="+long), waitAnswer, 404, jsonProblem, api.CodeNoSuchChain},
		{"100 KB chain id, slice", request("GET", "/v1/export?chain="+long+"&task=t"), waitAnswer, 404, jsonProblem, api.CodeNoSuchChain},
		{"100 KB chain id, write", withBody("POST", "/v1/chains/"+long+"/entries", "application/json", len(create), create), waitAnswer, 400, jsonProblem, api.CodeInvalidChainID},
		{"100 KB path", request("GET", "/"+long), waitAnswer, 404, jsonProblem, api.CodeNoSuchRoute},
		{"100 KB path, other method", request("DELETE", "/v1/chains/"+long), waitAnswer, 405, jsonProblem, api.CodeMethodNotAllowed},
		{"100 KB method", request(strings.ToUpper(long), "/v1/chains"), waitAnswer, 405, jsonProblem, api.CodeMethodNotAllowed},
		{"100 KB profile", withBody("POST", "/v1/chains/wsp_new/entries?profile="+long, "application/json", len(create), create), waitAnswer, 400, jsonProblem, api.CodeUnknownProfile},
		{"100 KB outcome", request("GET", ingest+"?outcome="+long), waitAnswer, 400, jsonProblem, api.CodeBadQuery},
		{"100 KB attribute name", request("GET", ingest+"?attr."+long+"="), waitAnswer, 400, jsonProblem, api.CodeBadQuery},
		{"100 KB since", request("GET", ingest+"?since="+long), waitAnswer, 400, jsonProblem, api.CodeBadQuery},
		{"100 KB number", request("GET", ingest+"?from="+strings.Repeat("9", 100000)), waitAnswer, 400, jsonProblem, api.CodeBadQuery},
		{"100 KB content_type", request("GET", ingest+"/0/entry-receipt?content_type="+long), waitAnswer, 400, jsonProblem, api.CodeBadQuery},
		{"100 KB registration id", request("GET", "/entries/"+long), waitAnswer, 400, cborProblem, api.CodeBadID},
		{"100 KB kid", request("GET", "/.well-known/scitt-keys/"+long), waitAnswer, 400, cborProblem, api.CodeBadKid},
		{"100 KB statement type", withBody("POST", register, long, 2, "{}"), waitAnswer, 415, cborProblem, api.CodeUnsupportedMediaType},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// The access log's remote of this request, in the lines written from now on (a
			// port of an earlier connection may be taken again).
			remote := conn.LocalAddr().String()
			before, _ := logs.lines(t)
			status, header, body := exchange(t, conn, tc)
			if tc.end == waitAnswer || tc.end == halfClose {
				checkAnswer(t, tc, status, header, body)
			}
			// The access log line is written once the handler has returned: every line the
			// request made is in the log before it.
			access := logs.waitFor(t, len(before), "for the request from "+remote, func(l logLine) bool {
				return l.str("msg") == "http request" && l.str("remote") == remote
			})
			if got, _ := access["status"].(float64); int(got) != tc.status {
				t.Errorf("access log status %v, want %d", access["status"], tc.status)
			}
			if tc.code == api.CodeBadBody || tc.end == hangUp || tc.end == reset {
				logs.waitFor(t, len(before), "at DEBUG of the unreadable body", func(l logLine) bool {
					return l.str("msg") == "request body unreadable" && l.str("remote") == remote && l.str("level") == "DEBUG"
				})
			}
		})
	}
	noErrors(t, logs)
	// What the clients sent is repeated in the log bounded too (a 100 KB path, a chain id).
	logs.mu.Lock()
	for _, line := range bytes.Split(logs.b.Bytes(), []byte("\n")) {
		if len(line) > 4<<10 {
			t.Errorf("a log line of %d bytes: %.200s…", len(line), line)
		}
	}
	logs.mu.Unlock()
}

// noErrors fails the test for every line logged at ERROR. (WARN is not checked: a loaded
// machine can make background work warn, a claim renewed late, which no request here caused.)
func noErrors(t *testing.T, logs *logSink) {
	t.Helper()
	lines, _ := logs.lines(t)
	for _, l := range lines {
		if l.str("level") == "ERROR" {
			t.Errorf("logged at ERROR: %v", l)
		}
	}
}

// sendRaw sends req on a new connection and returns the answer's status and body.
func sendRaw(t *testing.T, addr, req string, end int) (int, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	status, _, body := exchange(t, conn, hostileCase{req: req, end: end})
	return status, body
}

// exchange sends tc's request on conn and ends it as tc says. It returns the answer when the
// client reads one (status 0 otherwise).
func exchange(t *testing.T, conn net.Conn, tc hostileCase) (int, http.Header, []byte) {
	t.Helper()
	tcp := conn.(*net.TCPConn)
	if _, err := io.WriteString(conn, tc.req); err != nil {
		t.Fatal(err)
	}
	switch tc.end {
	case hangUp:
		if err := conn.Close(); err != nil {
			t.Fatal(err)
		}
		return 0, nil, nil
	case reset:
		// The 100 Continue says the handler is reading the body: the reset comes in the middle.
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusContinue {
			t.Fatalf("want 100 Continue, got %v %v", resp, err)
		}
		if _, err := io.WriteString(conn, `{"jsonrpc":"2.0"`); err != nil {
			t.Fatal(err)
		}
		if err := tcp.SetLinger(0); err != nil {
			t.Fatal(err)
		}
		if err := conn.Close(); err != nil {
			t.Fatal(err)
		}
		return 0, nil, nil
	case halfClose:
		if err := tcp.CloseWrite(); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return resp.StatusCode, resp.Header, body
}

// maxAnswer bounds every problem answered here, whatever the request repeated of its 100 KB.
const maxAnswer = 4096

// checkAnswer checks an answer's status and, for a problem, its format, code and size.
func checkAnswer(t *testing.T, tc hostileCase, status int, header http.Header, body []byte) {
	t.Helper()
	short := body
	if len(short) > 300 {
		short = short[:300]
	}
	if status != tc.status {
		t.Fatalf("status %d, want %d: %q", status, tc.status, short)
	}
	var code, detail string
	switch tc.format {
	case noProblem:
		return
	case jsonProblem:
		if ct := header.Get("Content-Type"); ct != api.MediaProblem {
			t.Fatalf("Content-Type %q, want %s: %q", ct, api.MediaProblem, short)
		}
		var p api.Problem
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatalf("problem %q: %v", short, err)
		}
		if p.Status != tc.status || p.Type != tc.code.Type() || p.Title != http.StatusText(tc.status) {
			t.Errorf("problem %+v", p)
		}
		code, detail = string(p.Code), p.Detail
	case cborProblem:
		if ct := header.Get("Content-Type"); ct != server.ConciseProblemType {
			t.Fatalf("Content-Type %q, want %s: %q", ct, server.ConciseProblemType, short)
		}
		p, err := api.ParseConciseProblem(body)
		if err != nil {
			t.Fatalf("concise problem %x: %v", short, err)
		}
		if p.Title != server.ConciseTitle(tc.status, tc.code) || !utf8.ValidString(p.Instance) { // draft-ietf-scitt-scrapi-11's titles
			t.Errorf("problem %+v", p)
		}
		code, detail = p.Code, p.Detail
	}
	if code != string(tc.code) || !tc.code.Known() {
		t.Errorf("code %q, want %q (%s)", code, tc.code, detail)
	}
	if len(body) > maxAnswer || detail == "" || !utf8.ValidString(detail) {
		t.Errorf("a problem of %d bytes (at most %d), detail %q", len(body), maxAnswer, detail)
	}
}

// goneWriter is the response writer of a client that hung up before the answer's body: every
// write fails, and, as net/http does when a write to the connection fails, the request's
// context ends with it.
type goneWriter struct {
	header http.Header
	status int
	cancel context.CancelFunc
}

func (g *goneWriter) Header() http.Header { return g.header }
func (g *goneWriter) WriteHeader(code int) {
	if g.status == 0 {
		g.status = code
	}
}

func (g *goneWriter) Write([]byte) (int, error) {
	g.WriteHeader(http.StatusOK)
	g.cancel()
	return 0, &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}
}

// TestExportToAGoneClient: a bundle whose client hangs up once its headers are out is cut
// short and logged at Debug, not at ERROR: the service did nothing wrong.
func TestExportToAGoneClient(t *testing.T) {
	logs := newLogSink()
	d, err := Open(context.Background(), Config{Data: t.TempDir(), CheckpointInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	const ws = "wsp_gone"
	create := `{"jsonrpc":"2.0","id":"1","method":"workspace.create","params":{}}`
	req := httptest.NewRequest("POST", "/v1/chains/"+ws+"/entries", strings.NewReader(create))
	req.RemoteAddr = "127.0.0.1:40000" // writes without a token are taken from loopback
	rec := httptest.NewRecorder()
	d.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		t.Fatalf("ingest: %d %s", rec.Code, rec.Body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &goneWriter{header: http.Header{}, cancel: cancel}
	d.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/v1/export?chain="+ws, nil).WithContext(ctx))
	if w.status != http.StatusOK {
		t.Fatalf("export: %d", w.status)
	}
	logs.waitFor(t, 0, "export failed at DEBUG", func(l logLine) bool {
		return l.str("msg") == "export failed" && l.str("level") == "DEBUG"
	})
	noErrors(t, logs)
}
