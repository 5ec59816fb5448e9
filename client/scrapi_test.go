package client_test

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/veraison/go-cose"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/client"
	"github.com/evident-log/evident/internal/evidentd/daemon"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/regpolicy"
	"github.com/evident-log/evident/regpolicy/regpolicytest"
)

// startSCRAPI runs a real evidentd whose registration policy admits is, publishing a
// checkpoint every cpi and answering POST /entries after at most wait.
// The statuses the service answered are appended to *seen.
func startSCRAPI(t *testing.T, is *regpolicytest.Issuer, cpi, wait time.Duration, seen *[]int) string {
	t.Helper()
	dir := t.TempDir()
	p := regpolicy.Policy{Format: regpolicy.Format, Issuers: []regpolicy.Issuer{{ISS: is.ISS, Keys: []regpolicy.Key{{PEM: is.PEM(t)}}}}}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	pf := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(pf, b, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := daemon.Open(context.Background(), daemon.Config{Data: filepath.Join(dir, "data"), CheckpointInterval: cpi,
		SCITT:  daemon.SCITT{RegistrationPolicy: pf, RegistrationWait: wait},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h := d.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&statusRecorder{ResponseWriter: w, seen: seen}, r)
	}))
	t.Cleanup(func() {
		srv.Close()
		if err := d.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return srv.URL
}

// TestRegister: Register answers the receipt both when the service answers 201 at once and
// when it answers 202 Accepted, then 204 No Content while pending (draft-ietf-scitt-scrapi-11),
// polling no faster than the service's Retry-After; refusals are typed.
func TestRegister(t *testing.T) {
	is := regpolicytest.NewIssuer(t, "https://build.example", cose.AlgorithmEdDSA)
	other := regpolicytest.NewIssuer(t, "https://other.example", cose.AlgorithmEdDSA)
	for _, tc := range []struct {
		name      string
		cpi, wait time.Duration
	}{
		{"201 at once", 100 * time.Millisecond, 10 * time.Second},
		{"202 then 204 until published", 2 * time.Second, 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.cpi > time.Second {
				t.Skip("waits for 2s checkpoints")
			}
			var seen []int
			base := startSCRAPI(t, is, tc.cpi, tc.wait, &seen)
			c := newClient(t, base)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			stmt := is.Sign(t, []byte(`{"n":1}`), regpolicytest.Options{Subject: "pkg:x", ContentType: "application/json", IssuedAt: time.Now().Unix()})
			reg, err := c.Register(ctx, stmt)
			if err != nil {
				t.Fatal(err)
			}
			seenMu.Lock()
			statuses := append([]int(nil), seen...)
			seenMu.Unlock()
			if tc.cpi > time.Second {
				if len(statuses) < 2 || statuses[0] != http.StatusAccepted || statuses[len(statuses)-1] != http.StatusOK {
					t.Errorf("statuses %v: want 202, then 204 while pending, then 200", statuses)
				}
				for _, st := range statuses[1 : len(statuses)-1] {
					if st != http.StatusNoContent {
						t.Errorf("statuses %v: want only 204 between the 202 and the 200", statuses)
					}
				}
				// Retry-After is the 2s checkpoint interval: publication within about two
				// intervals takes a handful of polls, not a loop.
				if len(statuses) > 5 {
					t.Errorf("statuses %v: Register polled faster than Retry-After", statuses)
				}
			} else if len(statuses) != 1 || statuses[0] != http.StatusCreated {
				t.Errorf("statuses %v: want 201", statuses)
			}
			entry, _ := receipts.EntryHash(stmt)
			if want := base + "/entries/" + hex.EncodeToString(entry[:]); reg.Location != want {
				t.Errorf("Location %q, want %q", reg.Location, want)
			}
			keys, err := c.SCITTKeys(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var ks []cbor.RawMessage
			if err := cbor.Unmarshal(keys, &ks); err != nil || len(ks) == 0 {
				t.Fatalf("key set: %v", err)
			}
			leaf := receipts.LeafHash(entry[:])
			var verified bool
			for _, kb := range ks {
				k, err := receipts.ParseCOSEKey(kb)
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := receipts.VerifyInclusion(reg.Receipt, leaf[:], k); err == nil {
					verified = true
				}
			}
			if !verified {
				t.Fatal("the receipt does not verify with the service's keys")
			}

			_, err = c.Register(ctx, other.Sign(t, []byte(`{}`), regpolicytest.Options{Subject: "s", ContentType: "application/json", IssuedAt: 1}))
			var e *client.Error
			if !client.IsCode(err, api.CodeUnknownIssuer) || !errors.As(err, &e) || e.StatusCode != http.StatusForbidden || e.Detail == "" {
				t.Fatalf("unknown issuer: %v", err)
			}
		})
	}
}

// TestRegisterPolling: against a server of an earlier draft (303 See Other, then 302 Found
// back to the registration) and one of draft -11 (202 Accepted, then 204 No Content),
// Register polls the Location, waiting Retry-After, and returns the receipt; a pending
// registration that outlives ctx is an error wrapping ctx's, even when Retry-After asks
// for an hour (every wait is capped at MaxPollInterval and cut short by ctx).
func TestRegisterPolling(t *testing.T) {
	for _, tc := range []struct {
		name            string
		posted, pending int
		pendingPolls    int32 // GETs answered pending before the receipt; -1: for ever
		retryAfter      string
		wantErr         error
	}{
		{"draft -10: 303 then 302", http.StatusSeeOther, http.StatusFound, 2, "0", nil},
		{"draft -11: 202 then 204", http.StatusAccepted, http.StatusNoContent, 2, "0", nil},
		{"draft -11: 202 at once done", http.StatusAccepted, http.StatusNoContent, 0, "0", nil},
		{"an hour's Retry-After, ctx ends first", http.StatusAccepted, http.StatusNoContent, -1, "3600", context.DeadlineExceeded},
		{"pending for ever, polls capped", http.StatusAccepted, http.StatusNoContent, -1, "0", errTooManyPolls},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer client.SetMaxPolls(3)()
			var gets atomic.Int32
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				loc := srv.URL + "/entries/abc"
				w.Header().Set("Retry-After", tc.retryAfter)
				switch {
				case r.Method == http.MethodPost && r.URL.Path == "/entries":
					w.Header().Set("Location", loc)
					w.WriteHeader(tc.posted)
				case r.Method == http.MethodGet && r.URL.Path == "/entries/abc":
					if n := gets.Add(1); tc.pendingPolls < 0 || n <= tc.pendingPolls {
						if tc.pending == http.StatusFound {
							w.Header().Set("Location", loc)
						}
						w.WriteHeader(tc.pending)
						return
					}
					w.Header().Set("Location", loc)
					w.Header().Set("Content-Type", api.MediaCOSE)
					w.Write([]byte("receipt"))
				default:
					t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
					w.WriteHeader(http.StatusTeapot)
				}
			}))
			defer srv.Close()
			timeout := 10 * time.Second
			if tc.wantErr == context.DeadlineExceeded {
				timeout = 300 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			start := time.Now()
			reg, err := newClient(t, srv.URL).Register(ctx, []byte("statement"))
			switch {
			case tc.wantErr == errTooManyPolls:
				if err == nil || !strings.Contains(err.Error(), "still pending after 3 polls") || gets.Load() != 3 {
					t.Fatalf("after %d polls: %v, want the cap of 3", gets.Load(), err)
				}
				return
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) || time.Since(start) > 5*time.Second {
					t.Fatalf("after %v: %v, want %v", time.Since(start), err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(reg.Receipt) != "receipt" || reg.Location != srv.URL+"/entries/abc" || gets.Load() != tc.pendingPolls+1 {
				t.Fatalf("registration %+v after %d polls, want %d", reg, gets.Load(), tc.pendingPolls+1)
			}
		})
	}
}

