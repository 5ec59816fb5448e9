package client

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"
)

// RetryPolicy says when and how often a Client sends a request again. A request is retried
// when evidentd answers 503 Service Unavailable (pushback, concurrent_writer, overloaded,
// timeout, not_ready) and when the connection fails before any response arrives (refused,
// reset, closed); never after another answer, and never once the request's context is done.
//
// Retrying writes is safe: evidentd's ingest is idempotent (a record already at its
// position answers with its existing seq and link), a repeated seal of an unchanged chain
// and a repeated evidence head change nothing.
type RetryPolicy struct {
	// MaxAttempts bounds the attempts of one call, the first included; 1 sends once.
	MaxAttempts int
	// BaseDelay is the wait before the second attempt; each further wait doubles it, up to
	// MaxDelay. Every wait is jittered: a uniformly random duration between half of it and
	// all of it, so clients that failed together do not retry together.
	BaseDelay time.Duration
	// MaxDelay caps one wait, including one a Retry-After header asks for.
	MaxDelay time.Duration
	// OnRetry, when set, is called before each wait with the attempt that failed (1 for the
	// first), its error and the wait; for logs and progress.
	OnRetry func(attempt int, err error, wait time.Duration)
}

// DefaultRetry returns the policy of a Client made without WithRetry: up to 5 attempts,
// waits of about 250ms, 500ms, 1s and 2s (or what Retry-After asks, up to 10s), and no
// wait that would outlast the call's context deadline.
func DefaultRetry() RetryPolicy {
	return RetryPolicy{MaxAttempts: 5, BaseDelay: 250 * time.Millisecond, MaxDelay: 10 * time.Second}
}

// WithRetry sets the retry policy; RetryPolicy{MaxAttempts: 1} turns retries off. Zero
// BaseDelay and MaxDelay take DefaultRetry's.
func WithRetry(p RetryPolicy) Option {
	return func(c *Client) {
		if p.MaxAttempts < 1 {
			p.MaxAttempts = 1
		}
		if p.BaseDelay <= 0 {
			p.BaseDelay = DefaultRetry().BaseDelay
		}
		if p.MaxDelay <= 0 {
			p.MaxDelay = DefaultRetry().MaxDelay
		}
		c.retry = p
	}
}

// backoff is the jittered wait after the attempt-th failed attempt (1-based).
func (p RetryPolicy) backoff(attempt int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < attempt && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	return d/2 + rand.N(d/2+1)
}

// retryable reports whether a failed attempt may be sent again, and the wait the service
// asked for (0: none).
func retryable(resp *http.Response, err error) (bool, time.Duration) {
	if err != nil {
		return connectionFailed(err), 0
	}
	if resp.StatusCode != http.StatusServiceUnavailable {
		return false, 0
	}
	return true, retryAfter(resp.Header.Get("Retry-After"))
}

// connectionFailed reports a connection that failed before a response: refused, reset,
// or closed by the server without an answer. Timeouts and canceled contexts are not.
func connectionFailed(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" && !op.Timeout() {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// retryAfter parses a Retry-After header: delay-seconds or an HTTP date (0 when absent or
// unparsable).
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
