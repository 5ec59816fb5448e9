package daemon

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/benchutil"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
)

// benchDaemon starts evidentd (real Tessera log, real SQLite with synchronous=FULL) behind
// real HTTP on loopback.
func benchDaemon(b *testing.B, interval time.Duration) (*Daemon, string) {
	b.Helper()
	d, err := Open(context.Background(), Config{Data: b.TempDir(), CheckpointInterval: interval, SealEvery: 0,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	b.Cleanup(func() { srv.Close(); d.Close() })
	return d, srv.URL
}

func envelopes(b *testing.B, ws string, n int) [][]byte {
	b.Helper()
	bl, err := chapscenario.Long(ws, n, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), nil)
	if err != nil {
		b.Fatal(err)
	}
	return bl.Records()
}

func mustPost(b *testing.B, c *http.Client, url, ct string, body []byte) {
	resp, err := c.Post(url, ct, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b.Fatalf("POST: %s", resp.Status)
	}
}

// BenchmarkIngestHTTPSingle: one signed envelope per request, each durable before its 201.
func BenchmarkIngestHTTPSingle(b *testing.B) {
	_, base := benchDaemon(b, time.Second)
	recs := envelopes(b, "wsp_bench", b.N)
	c := &http.Client{}
	url := base + "/v1/chains/wsp_bench/entries"
	b.ResetTimer()
	cpu := benchutil.StartCPU()
	for i := 0; i < b.N; i++ {
		mustPost(b, c, url, "application/json", recs[i])
	}
	b.StopTimer()
	listChains(b, base)
	cpu.Report(b, b.N, "envelope")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "envelopes/s")
}

// BenchmarkIngestHTTPBatch: JSON Lines batches of 1000 signed envelopes per request.
func BenchmarkIngestHTTPBatch(b *testing.B) {
	const batch = 1000
	_, base := benchDaemon(b, time.Second)
	n := b.N * batch
	recs := envelopes(b, "wsp_bench", n)
	bodies := make([][]byte, b.N)
	for i := range bodies {
		bodies[i] = bytes.Join(recs[i*batch:(i+1)*batch], []byte("\n"))
	}
	c := &http.Client{}
	url := base + "/v1/chains/wsp_bench/entries"
	b.ResetTimer()
	cpu := benchutil.StartCPU()
	for i := 0; i < b.N; i++ {
		mustPost(b, c, url, "application/jsonl", bodies[i])
	}
	b.StopTimer()
	listChains(b, base)
	cpu.Report(b, n, "envelope")
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "envelopes/s")
}

// BenchmarkIngestHTTPBatchParallel: parallelChains chains ingested concurrently, one client
// each, in JSON Lines batches of parallelBatch.
func BenchmarkIngestHTTPBatchParallel(b *testing.B) {
	const batch, chains = parallelBatch, parallelChains
	_, base := benchDaemon(b, time.Second)
	per := (b.N + chains - 1) / chains
	bodies := make([][][]byte, chains)
	for c := range bodies {
		bodies[c] = jsonlBodies(b, fmt.Sprintf("wsp_bench_%d", c), per, batch)
	}
	cpu := benchutil.StartCPU()
	_, elapsed := runClients(b, base+"/v1/chains/wsp_bench_%d/entries", "application/jsonl", bodies)
	listChains(b, base)
	cpu.Report(b, per*chains*batch, "envelope")
	b.ReportMetric(float64(per*chains*batch)/elapsed.Seconds(), "envelopes/s")
}

// BenchmarkIngestHTTPSingleConcurrent: singleClients (64) Coordinators, each on its own
// chain, send one signed envelope per request and wait for its 201 — durable — before the
// next: what group commit is for. It reports envelopes/s and the p50 and p99 latency.
func BenchmarkIngestHTTPSingleConcurrent(b *testing.B) {
	d, base := benchDaemon(b, time.Second)
	per := (b.N + singleClients - 1) / singleClients
	bodies := singleBodies(b, singleClients, per)
	cpu := benchutil.StartCPU()
	perSec, p50, p99 := concurrentSingles(b, base+singleChainsPath, bodies)
	listChains(b, base)
	cpu.Report(b, per*singleClients, "envelope")
	b.ReportMetric(perSec, "envelopes/s")
	b.ReportMetric(p50, "p50-ms")
	b.ReportMetric(p99, "p99-ms")
	if groups, batches := d.Pipeline().GroupCommits(); groups > 0 {
		b.ReportMetric(float64(batches)/float64(groups), "requests/fsync")
	}
}

// BenchmarkSealToReceipt: from POST /seal to the receipt in hand, at a 1 s checkpoint interval.
func BenchmarkSealToReceipt(b *testing.B) {
	_, base := benchDaemon(b, time.Second)
	recs := envelopes(b, "wsp_seal", b.N+4)
	c := &http.Client{}
	mustPost(b, c, base+"/v1/chains/wsp_seal/entries", "application/jsonl", bytes.Join(recs[:4], []byte("\n")))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		mustPost(b, c, base+"/v1/chains/wsp_seal/entries", "application/json", recs[4+i])
		b.StartTimer()
		mustPost(b, c, base+"/v1/chains/wsp_seal/seal", "", nil)
	}
	b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/seal")
}

// referenceBodies returns n reference-form envelopes in JSON Lines bodies of batch records:
// bare, or wrapped as the Coordinator's audit entries {seq, arrived, envelope, prev_hash}.
func referenceBodies(b *testing.B, ws string, n, batch int, entries bool) [][]byte {
	b.Helper()
	bl, err := chapscenario.LongForm(ws, n, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), chapscenario.Reference, nil)
	if err != nil {
		b.Fatal(err)
	}
	recs := bl.Records()
	if entries {
		prev := ledger.Genesis
		for i, r := range recs {
			c, err := canonical.Canonicalize(r, canonical.CHAP)
			if err != nil {
				b.Fatal(err)
			}
			recs[i] = fmt.Appendf(nil, `{"seq":%d,"arrived":"2026-01-01T00:00:00.000Z","envelope":%s,"prev_hash":"%s"}`, i, r, prev)
			prev = ledger.NextLink(c, prev)
		}
	}
	var bodies [][]byte
	for i := 0; i < len(recs); i += batch {
		bodies = append(bodies, bytes.Join(recs[i:min(i+batch, len(recs))], []byte("\n")))
	}
	return bodies
}

// BenchmarkIngestReference: batches of 1000 of the reference Coordinator's envelopes, bare
// (a sidecar) and as its audit entries (an import: seq and prev_hash checked and kept).
func BenchmarkIngestReference(b *testing.B) {
	const batch = 1000
	for _, form := range []struct {
		name    string
		entries bool
	}{{"envelopes", false}, {"audit-entries", true}} {
		b.Run(form.name, func(b *testing.B) {
			_, base := benchDaemon(b, time.Second)
			bodies := referenceBodies(b, "wsp_bench", b.N*batch, batch, form.entries)
			c := &http.Client{}
			url := base + "/v1/chains/wsp_bench/entries"
			b.ResetTimer()
			for _, body := range bodies {
				mustPost(b, c, url, "application/jsonl", body)
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
