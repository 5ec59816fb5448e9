package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/evidentd/server"
	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/regpolicy/regpolicytest"
	"github.com/veraison/go-cose"
)

// serveReal starts evidentd with cfg (its data directory a fresh one) behind d.Serve on a
// loopback port, with the server's own timeouts and connection limit (logging nowhere unless
// cfg has a logger), and stops it when the test ends. It returns the daemon and its base URL.
func serveReal(t *testing.T, cfg Config) (*Daemon, string) {
	t.Helper()
	cfg.Data = testinfra.TempDir(t)
	cfg.CheckpointInterval = 100 * time.Millisecond
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	d, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		if err := d.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return d, "http://" + ln.Addr().String()
}

// rawRequest opens a connection to base and writes head (a request line and headers,
// without the blank line that ends them, which it adds).
func rawRequest(t *testing.T, base, head string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(time.Minute)) // a hang fails the test instead of stalling it
	if _, err := io.WriteString(c, head+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

// statusLine reads a status line and the headers after it; it returns the line.
func statusLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	for {
		h, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if h == "\r\n" {
			return strings.TrimSpace(line)
		}
	}
}

// TestBodiesInFlight: with the budget of request bodies held by one request that is still
// sending its body, ingest (Content-Length or chunked), evidence heads and SCRAPI
// registrations are answered 503 overloaded with Retry-After in their route's problem format
// without their bodies being read, while a body declared over --max-body is still refused
// 413 unread; once that request is answered, a request is taken again.
func TestBodiesInFlight(t *testing.T) {
	const maxBody = 64 << 10
	dir := t.TempDir()
	_, base := serveReal(t, Config{MaxBody: maxBody, HTTP: HTTP{MaxInFlight: maxBody},
		SCITT: SCITT{RegistrationPolicy: writePolicy(t, dir, regpolicytest.NewIssuer(t, "https://build.example", cose.AlgorithmES256))}})
	record := []byte(`{"jsonrpc":"2.0","id":"1","method":"m"}`)

	// A client that declares a body of the whole budget and waits, as a slow sender does:
	// the 100 Continue comes when the handler starts reading, with the budget reserved.
	holder, hr := rawRequest(t, base, fmt.Sprintf("POST /v1/chains/wsp_holder/entries HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue", maxBody))
	if line := statusLine(t, hr); line != "HTTP/1.1 100 Continue" {
		t.Fatalf("holder: %q", line)
	}

	for _, tc := range []struct {
		name, path, contentType string
		body                    io.Reader
		concise                 bool
	}{
		{"ingest", "/v1/chains/wsp_a/entries", "application/json", bytes.NewReader(record), false},
		{"chunked ingest", "/v1/chains/wsp_a/entries", "application/json", io.MultiReader(bytes.NewReader(record)), false},
		{"evidence head", "/v1/chains/wsp_a/evidence-head", "application/json", strings.NewReader(`{"evidence_head":"x"}`), false},
		{"SCRAPI registration", "/entries", server.COSEType, bytes.NewReader([]byte{0xd2, 0x84}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(base+tc.path, tc.contentType, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("%s, Retry-After %q: %s", resp.Status, resp.Header.Get("Retry-After"), b)
			}
			var code string
			if tc.concise {
				p, err := api.ParseConciseProblem(b)
				if err != nil || resp.Header.Get("Content-Type") != server.ConciseProblemType {
					t.Fatalf("%s %q: %v", resp.Header.Get("Content-Type"), b, err)
				}
				code = p.Code
			} else {
				var p api.Problem
				if err := json.Unmarshal(b, &p); err != nil || resp.Header.Get("Content-Type") != api.MediaProblem {
					t.Fatalf("%s %s: %v", resp.Header.Get("Content-Type"), b, err)
				}
				code = string(p.Code)
			}
			if code != string(api.CodeOverloaded) {
				t.Fatalf("code %q: %s", code, b)
			}
		})
	}

	// Over --max-body by its Content-Length: refused 413 without a 100 Continue, budget or not.
	_, or := rawRequest(t, base, fmt.Sprintf("POST /v1/chains/wsp_a/entries HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue", maxBody+1))
	if line := statusLine(t, or); line != "HTTP/1.1 413 Request Entity Too Large" {
		t.Fatalf("a body over --max-body: %q", line)
	}

	// The holder sends its body (one line that is no record) and is answered; its answer
	// ends after its handler returned, which released its reservation.
	body := append(bytes.Repeat([]byte(" "), maxBody-len("x")), 'x')
	if _, err := holder.Write(body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(hr, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable {
		t.Fatalf("the holder's own request: %s", resp.Status)
	}

	code, b := post(t, base+"/v1/chains/wsp_a/entries", "application/json", record)
	if code != http.StatusCreated {
		t.Fatalf("once the budget is free: %d %s", code, b)
	}
	_, metrics := get(t, base+"/metrics")
	for _, want := range []string{"evident_overloaded_total 4\n", "evident_request_body_bytes_in_flight 0\n", fmt.Sprintf("evident_request_body_bytes_limit %d\n", maxBody)} {
		if !bytes.Contains(metrics, []byte(want)) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestSlowConnections: connections that send half a request and stop, more of them than
// --max-conns, hold at most --max-conns connections of evidentd at any time, each until its
// header timeout, and a client behind them is served once their turn is over.
func TestSlowConnections(t *testing.T) {
	const limit, slow = 2, 8
	d, base := serveReal(t, Config{HTTP: HTTP{MaxConns: limit, ReadHeaderTimeout: 300 * time.Millisecond}})
	var loris []*bufio.Reader
	for range slow {
		c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Minute))
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "); err != nil {
			t.Fatal(err)
		}
		loris = append(loris, bufio.NewReader(c))
	}
	client := &http.Client{Timeout: time.Minute}
	resp, err := client.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "ok\n" {
		t.Fatalf("%s %q", resp.Status, b)
	}
	// Every slow connection was closed by evidentd (its header timeout), none timed out here.
	for i, r := range loris {
		if _, err := io.Copy(io.Discard, r); err != nil && !errors.Is(err, net.ErrClosed) {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("slow connection %d was never closed: %v", i, err)
			}
		}
	}
	if peak := d.conns.Load().Peak(); peak > limit || peak < 1 {
		t.Fatalf("%d connections open at once, limit %d", peak, limit)
	}
}
