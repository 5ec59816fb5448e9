package daemon

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// singleClients is the number of concurrent clients of the SingleConcurrent benchmarks:
// Coordinators that each send one envelope per request and wait for its 201 before the next.
const singleClients = 64

// parallelChains and parallelBatch shape the BatchParallel benchmarks: parallelChains
// clients, one per chain, each posting JSON Lines batches of parallelBatch envelopes.
const parallelChains, parallelBatch = 16, 500

// singleChainsPath is the ingest path of the SingleConcurrent benchmarks, in the form
// concurrentSingles takes: client c posts to chain wsp_single_<c>.
const singleChainsPath = "/v1/chains/wsp_single_%d/entries"

// jsonlBodies returns n JSON Lines bodies of batch consecutive envelopes of chain ws.
func jsonlBodies(b *testing.B, ws string, n, batch int) [][]byte {
	b.Helper()
	recs := envelopes(b, ws, n*batch)
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = bytes.Join(recs[i*batch:(i+1)*batch], []byte("\n"))
	}
	return bodies
}

// singleBodies returns, for each of clients clients, per single-envelope bodies of its own
// chain wsp_single_<c>, in chain order.
func singleBodies(b *testing.B, clients, per int) [][][]byte {
	b.Helper()
	bodies := make([][][]byte, clients)
	for c := range bodies {
		bodies[c] = envelopes(b, fmt.Sprintf("wsp_single_%d", c), per)
	}
	return bodies
}

// concurrentSingles runs len(bodies) clients at once, client c posting bodies[c] in order as
// single-envelope requests (application/json), each on its own connection and waiting for
// the 201 before its next request. A "%d" in url is replaced by the client's number, so each
// client can post to its own chain (see singleChainsPath).
//
// It resets the benchmark timer before the first request and stops it after the last answer,
// so setup before and checks after are not timed. It returns the envelopes per second over
// that span and the 50th and 99th percentile request latencies in milliseconds (reported as
// envelopes/s, p50-ms and p99-ms); any request that fails or is not answered 201 fails the
// benchmark.
func concurrentSingles(b *testing.B, url string, bodies [][][]byte) (perSec, p50ms, p99ms float64) {
	b.Helper()
	lat, elapsed := runClients(b, url, "application/json", bodies)
	return float64(len(lat)) / elapsed.Seconds(), millis(percentile(lat, 50)), millis(percentile(lat, 99))
}

// listChains lists the chains of the daemon at base once, the read that ends each
// benchmark, so that runs before and after the embedded store's change do the same work.
func listChains(b *testing.B, base string) {
	b.Helper()
	resp, err := http.Get(base + "/v1/chains?limit=1")
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("GET /v1/chains: %s", resp.Status)
	}
}

// runClients runs len(bodies) clients at once, client c posting bodies[c] in order with
// contentType to url (its "%d" replaced by c), each on its own connection and waiting for the
// 201 before its next request. It resets the benchmark timer before the first request and
// stops it after the last answer, and returns every request's latency in ascending order and
// the time from the first request to the last answer. The first request that fails or is not
// answered 201 stops the other clients and fails the benchmark.
func runClients(b *testing.B, url, contentType string, bodies [][][]byte) (sorted []time.Duration, elapsed time.Duration) {
	b.Helper()
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	var (
		first sync.Once
		err   error
		wg    sync.WaitGroup
	)
	lat := make([][]time.Duration, len(bodies))
	b.ResetTimer()
	start := time.Now()
	for c := range bodies {
		wg.Go(func() {
			var cerr error
			lat[c], cerr = postInOrder(ctx, strings.Replace(url, "%d", strconv.Itoa(c), 1), contentType, bodies[c])
			if cerr != nil {
				first.Do(func() { err = fmt.Errorf("client %d: %w", c, cerr); cancel() })
			}
		})
	}
	wg.Wait()
	elapsed = time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	sorted = slices.Concat(lat...)
	slices.Sort(sorted)
	return sorted, elapsed
}

// postInOrder posts each body to url in turn on one connection of its own, as one client
// process would, and returns how long each request took to be answered 201.
func postInOrder(ctx context.Context, url, contentType string, bodies [][]byte) ([]time.Duration, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	lat := make([]time.Duration, 0, len(bodies))
	for i, body := range bodies {
		t0 := time.Now()
		if err := postCreated(ctx, c, url, contentType, body); err != nil {
			return nil, fmt.Errorf("request %d: %w", i, err)
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// postCreated sends body to url and reads the whole answer; anything but 201 Created is an error.
func postCreated(ctx context.Context, c *http.Client, url, contentType string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("POST %s: %w", url, err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	msg, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("POST %s: reading the answer: %w", url, err)
	}
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("POST %s: %s: %.200s", url, resp.Status, msg)
	}
	return nil
}

// percentile returns the p-th percentile (nearest rank, 0 < p <= 100) of sorted, which is in
// ascending order; zero when sorted is empty.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// millis is d in milliseconds.
func millis(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
}

// TestPercentile checks the nearest-rank percentiles the concurrent benchmarks report.
func TestPercentile(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		d := make([]time.Duration, len(n))
		for i, v := range n {
			d[i] = time.Duration(v) * time.Millisecond
		}
		return d
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", ms(7), 99, 7 * time.Millisecond},
		{"median of two", ms(1, 9), 50, time.Millisecond},
		{"median of three", ms(1, 2, 9), 50, 2 * time.Millisecond},
		{"p50 of 1..100", ms(hundred...), 50, 50 * time.Millisecond},
		{"p99 of 1..100", ms(hundred...), 99, 99 * time.Millisecond},
		{"p100 of 1..100", ms(hundred...), 100, 100 * time.Millisecond},
		{"p99 of ten: the slowest", ms(1, 1, 1, 1, 1, 1, 1, 1, 1, 40), 99, 40 * time.Millisecond},
		{"p50 ignores one outlier", ms(1, 1, 1, 1, 1, 1, 1, 1, 1, 40), 50, time.Millisecond},
	} {
		if got := percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("%s: percentile(%v) = %v, want %v", tc.name, tc.p, got, tc.want)
		}
	}
}
