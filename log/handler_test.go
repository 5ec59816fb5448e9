package log

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/client"
)

func TestHandlerWithTesseraClient(t *testing.T) {
	dir := t.TempDir()
	// Keys inside the log directory on purpose: the handler must never serve them.
	logDir := filepath.Join(dir, "log")
	l := openTestLog(t, logDir, logDir, 100*time.Millisecond)
	defer closeLog(t, l)
	ctx := context.Background()

	// 260 entries: one full entry bundle / level-0 tile plus a partial one.
	res := appendConcurrently(t, l, "http", 260)

	mux := http.NewServeMux()
	mux.Handle("/log/", http.StripPrefix("/log", l.Handler()))
	srv := httptest.NewServer(mux) // loopback
	defer srv.Close()

	u, err := url.Parse(srv.URL + "/log/")
	if err != nil {
		t.Fatal(err)
	}
	f, err := client.NewHTTPFetcher(u, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	cp, cpRaw, _, err := client.FetchCheckpoint(ctx, f.ReadCheckpoint, l.Verifier(), l.Origin())
	if err != nil {
		t.Fatalf("FetchCheckpoint over HTTP: %v", err)
	}
	local, err := l.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cpRaw, local) {
		t.Fatalf("HTTP checkpoint differs from local:\n%s\nvs\n%s", cpRaw, local)
	}
	if cp.Size != 260 {
		t.Fatalf("size %d, want 260", cp.Size)
	}

	pb, err := client.NewProofBuilder(ctx, cp.Size, f.ReadTile)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res[:40] {
		remote, err := pb.InclusionProof(ctx, r.index)
		if err != nil {
			t.Fatalf("remote InclusionProof(%d): %v", r.index, err)
		}
		localP, err := l.InclusionProof(ctx, r.index, cp.Size)
		if err != nil {
			t.Fatal(err)
		}
		if len(remote) != len(localP) {
			t.Fatalf("proof lengths differ")
		}
		for i := range remote {
			if !bytes.Equal(remote[i], localP[i]) {
				t.Fatalf("proof node %d differs for index %d", i, r.index)
			}
		}
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, r.index, cp.Size, LeafHash(r.entry), remote, cp.Hash); err != nil {
			t.Fatalf("remote proof does not verify: %v", err)
		}
	}
	first, err := VerifyCheckpoint(res[0].cp, l.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	if first.Size < cp.Size {
		cproof, err := pb.ConsistencyProof(ctx, first.Size, cp.Size)
		if err != nil {
			t.Fatal(err)
		}
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, first.Size, cp.Size, cproof, first.Hash, cp.Hash); err != nil {
			t.Fatalf("remote consistency proof does not verify: %v", err)
		}
	}
	// Entry bundles over HTTP, full (0) and partial (1).
	byIndex := map[uint64][]byte{}
	for _, r := range res {
		byIndex[r.index] = r.entry
	}
	for bi := uint64(0); bi < 2; bi++ {
		b, err := client.GetEntryBundle(ctx, f.ReadEntryBundle, bi, cp.Size)
		if err != nil {
			t.Fatalf("GetEntryBundle(%d): %v", bi, err)
		}
		for i, e := range b.Entries {
			if !bytes.Equal(e, byIndex[bi*256+uint64(i)]) {
				t.Fatalf("bundle %d entry %d mismatch", bi, i)
			}
		}
	}

	get := func(path string) *http.Response {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// Headers.
	for _, tc := range []struct{ path, ctype, cache string }{
		{"/log/checkpoint", "text/plain; charset=utf-8", "no-cache"},
		{"/log/tile/0/000", "application/octet-stream", "immutable"},
		{"/log/tile/entries/000", "application/octet-stream", "immutable"},
		{"/log/tile/entries/001.p/4", "application/octet-stream", "max-age=60"},
		{"/log/tile/0/001.p/4", "application/octet-stream", "max-age=60"},
		{"/log/tile/1/000.p/1", "application/octet-stream", "max-age=60"},
	} {
		resp := get(tc.path)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s = %d", tc.path, resp.StatusCode)
			continue
		}
		if len(body) == 0 {
			t.Errorf("GET %s: empty body", tc.path)
		}
		if got := resp.Header.Get("Content-Type"); got != tc.ctype {
			t.Errorf("GET %s Content-Type %q, want %q", tc.path, got, tc.ctype)
		}
		if got := resp.Header.Get("Cache-Control"); !strings.Contains(got, tc.cache) {
			t.Errorf("GET %s Cache-Control %q, want %q", tc.path, got, tc.cache)
		}
	}
	if resp := get("/log/tile/0/009"); resp.StatusCode != 404 || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("missing tile: %d %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/log/checkpoint", nil)
	if resp, err := srv.Client().Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST checkpoint: %v %v", resp.StatusCode, err)
	}
	req, _ = http.NewRequest(http.MethodHead, srv.URL+"/log/checkpoint", nil)
	if resp, err := srv.Client().Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("HEAD checkpoint: %v %v", resp.StatusCode, err)
	}

	// Path traversal and anything outside the tlog-tiles namespace.
	key, err := os.ReadFile(filepath.Join(logDir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	// PRIVATE+KEY+<name>+<hash>+<base64>: the base64 may itself hold '+', so cut at the fourth.
	keyFields := strings.SplitN(strings.TrimSpace(string(key)), "+", 5)
	if len(keyFields) != 5 || len(keyFields[4]) < 40 {
		t.Fatalf("unexpected key file %q", keyFields[:min(len(keyFields), 3)])
	}
	keyB64 := keyFields[4]
	for _, p := range []string{
		"/log/log.key",
		"/log/log.vkey",
		"/log/tile/../log.key",
		"/log/tile/../../log.key",
		"/log/tile/../../log/log.key",
		"/log/tile/%2e%2e/log.key",
		"/log/tile/%2e%2e/%2e%2e/log/log.key",
		"/log/tile/%2E%2E%2Flog.key",
		"/log/tile/..%2flog.key",
		"/log/tile/..%5clog.key",
		"/log/tile/entries/../../log.key",
		"/log/tile/entries/%2e%2e%2f%2e%2e%2flog.key",
		"/log/tile/0/../../log.key",
		"/log/tile/0/000/../../../log.key",
		"/log/tile//000",
		"/log/tile/0//000",
		"/log/tile/0/000/",
		"/log/tile/0/0",
		"/log/tile/0/x000/000",
		"/log/tile/64/000",
		"/log/tile/0/000.p/0",
		"/log/tile/0/000.p/256",
		"/log/tile/0/000.p",
		"/log/tile/0/000.p/",
		"/log/tile/0/000.p/04",
		"/log/tile/entries/000.p",
		"/log/.state/treeState",
		"/log/tile/../.state/treeState",
		"/log/checkpoint/",
		"/log/checkpoint/../log.key",
		"/log/",
		"/log/tile/",
		"/log/tile/0/%00",
	} {
		leaked := func(body []byte) bool {
			return bytes.Contains(body, []byte(keyB64)) || bytes.Contains(body, []byte("PRIVATE+KEY")) || bytes.Contains(body, []byte(`"root"`))
		}
		// Through net/http's client and the ServeMux (which may redirect to a
		// cleaned path; the client follows it). The only 200 allowed is a
		// real tile reached after cleaning.
		resp := get(p)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		final := strings.TrimPrefix(resp.Request.URL.Path, "/log")
		if _, _, _, canonical := resolveTilesPath(final); resp.StatusCode == 200 && !canonical {
			t.Errorf("GET %s served non-tile %s", p, final)
		} else if resp.StatusCode != 200 && resp.StatusCode != 404 && resp.StatusCode != 400 {
			t.Errorf("GET %s = %d", p, resp.StatusCode)
		}
		if leaked(body) {
			t.Errorf("GET %s leaked a private file: %q", p, body)
		}
		// Raw request path, no client-side cleaning or redirect following.
		code, body := rawGet(t, srv.URL, p)
		if code != 404 && code != 400 && code != 301 && code != 307 && code != 308 {
			t.Errorf("raw GET %s = %d, want 404/400/redirect", p, code)
		}
		if leaked(body) {
			t.Errorf("raw GET %s leaked a private file: %q", p, body)
		}
		// The handler alone, without ServeMux cleaning: strictly 404.
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL.Path = strings.TrimPrefix(p, "/log")
		if dec, err := url.PathUnescape(req.URL.Path); err == nil {
			req.URL.Path = dec
		}
		l.Handler().ServeHTTP(rec, req)
		if rec.Code != 404 {
			t.Errorf("handler GET %q = %d, want 404", req.URL.Path, rec.Code)
		}
		if leaked(rec.Body.Bytes()) {
			t.Errorf("handler GET %q leaked a private file", req.URL.Path)
		}
	}
}

// rawGet sends the request path verbatim over a raw TCP connection.
func rawGet(t *testing.T, base, path string) (int, []byte) {
	t.Helper()
	u, _ := url.Parse(base)
	req, err := http.NewRequest(http.MethodGet, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque = path
	req.Host = u.Host
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatalf("raw GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestResolveTilesPath(t *testing.T) {
	ok := map[string]string{
		"/checkpoint":               "checkpoint",
		"/tile/0/000":               "tile/0/000",
		"/tile/3/x001/x234/067.p/8": "tile/3/x001/x234/067.p/8",
		"/tile/entries/x001/234":    "tile/entries/x001/234",
		"/tile/entries/000.p/255":   "tile/entries/000.p/255",
		"/tile/63/000":              "tile/63/000",
	}
	for in, want := range ok {
		got, _, _, good := resolveTilesPath(in)
		if !good || got != want {
			t.Errorf("resolveTilesPath(%q) = %q, %v; want %q", in, got, good, want)
		}
	}
	for _, in := range []string{"", "/", "/tile/0/..", "/tile/0/x000/001", "/tile/-1/000", "/tile/00/000", "/tile/+1/000", "/tile/0/1000", "/tile/entries/entries/000", "/tile/0/000.p/1/2", "/tile/0/000\\..\\x"} {
		if got, _, _, good := resolveTilesPath(in); good {
			t.Errorf("resolveTilesPath(%q) accepted as %q", in, got)
		}
	}
}
