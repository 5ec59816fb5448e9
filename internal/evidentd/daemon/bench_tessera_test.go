package daemon

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/storage/posix"
	"golang.org/x/mod/sumdb/note"
)

// The benchmarks below measure the baseline: what a user would build instead of
// Evident, stock Tessera's POSIX storage behind a plain HTTP handler that appends each
// envelope's bytes as a raw leaf, with no signature check and no chain rule. They take the
// same request bodies as the BenchmarkIngestHTTP* benchmarks they mirror (same pre-signed CHAP
// envelopes, batch sizes, chains and clients) and report the same envelopes/s metric, so both
// come out of one run.
//
// Tessera is configured as its reference POSIX server (cmd/conformance/posix) is, with the
// checkpoint interval benchDaemon uses, and with the batch-size hint its README recommends:
// the batch size is the number of entries the workload has in flight at once, so a batch is
// sequenced as soon as its last entry arrives instead of after the batch's maximum age.

// stockTesseraMaxBody bounds a request body of the baseline handler.
const stockTesseraMaxBody = 64 << 20

// stockTessera is a running baseline: the handler's base URL and what is needed to read the
// log's checkpoint back and verify it.
type stockTessera struct {
	url      string
	reader   tessera.LogReader
	origin   string
	verifier note.Verifier
}

