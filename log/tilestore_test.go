package log

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/evident-log/evident/internal/testinfra"
)

// tileFixture is what the tile stores under test hold: tlog-tiles objects, and files
// beside them that Handler must never serve.
var tileFixture = map[string]string{
	"checkpoint":        "origin\n1\nroot\n",
	"tile/0/000":        "full tile",
	"tile/0/001.p/4":    "partial tile",
	"tile/entries/000":  "full bundle",
	"log.key":           "PRIVATE+KEY+secret",
	".state/treeState":  `{"root":"secret"}`,
	"tile/0/000.p/1.sw": "not a tile name",
}

// posixTiles writes the fixture into a fresh log directory.
func posixTiles(t *testing.T) tileStore {
	dir := t.TempDir()
	for name, body := range tileFixture {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A directory where a tile would be is not served.
	if err := os.MkdirAll(filepath.Join(dir, "tile", "0", "002"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dirStore(dir)
}

// bucketTiles puts the fixture into a fresh bucket of the test S3 server, under a prefix.
func bucketTiles(t *testing.T) tileStore {
	srv := testinfra.S3Server(t)
	obj, _, _ := newObjectStore(&AWSOptions{Endpoint: srv.Endpoint, Bucket: srv.Bucket, Prefix: "logs/one",
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	ctx := t.Context()
	if err := obj.ensureBucket(ctx, true); err != nil {
		t.Fatal(err)
	}
	for name, body := range tileFixture {
		if _, err := obj.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(obj.key(name)),
			Body: strings.NewReader(body)}); err != nil {
			t.Fatalf("put %s: %v", name, err)
		}
	}
	return obj
}

// TestTilesHandler runs Handler's HTTP contract over both tile stores: the POSIX log
// directory always, the bucket when an S3-compatible test server is configured.
func TestTilesHandler(t *testing.T) {
	const octets, text = "application/octet-stream", "text/plain; charset=utf-8"
	cases := []struct {
		name, method, path string
		code               int
		ctype, cache, body string
	}{
		{"checkpoint", "GET", "/checkpoint", 200, text, cacheCheckpoint, tileFixture["checkpoint"]},
		{"full tile", "GET", "/tile/0/000", 200, octets, cacheImmutable, tileFixture["tile/0/000"]},
		{"partial tile", "GET", "/tile/0/001.p/4", 200, octets, cachePartial, tileFixture["tile/0/001.p/4"]},
		{"full bundle", "GET", "/tile/entries/000", 200, octets, cacheImmutable, tileFixture["tile/entries/000"]},
		{"HEAD", "HEAD", "/tile/entries/000", 200, octets, cacheImmutable, ""},
		{"missing tile", "GET", "/tile/0/003", 404, "", cacheMissing, ""},
		{"directory at a tile path", "GET", "/tile/0/002", 404, "", cacheMissing, ""},
		{"missing bundle", "GET", "/tile/entries/001", 404, "", cacheMissing, ""},
		{"key file", "GET", "/log.key", 404, "", cacheMissing, ""},
		{"traversal", "GET", "/tile/../log.key", 404, "", cacheMissing, ""},
		{"state", "GET", "/.state/treeState", 404, "", cacheMissing, ""},
		{"not canonical", "GET", "/tile/0/000.p/1.sw", 404, "", cacheMissing, ""},
		{"POST", "POST", "/checkpoint", 405, "", "", ""},
	}
	for _, st := range []struct {
		name string
		open func(t *testing.T) tileStore
	}{{"posix", posixTiles}, {"bucket", bucketTiles}} {
		t.Run(st.name, func(t *testing.T) {
			tiles := st.open(t)
			srv := httptest.NewServer(http.StripPrefix("/log", tilesHandler{tiles: tiles}))
			defer srv.Close()
			for _, tc := range cases {
				if st.name == "bucket" && tc.name == "directory at a tile path" {
					continue // a bucket has no directories
				}
				req, _ := http.NewRequest(tc.method, srv.URL+"/log"+tc.path, nil)
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.code {
					t.Errorf("%s: %s %s = %d, want %d", tc.name, tc.method, tc.path, resp.StatusCode, tc.code)
					continue
				}
				if tc.ctype != "" && resp.Header.Get("Content-Type") != tc.ctype {
					t.Errorf("%s: Content-Type %q, want %q", tc.name, resp.Header.Get("Content-Type"), tc.ctype)
				}
				if resp.Header.Get("Cache-Control") != tc.cache {
					t.Errorf("%s: Cache-Control %q, want %q", tc.name, resp.Header.Get("Cache-Control"), tc.cache)
				}
				if tc.code == 200 && tc.method == "GET" && string(body) != tc.body {
					t.Errorf("%s: body %q, want %q", tc.name, body, tc.body)
				}
				if tc.code == 405 && resp.Header.Get("Allow") != "GET, HEAD" {
					t.Errorf("%s: Allow %q", tc.name, resp.Header.Get("Allow"))
				}
				if tc.code == 200 && resp.Header.Get("X-Content-Type-Options") != "nosniff" {
					t.Errorf("%s: no nosniff", tc.name)
				}
				if bytes.Contains(body, []byte("secret")) {
					t.Errorf("%s: leaked %q", tc.name, body)
				}
			}

			// Range and conditional requests, as for any static file.
			req, _ := http.NewRequest("GET", srv.URL+"/log/tile/0/000", nil)
			req.Header.Set("Range", "bytes=5-8")
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusPartialContent || string(body) != "tile" {
				t.Errorf("range: %d %q", resp.StatusCode, body)
			}
			if lm := resp.Header.Get("Last-Modified"); lm != "" {
				req.Header.Del("Range")
				req.Header.Set("If-Modified-Since", lm)
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusNotModified {
					t.Errorf("If-Modified-Since: %d", resp.StatusCode)
				}
			}

			// The open-time check reads the published checkpoint through the same store.
			if _, _, err := tiles.read(t.Context(), "tile/0/009"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("read of a missing tile: %v, want fs.ErrNotExist", err)
			}
			if err := checkPublishedCheckpoint(t.Context(), tiles, "origin", nil); err == nil {
				t.Error("a malformed checkpoint passed the open-time check")
			}
		})
	}
}

// TestTilesHandlerUnavailable: an object store that does not answer is a 502, not a 404,
// and the answer is not cached.
func TestTilesHandlerUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	obj, cfg, opts := newObjectStore(&AWSOptions{Endpoint: "http://" + addr, Bucket: "b", AccessKeyID: "k", SecretAccessKey: "s"})
	obj.client = s3.NewFromConfig(*cfg, opts, func(o *s3.Options) { o.RetryMaxAttempts = 1 }) // fail fast
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, _, err := obj.read(ctx, "checkpoint"); !errors.Is(err, errUnavailable) || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read from a closed port: %v, want errUnavailable", err)
	}
	rec := httptest.NewRecorder()
	tilesHandler{tiles: obj}.ServeHTTP(rec, httptest.NewRequest("GET", "/checkpoint", nil).WithContext(ctx))
	if rec.Code != http.StatusBadGateway || rec.Header().Get("Cache-Control") != cacheMissing {
		t.Fatalf("GET /checkpoint with the store down: %d %q", rec.Code, rec.Header().Get("Cache-Control"))
	}
	if err := checkPublishedCheckpoint(ctx, obj, "origin", nil); !errors.Is(err, errUnavailable) {
		t.Fatalf("open-time check with the store down: %v", err)
	}
}
