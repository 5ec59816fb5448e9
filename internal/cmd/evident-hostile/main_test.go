package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestCheck: only loopback addresses and bounded counts are taken.
func TestCheck(t *testing.T) {
	ok := config{base: "http://127.0.0.1:8080", mode: "bodies", n: 48, size: 60_000_000, conns: 2000, every: time.Second, duration: time.Second, probe: time.Second}
	if err := ok.check(); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*config){
		"not loopback":   func(c *config) { c.base = "http://192.0.2.1:8080" },
		"not http":       func(c *config) { c.base = "ftp://127.0.0.1" },
		"unknown load":   func(c *config) { c.mode = "flood" },
		"too many":       func(c *config) { c.n = maxRequests + 1 },
		"too large":      func(c *config) { c.size = maxSize + 1 },
		"too many conns": func(c *config) { c.conns = maxConns + 1 },
	} {
		c := ok
		change(&c)
		if err := c.check(); err == nil {
			t.Errorf("%s: taken", name)
		}
	}
}

// TestJunk: a body of exactly the size asked, in lines of about 8 KiB.
func TestJunk(t *testing.T) {
	for _, size := range []int{1, 7, 8 << 10, 6_000_000} {
		b := junk(size)
		if len(b) != size {
			t.Fatalf("size %d: %d bytes", size, len(b))
		}
		if lines := strings.Count(string(b), "\n"); lines > size/(8<<10)+1 {
			t.Fatalf("size %d: %d lines, want lines of 8 KiB (60 MB must stay under evidentd's default --max-batch)", size, lines)
		}
	}
}

// TestBodies: every request's final answer is counted, a 503 sent again when asked.
func TestBodies(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		calls++
		if calls == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer srv.Close()
	var out strings.Builder
	cfg := config{base: srv.URL, mode: "bodies", n: 1, size: 1000, retries: 1, conns: 1, every: time.Second, duration: time.Second, probe: time.Second, out: &out}
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "final answers: 1 × 400 Bad Request") || !strings.Contains(out.String(), "(503: 1)") {
		t.Fatalf("%s", out.String())
	}
}
