package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/evident-log/evident/internal/wait"
)

// maxAttempts bounds the attempts of one request, over all replicas together.
const maxAttempts = 10

// maxPause bounds the wait a 503's Retry-After asks for.
const maxPause = 5 * time.Second

// replicas spreads requests over evidentd replicas: each request starts at the next replica
// in turn and goes on to the following ones when one cannot take it. Ingest is safe to
// retry (records already stored are acknowledged again as duplicates), so a request that
// may or may not have reached a replica that then failed is sent again elsewhere.
type replicas struct {
	urls   []string
	client *http.Client
	next   atomic.Uint64

	requests  atomic.Int64 // requests answered 200 or 201
	bytes     atomic.Int64 // the bodies of those requests
	failovers atomic.Int64 // attempts after the first, over all requests
}

// newReplicas keeps up to conns idle connections to each replica (one a concurrent chain), so
// that connections are reused rather than opened for most requests.
func newReplicas(urls []string, conns int) *replicas {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = max(conns, 2)
	return &replicas{urls: urls, client: &http.Client{Timeout: 2 * time.Minute, Transport: tr}}
}

// retryable is an attempt's failure that another attempt may overcome, after pause.
type retryable struct {
	err   error
	pause time.Duration
}

func (r *retryable) Error() string { return r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

// post sends body to path on the replicas until one accepts it (201 or 200), a replica
// refuses it for good, ctx ends, or maxAttempts were made.
func (rs *replicas) post(ctx context.Context, path, ct string, body []byte) error {
	first := rs.next.Add(1) - 1
	var err error
	for attempt := range uint64(maxAttempts) {
		if attempt > 0 {
			rs.failovers.Add(1)
		}
		base := rs.urls[(first+attempt)%uint64(len(rs.urls))]
		err = rs.try(ctx, base+path, ct, body)
		if err == nil {
			rs.bytes.Add(int64(len(body)))
		}
		var rt *retryable
		if err == nil || !errors.As(err, &rt) {
			return err
		}
		if err := wait.Sleep(ctx, rt.pause); err != nil {
			return fmt.Errorf("POST %s: %w (last attempt: %w)", path, err, rt.err)
		}
	}
	return fmt.Errorf("POST %s: gave up after %d attempts: %w", path, maxAttempts, err)
}

// get sends a GET of path to the replicas in order until one answers (with any status); the
// caller closes the response's body. It is for long downloads: no time limit but ctx's.
func (rs *replicas) get(ctx context.Context, path string) (*http.Response, error) {
	var errs []error
	for _, base := range rs.urls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			return resp, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// try makes one attempt at url. A transport error is retryable at once (on the next
// replica), a 503 after its Retry-After; any other answer but 200 or 201 is final.
func (rs *replicas) try(ctx context.Context, url, ct string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := rs.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return &retryable{err: err}
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusCreated, http.StatusOK:
		rs.requests.Add(1)
		return nil
	case http.StatusServiceUnavailable:
		return &retryable{err: fmt.Errorf("POST %s: %s: %s", url, resp.Status, b), pause: retryAfter(resp.Header.Get("Retry-After"))}
	default:
		return fmt.Errorf("POST %s: %s: %s", url, resp.Status, b)
	}
}

// retryAfter reads a Retry-After header in seconds: one second when absent or unreadable,
// at most maxPause.
func retryAfter(h string) time.Duration {
	s, err := strconv.Atoi(h)
	if err != nil || s < 0 {
		return time.Second
	}
	return min(time.Duration(s)*time.Second, maxPause)
}
