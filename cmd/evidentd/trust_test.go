package main

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/evident-log/evident/trustfile"
)

// fetchTrust downloads the trust file the evidentd at base publishes, as a user pinning it
// would, and parses it.
func fetchTrust(t testing.TB, base string) *trustfile.File {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/.well-known/evident-trust", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, trustfile.MaxSize+1))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /.well-known/evident-trust: %d %v", resp.StatusCode, err)
	}
	f, err := trustfile.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
