package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/client"
)

// flaky is a loopback evidentd stand-in that fails its first n requests in a given way,
// then answers 201, and records every body it was sent.
type flaky struct {
	n          int32
	fail       string // "503" (with retryAfter when set), "close", "422", "500"
	calls      atomic.Int32
	mu         sync.Mutex
	bodies     []string
	retryAfter string
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, string(b))
	f.mu.Unlock()
	if f.calls.Add(1) > f.n {
		w.Header().Set("Content-Type", api.MediaJSON)
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(api.IngestResponse{Chain: "wsp_r", Size: 1})
		return
	}
	problem := func(status int, code api.ProblemCode) {
		w.Header().Set("Content-Type", api.MediaProblem)
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(api.Problem{Type: code.Type(), Status: status, Code: code, Detail: "test"})
	}
	switch f.fail {
	case "503":
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		problem(http.StatusServiceUnavailable, api.CodePushback)
	case "close": // the connection dies before any response
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.(*net.TCPConn).SetLinger(0) // a reset, not a clean close
			conn.Close()
		}
	case "422":
		problem(http.StatusUnprocessableEntity, api.CodeBadSignature)
	case "500":
		problem(http.StatusInternalServerError, api.CodeInternal)
	}
}

func fastRetry(attempts int, retries *atomic.Int32) client.Option {
	return client.WithRetry(client.RetryPolicy{MaxAttempts: attempts, BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond,
		OnRetry: func(int, error, time.Duration) { retries.Add(1) }})
}

// TestRetry: 503s and connections that die before a response are retried with backoff up
// to the attempt bound, the same body each time; other refusals are not retried.
func TestRetry(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fail     string
		n        int32
		attempts int
		ok       bool
		code     api.ProblemCode
		calls    int32
	}{
		{"503 once", "503", 1, 5, true, "", 2},
		{"503 four times", "503", 4, 5, true, "", 5},
		{"503 beyond the bound", "503", 5, 5, false, api.CodePushback, 5},
		{"retries off", "503", 1, 1, false, api.CodePushback, 1},
		{"connection reset twice", "close", 2, 5, true, "", 3},
		{"connection reset beyond the bound", "close", 9, 3, false, "", 3},
		{"422 is not retried", "422", 1, 5, false, api.CodeBadSignature, 1},
		{"500 is not retried", "500", 1, 5, false, api.CodeInternal, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &flaky{n: tc.n, fail: tc.fail}
			srv := httptest.NewServer(f)
			defer srv.Close()
			var retries atomic.Int32
			c := newClient(t, srv.URL, fastRetry(tc.attempts, &retries))
			res, err := c.Submit(context.Background(), "wsp_r", [][]byte{[]byte(`{"a":1}`)})
			if tc.ok != (err == nil) {
				t.Fatalf("Submit: %v, %v", res, err)
			}
			if tc.ok && res.Size != 1 {
				t.Errorf("answer %+v", res)
			}
			if tc.code != "" && !client.IsCode(err, tc.code) {
				t.Errorf("error %v, want code %s", err, tc.code)
			}
			if got := f.calls.Load(); got != tc.calls {
				t.Errorf("%d requests, want %d", got, tc.calls)
			}
			if got := retries.Load(); got != tc.calls-1 {
				t.Errorf("OnRetry called %d times, want %d", got, tc.calls-1)
			}
			for i, b := range f.bodies {
				if b != `[{"a":1}]` {
					t.Errorf("attempt %d sent %q", i+1, b)
				}
			}
		})
	}
}

// TestRetryAfter: a 503's Retry-After is waited for, even when the backoff is shorter.
func TestRetryAfter(t *testing.T) {
	f := &flaky{n: 1, fail: "503", retryAfter: "1"}
	srv := httptest.NewServer(f)
	defer srv.Close()
	var retries atomic.Int32
	c := newClient(t, srv.URL, client.WithRetry(client.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Second,
		OnRetry: func(attempt int, err error, wait time.Duration) {
			if attempt != 1 || wait != time.Second || err == nil {
				t.Errorf("OnRetry(%d, %v, %v)", attempt, err, wait)
			}
			retries.Add(1)
		}}))
	start := time.Now()
	if _, err := c.Submit(context.Background(), "wsp_r", [][]byte{[]byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < time.Second || el > 10*time.Second {
		t.Errorf("took %v, want the 1s Retry-After", el)
	}
	if retries.Load() != 1 || f.calls.Load() != 2 {
		t.Errorf("%d retries, %d calls", retries.Load(), f.calls.Load())
	}
}

// TestRetryBoundedByDeadline: a wait that would outlast the context's deadline is not
// started; the call returns the last answer at once.
func TestRetryBoundedByDeadline(t *testing.T) {
	f := &flaky{n: 100, fail: "503", retryAfter: "30"}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c := newClient(t, srv.URL, client.WithRetry(client.RetryPolicy{MaxAttempts: 10, MaxDelay: time.Minute}))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.Submit(ctx, "wsp_r", [][]byte{[]byte(`{}`)})
	var e *client.Error
	if !errors.As(err, &e) || e.Code != api.CodePushback || e.RetryAfter != 30*time.Second {
		t.Fatalf("got %v", err)
	}
	if el := time.Since(start); el > 4*time.Second || f.calls.Load() != 1 {
		t.Errorf("took %v and %d requests", el, f.calls.Load())
	}
}

// TestRetryConnectionRefused: nothing listens; every attempt is refused, and the error
// says so once the attempts are spent.
func TestRetryConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var retries atomic.Int32
	c := newClient(t, "http://"+addr, fastRetry(4, &retries))
	_, err = c.Head(context.Background(), "wsp_r")
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("got %v", err)
	}
	if retries.Load() != 3 {
		t.Errorf("%d retries, want 3", retries.Load())
	}
}

// TestRetryCanceled: canceling the context ends a wait at once.
func TestRetryCanceled(t *testing.T) {
	f := &flaky{n: 100, fail: "503", retryAfter: "30"}
	srv := httptest.NewServer(f)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	c := newClient(t, srv.URL, client.WithRetry(client.RetryPolicy{MaxAttempts: 3, MaxDelay: time.Minute,
		OnRetry: func(int, error, time.Duration) { time.AfterFunc(50*time.Millisecond, cancel) }}))
	start := time.Now()
	_, err := c.Seal(ctx, "wsp_r", false)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 10*time.Second {
		t.Fatalf("got %v after %v", err, time.Since(start))
	}
}
