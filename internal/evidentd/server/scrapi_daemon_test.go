package server_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/daemon"
	"github.com/evident-log/evident/internal/evidentd/server"
	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/regpolicy"
	"github.com/evident-log/evident/regpolicy/regpolicytest"
)

// The tests of this package's SCRAPI surface that need a whole evidentd run one: a real
// daemon (Tessera log on disk, SQLite store, service key) served by daemon.Serve on a
// loopback port chosen by the kernel, with its access log recorded.

// request is one line of evidentd's access log.
type request struct {
	method, path string
	status       int
}

// accessLog is a slog.Handler that keeps the "http request" records of evidentd's access
// log (server.Config.AccessLog) and drops every other record.
type accessLog struct {
	mu   sync.Mutex
	reqs []request
}

func (l *accessLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *accessLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *accessLog) WithGroup(string) slog.Handler            { return l }
func (l *accessLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "http request" {
		return nil
	}
	var q request
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "method":
			q.method = a.Value.String()
		case "path":
			q.path = a.Value.String()
		case "status":
			q.status = int(a.Value.Int64())
		}
		return true
	})
	l.mu.Lock()
	l.reqs = append(l.reqs, q)
	l.mu.Unlock()
	return nil
}

// count returns how many requests of method to path evidentd answered.
func (l *accessLog) count(method, path string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, q := range l.reqs {
		if q.method == method && q.path == path {
			n++
		}
	}
	return n
}

// writePolicy writes a registration policy admitting the issuers' statements of content
// type application/spdx+json and returns its path.
func writePolicy(t *testing.T, dir string, issuers ...*regpolicytest.Issuer) string {
	t.Helper()
	return regpolicytest.WritePolicy(t, dir, regpolicy.Policy{ContentTypes: []string{"application/spdx+json"}}, issuers...)
}

// evidentd is a running daemon.
type evidentd struct {
	d    *daemon.Daemon
	base string // http://127.0.0.1:port
	log  *accessLog
	stop func() // stops serving and closes the daemon (also at cleanup)
}

// startEvidentd opens evidentd on the data directory data — as `evidentd --data data
// --checkpoint-interval cpi --registration-wait wait --registration-policy policy
// --access-log` would — and serves it on a loopback port until stop or the test's end.
func startEvidentd(t *testing.T, data string, cpi, wait time.Duration, policy string) *evidentd {
	t.Helper()
	log := &accessLog{}
	d, err := daemon.Open(context.Background(), daemon.Config{Data: data, CheckpointInterval: cpi,
		SCITT: daemon.SCITT{RegistrationPolicy: policy, RegistrationWait: wait}, AccessLog: true, Logger: slog.New(log)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		d.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
			if err := d.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return &evidentd{d: d, base: "http://" + ln.Addr().String(), log: log, stop: stop}
}

// newData returns a fresh data directory, removed at the test's end (testinfra.TempDir:
// Tessera's goroutines may write a last file after Close).
func newData(t *testing.T) string { return testinfra.TempDir(t) }

// plain is a loopback client that follows no redirect, so that a test sees every status.
var plain = &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// answer is a response read to its end.
type answer struct {
	code   int
	header http.Header
	body   []byte
}

// do sends one request with hc and reads the answer.
func do(t *testing.T, hc *http.Client, method, url, contentType string, body []byte) answer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, b}
}

// serviceKeys fetches /.well-known/scitt-keys and indexes its keys by RFC 9679 kid.
func serviceKeys(t *testing.T, base string) map[string]any {
	t.Helper()
	a := do(t, plain, http.MethodGet, base+"/.well-known/scitt-keys", "", nil)
	if a.code != http.StatusOK || a.header.Get("Content-Type") != server.CBORType {
		t.Fatalf("scitt-keys: %d %s", a.code, a.header.Get("Content-Type"))
	}
	return testinfra.KeySet(t, a.body)
}

// unhex decodes hex or fails the test.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