// openStockTessera starts stock Tessera POSIX storage in a temporary directory, batching
// inFlight entries and publishing a checkpoint every interval, behind a rawLeafHandler on a
// loopback HTTP server at POST /v1/chains/{chain}/entries (the chain is ignored).
func openStockTessera(tb testing.TB, inFlight uint, interval time.Duration) *stockTessera {
	tb.Helper()
	dir := tb.TempDir()
	skey, vkey, err := note.GenerateKey(rand.Reader, "bench.evident.example/stock-tessera")
	if err != nil {
		tb.Fatalf("log key: %v", err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		tb.Fatalf("log signer: %v", err)
	}
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		tb.Fatalf("log verifier: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	driver, err := posix.New(ctx, posix.Config{Path: dir})
	if err != nil {
		cancel()
		tb.Fatalf("posix driver: %v", err)
	}
	appender, shutdown, reader, err := tessera.NewAppender(ctx, driver, tessera.NewAppendOptions().
		WithCheckpointSigner(signer).
		WithCheckpointInterval(interval).
		WithCheckpointRepublishInterval(time.Minute).
		WithBatching(inFlight, tessera.DefaultBatchMaxAge).
		WithAntispam(tessera.DefaultAntispamInMemorySize, nil))
	if err != nil {
		cancel()
		tb.Fatalf("tessera appender: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/chains/{chain}/entries", rawLeafHandler{appender: appender})
	srv := httptest.NewServer(mux)
	tb.Cleanup(func() {
		srv.Close()
		if err := shutdown(context.Background()); err != nil {
			tb.Errorf("tessera shutdown: %v", err)
		}
		cancel()
	})
	return &stockTessera{url: srv.URL, reader: reader, origin: signer.Name(), verifier: verifier}
}

// awaitCheckpoint checks that the log holds exactly want leaves, all of them integrated (the
// POSIX driver integrates a batch before its futures resolve), and waits until it publishes a
// checkpoint of that size, verifying its signature; it fails if none does within timeout.
func (s *stockTessera) awaitCheckpoint(tb testing.TB, want uint64, timeout time.Duration) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if n, err := s.reader.IntegratedSize(ctx); err != nil || n != want {
		tb.Fatalf("integrated tree size %d (%v), want %d", n, err, want)
	}
	var size uint64
	for {
		raw, err := s.reader.ReadCheckpoint(ctx)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			tb.Fatalf("reading the checkpoint: %v", err)
		}
		if err == nil {
			cp, _, _, err := log.ParseCheckpoint(raw, s.origin, s.verifier)
			if err != nil {
				tb.Fatalf("checkpoint: %v", err)
			}
			if size = cp.Size; size == want {
				return
			}
			if size > want {
				tb.Fatalf("checkpoint size %d, more than the %d leaves appended", size, want)
			}
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("no checkpoint of size %d after %v (last size %d)", want, timeout, size)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// rawLeafHandler appends each line of a JSON Lines body (Content-Type application/jsonl or
// application/x-ndjson), or any other body whole, as a raw leaf of a Tessera log, waits until
// every leaf is sequenced (durable on disk for the POSIX driver), and answers 201 with the
// leaves' indices in body order.
type rawLeafHandler struct {
	appender *tessera.Appender
}

// rawLeafAnswer is the body of a 201 from rawLeafHandler.
type rawLeafAnswer struct {
	Indices []uint64 `json:"indices"`
}

func (h rawLeafHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, stockTesseraMaxBody))
	if err != nil {
		http.Error(w, fmt.Sprintf("reading the body: %v", err), http.StatusBadRequest)
		return
	}
	leaves := rawLeaves(body, r.Header.Get("Content-Type"))
	if len(leaves) == 0 {
		http.Error(w, "no leaves in the body", http.StatusBadRequest)
		return
	}
	futures := make([]tessera.IndexFuture, len(leaves))
	for i, leaf := range leaves {
		futures[i] = h.appender.Add(r.Context(), tessera.NewEntry(leaf))
	}
	out := rawLeafAnswer{Indices: make([]uint64, len(futures))}
	for i, f := range futures {
		idx, err := f()
		if err != nil {
			http.Error(w, fmt.Sprintf("leaf %d: %v", i, err), http.StatusInternalServerError)
			return
		}
		out.Indices[i] = idx.Index
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(out) // the client has gone if this fails; nothing to undo
}

// rawLeaves splits a request body into leaves: the non-blank lines of a JSON Lines body,
// or the whole body, trimmed, for any other content type.
func rawLeaves(body []byte, contentType string) [][]byte {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt != "application/jsonl" && mt != "application/x-ndjson" {
		if body = bytes.TrimSpace(body); len(body) == 0 {
			return nil
		}
		return [][]byte{body}
	}
	var leaves [][]byte
	for line := range bytes.SplitSeq(body, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			leaves = append(leaves, line)
		}
	}
	return leaves
}

// TestStockTesseraBaseline checks the benchmarks' baseline itself: each JSON Lines line and
// each single body is one leaf, the 201 names the indices in order, and a checkpoint signed
// by the log commits to exactly the leaves appended.
func TestStockTesseraBaseline(t *testing.T) {
	s := openStockTessera(t, 4, 100*time.Millisecond)
	url := s.url + "/v1/chains/wsp_any/entries"
	for _, tc := range []struct {
		contentType string
		body        string
		want        []uint64
	}{
		{"application/jsonl", "{\"n\":0}\n{\"n\":1}\n\n{\"n\":2}\n", []uint64{0, 1, 2}},
		{"application/json", " {\"n\":3}\n", []uint64{3}},
		{"application/x-ndjson", "{\"n\":4}", []uint64{4}},
		{"application/json", "{\"n\":0}", []uint64{0}}, // the same bytes again: Tessera's antispam
	} {
		resp, err := http.Post(url, tc.contentType, bytes.NewBufferString(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		var got rawLeafAnswer
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated || err != nil {
			t.Fatalf("POST %q: %s, decoding the answer: %v", tc.body, resp.Status, err)
		}
		if fmt.Sprint(got.Indices) != fmt.Sprint(tc.want) {
			t.Errorf("POST %q: indices %v, want %v", tc.body, got.Indices, tc.want)
		}
	}
	resp, err := http.Post(url, "application/jsonl", bytes.NewBufferString("\n \n"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a body of blank lines: %s, want 400", resp.Status)
	}
	s.awaitCheckpoint(t, 5, 10*time.Second)
}

// tesseraAwait is how long the benchmarks wait, untimed, for the checkpoint that covers every
// leaf they appended: several checkpoint intervals.
const tesseraAwait = 30 * time.Second

// BenchmarkTesseraPOSIXSingle mirrors BenchmarkIngestHTTPSingle on the baseline: one client
// posts one envelope per request, each sequenced to disk before its 201.
func BenchmarkTesseraPOSIXSingle(b *testing.B) {
	s := openStockTessera(b, 1, time.Second)
	recs := envelopes(b, "wsp_bench", b.N)
	c := &http.Client{}
	url := s.url + "/v1/chains/wsp_bench/entries"
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mustPost(b, c, url, "application/json", recs[i])
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "envelopes/s")
	s.awaitCheckpoint(b, uint64(b.N), tesseraAwait)
}

// BenchmarkTesseraPOSIXBatch mirrors BenchmarkIngestHTTPBatch on the baseline: one client
// posts JSON Lines batches of 1000 envelopes, every leaf sequenced to disk before the 201.
func BenchmarkTesseraPOSIXBatch(b *testing.B) {
	const batch = 1000
	s := openStockTessera(b, batch, time.Second)
	bodies := jsonlBodies(b, "wsp_bench", b.N, batch)
	c := &http.Client{}
	url := s.url + "/v1/chains/wsp_bench/entries"
	b.ResetTimer()
	for _, body := range bodies {
		mustPost(b, c, url, "application/jsonl", body)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "envelopes/s")
	s.awaitCheckpoint(b, uint64(b.N*batch), tesseraAwait)
}

// BenchmarkTesseraPOSIXBatchParallel mirrors BenchmarkIngestHTTPBatchParallel on the
// baseline: parallelChains clients, one per chain, post JSON Lines batches of parallelBatch
// envelopes at once.
func BenchmarkTesseraPOSIXBatchParallel(b *testing.B) {
	const batch, chains = parallelBatch, parallelChains
	s := openStockTessera(b, batch*chains, time.Second)
	per := (b.N + chains - 1) / chains
	bodies := make([][][]byte, chains)
	for c := range bodies {
		bodies[c] = jsonlBodies(b, fmt.Sprintf("wsp_bench_%d", c), per, batch)
	}
	_, elapsed := runClients(b, s.url+"/v1/chains/wsp_bench_%d/entries", "application/jsonl", bodies)
	b.ReportMetric(float64(per*chains*batch)/elapsed.Seconds(), "envelopes/s")
	s.awaitCheckpoint(b, uint64(per*chains*batch), tesseraAwait)
}

// BenchmarkTesseraPOSIXSingleConcurrent mirrors BenchmarkIngestHTTPSingleConcurrent on the
// baseline: 64 clients, each on its own chain, post one envelope per request and wait for
// its 201 before the next; it reports envelopes/s and the p50 and p99 request latency.
func BenchmarkTesseraPOSIXSingleConcurrent(b *testing.B) {
	s := openStockTessera(b, singleClients, time.Second)
	per := (b.N + singleClients - 1) / singleClients
	bodies := singleBodies(b, singleClients, per)
	perSec, p50, p99 := concurrentSingles(b, s.url+singleChainsPath, bodies)
	b.ReportMetric(perSec, "envelopes/s")
	b.ReportMetric(p50, "p50-ms")
	b.ReportMetric(p99, "p99-ms")
	s.awaitCheckpoint(b, uint64(per*singleClients), tesseraAwait)
}
