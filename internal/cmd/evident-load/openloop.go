package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"
)

// lateBy is how far past its scheduled time a request may start before it counts as late.
const lateBy = time.Millisecond

// openLoop is what an open-loop run measured.
type openLoop struct {
	requests int             // answered requests (one envelope each)
	elapsed  time.Duration   // from the first scheduled start to the last answer
	latency  []time.Duration // each request's scheduled start to its answer, ascending
	late     int             // requests that started more than lateBy after their scheduled time
}

// sendOpen offers the prepared single-envelope requests of work at cfg.rate a second, open
// loop: request k (k = 0, 1, …) is scheduled at k/rate after the start and belongs to chain
// k mod chains, round robin, so chain c's j-th envelope is request j·chains + c. A chain's
// envelopes are hash-chained and must arrive in order, so a chain has one request in flight
// at most: when its previous answer comes after the next request's scheduled time, that
// request starts late. Its latency is still counted from its scheduled time (no coordinated
// omission): a service that falls behind shows it in the latency, not in a lower offered rate.
func sendOpen(ctx context.Context, cfg config, rs *replicas, work []*chainLoad) (openLoop, error) {
	interval := float64(time.Second) / cfg.rate
	lat := make([][]time.Duration, cfg.chains)
	late := make([]int, cfg.chains)
	errs := make([]error, cfg.chains)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for c := range cfg.chains {
		wg.Go(func() {
			path := fmt.Sprintf("/v1/chains/%s_%d/entries", cfg.prefix, c)
			for j, body := range work[c].bodies {
				at := start.Add(time.Duration(float64(j*cfg.chains+c) * interval))
				if d := time.Until(at); d > 0 {
					t := time.NewTimer(d)
					select {
					case <-ctx.Done():
						t.Stop()
						errs[c] = ctx.Err()
						return
					case <-t.C:
					}
				}
				if time.Since(at) > lateBy {
					late[c]++
				}
				if err := rs.post(ctx, path, contentType(1), body); err != nil {
					errs[c] = fmt.Errorf("chain %d, envelope %d: %w", c, j, err)
					cancel()
					return
				}
				lat[c] = append(lat[c], time.Since(at))
			}
		})
	}
	wg.Wait()
	r := openLoop{elapsed: time.Since(start), latency: slices.Concat(lat...)}
	if err := errors.Join(errs...); err != nil {
		return r, err
	}
	slices.Sort(r.latency)
	r.requests = len(r.latency)
	for _, n := range late {
		r.late += n
	}
	return r, nil
}

// report writes the achieved rate, the latency percentiles and the late starts.
func (r openLoop) report(w io.Writer, offered float64, chains int) {
	fmt.Fprintf(w, "open loop: offered %.0f envelopes/s on %d chain(s), %d requests of 1 envelope in %.2fs: achieved %.1f envelopes/s\n",
		offered, chains, r.requests, r.elapsed.Seconds(), float64(r.requests)/r.elapsed.Seconds())
	fmt.Fprintf(w, "latency from scheduled start (ms): p50 %.2f p90 %.2f p99 %.2f p99.9 %.2f max %.2f\n",
		ms(r.percentile(50)), ms(r.percentile(90)), ms(r.percentile(99)), ms(r.percentile(99.9)), ms(r.percentile(100)))
	fmt.Fprintf(w, "started late by more than %v: %d of %d requests\n", lateBy, r.late, r.requests)
}

// percentile is the p-th percentile of the latencies (nearest rank, 0 < p <= 100).
func (r openLoop) percentile(p float64) time.Duration {
	if len(r.latency) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(r.latency))))
	return r.latency[min(max(rank, 1), len(r.latency))-1]
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