// errTooManyPolls marks a case of TestRegisterPolling that ends at Register's cap on polls.
var errTooManyPolls = errors.New("too many polls")

// TestRegisterRetries: Register goes through the client's retry policy: a 503 (the log
// pushed back) is sent again, the same statement each time, and the receipt returned.
func TestRegisterRetries(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/entries" || string(b) != "statement" || r.Header.Get("Content-Type") != api.MediaCOSE {
			t.Errorf("%s %s %q %q", r.Method, r.URL.Path, b, r.Header.Get("Content-Type"))
		}
		if calls.Add(1) <= 2 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Location", "/entries/abc")
		w.Header().Set("Content-Type", api.MediaCOSE)
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte("receipt"))
	}))
	defer srv.Close()
	var retries atomic.Int32
	c := newClient(t, srv.URL, fastRetry(5, &retries))
	reg, err := c.Register(context.Background(), []byte("statement"))
	if err != nil {
		t.Fatal(err)
	}
	if string(reg.Receipt) != "receipt" || reg.Location != srv.URL+"/entries/abc" || calls.Load() != 3 || retries.Load() != 2 {
		t.Fatalf("registration %+v after %d requests, %d retries", reg, calls.Load(), retries.Load())
	}
	// Beyond the bound, the 503 is the answer.
	calls.Store(-10)
	var e *client.Error
	if _, err := c.Register(context.Background(), []byte("statement")); !errors.As(err, &e) || e.StatusCode != http.StatusServiceUnavailable || calls.Load() != -5 {
		t.Fatalf("after %d requests: %v", calls.Load()+10, err)
	}
}

// statusRecorder appends each answer's status to seen before the client can read it.
type statusRecorder struct {
	http.ResponseWriter
	seen  *[]int
	wrote bool
}

var seenMu sync.Mutex

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.wrote = true
		seenMu.Lock()
		*r.seen = append(*r.seen, code)
		seenMu.Unlock()
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	return r.ResponseWriter.Write(b)
}
