package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/evidentd/ingest"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/log"
)

func TestSplitBody(t *testing.T) {
	for _, tc := range []struct {
		name, ct, body string
		want           []string
		code           ledger.Code
	}{
		{"one object", "application/json", `{"a":1}`, []string{`{"a":1}`}, ""},
		{"pretty object", "application/json", "{\n  \"a\": 1,\n  \"b\": [1,\n 2]\n}\n", []string{"{\n  \"a\": 1,\n  \"b\": [1,\n 2]\n}"}, ""},
		{"object with a trailing line break", "application/json", "{\"a\":1} \r\n\n", []string{`{"a":1}`}, ""},
		{"one line that is not JSON is its record", "application/json", `{"a":1`, []string{`{"a":1`}, ""},
		{"one line, no Content-Type", "", ` {"a":1}`, []string{`{"a":1}`}, ""},
		{"pretty object, trailing spaces", "application/json; charset=utf-8", "{\n\"a\": 1\n}\n  \n", []string{"{\n\"a\": 1\n}"}, ""},
		{"only unicode space", "application/json", "\u00a0", nil, ledger.CodeMalformed},
		{"json lines with parameters", "application/jsonl; charset=utf-8", "{\"a\":1}\n{\"b\":2}", []string{`{"a":1}`, `{"b":2}`}, ""},
		{"JSON Lines type in capitals", "Application/X-NDJSON", "{\n\"a\":1}", []string{"{", `"a":1}`}, ""},
		{"array", "application/json", ` [{"a":1}, {"b":2} ] `, []string{`{"a":1}`, `{"b":2}`}, ""},
		{"json lines", "application/jsonl", "{\"a\":1}\n\n{\"b\":2}\r\n{\"c\":3}", []string{`{"a":1}`, `{"b":2}`, `{"c":3}`}, ""},
		{"ndjson sniffed", "application/json", "{\"a\":1}\n{\"b\":2}", []string{`{"a":1}`, `{"b":2}`}, ""},
		{"array in jsonl", "application/x-ndjson", "[1]\n[2]", []string{"[1]", "[2]"}, ""},
		{"empty", "application/json", "  \n", nil, ledger.CodeMalformed},
		{"empty array", "application/json", "[]", nil, ledger.CodeMalformed},
		{"broken array", "application/json", `[{"a":1},`, nil, ledger.CodeMalformed},
		{"trailing after array", "application/json", `[{"a":1}] x`, nil, ledger.CodeMalformed},
		{"too many", "application/jsonl", "{}\n{}\n{}\n{}", nil, ledger.CodeTooLarge},
		{"too many in array", "application/json", "[{},{},{},{}]", nil, ledger.CodeTooLarge},
		{"audit.read result", "application/json", `{"entries":[{"seq":0,"envelope":{}}, {"seq":1,"envelope":{}}],"next_seq":2}`,
			[]string{`{"seq":0,"envelope":{}}`, `{"seq":1,"envelope":{}}`}, ""},
		{"empty audit.read page", "application/json", `{"entries":[],"next_seq":2}`, nil, ledger.CodeMalformed},
		{"entries without next_seq is a record", "application/json", `{"entries":[1]}`, []string{`{"entries":[1]}`}, ""},
		{"next_seq with entries not an array is a record", "application/json", `{"entries":{},"next_seq":0}`, []string{`{"entries":{},"next_seq":0}`}, ""},
		{"audit.read page in jsonl is a line", "application/jsonl", `{"entries":[{}],"next_seq":1}`, []string{`{"entries":[{}],"next_seq":1}`}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := splitBody([]byte(tc.body), tc.ct, 3)
			if tc.code != "" {
				var re *ledger.RecordError
				if !errors.As(err, &re) || re.Code != tc.code {
					t.Fatalf("got %q %v, want code %s", got, err, tc.code)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("got %q %v, want %q", got, err, tc.want)
			}
			for i := range got {
				if string(got[i]) != tc.want[i] {
					t.Errorf("record %d: %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestValidChainID(t *testing.T) {
	for _, ok := range []string{"wsp_support_triage", "envelope:wf:1", "a.b-c@d"} {
		if err := validChainID(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a/b", "a b", "a%2f", "a\\b", "tab\t", string(make([]byte, 257)), "é"} {
		if err := validChainID(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzSplitBody: no panics; every record returned is a non-empty slice of the body.
func FuzzSplitBody(f *testing.F) {
	f.Add([]byte(`[{"a":1},{"b":2}]`), "application/json")
	f.Add([]byte("{\"a\":1}\n{\"b\":2}"), "application/jsonl")
	f.Add([]byte("{\n\"a\":1}"), "")
	f.Add([]byte(`{"entries":[{"seq":0,"envelope":{}}],"next_seq":1}`), "application/json")
	f.Add([]byte(`{"entries":[],"next_seq":0}`), "")
	f.Fuzz(func(t *testing.T, body []byte, ct string) {
		recs, err := splitBody(body, ct, 100)
		if err != nil {
			return
		}
		if len(recs) == 0 || len(recs) > 100 {
			t.Fatalf("%d records", len(recs))
		}
		for _, r := range recs {
			if len(bytes.TrimSpace(r)) == 0 {
				t.Fatalf("empty record from %q", body)
			}
		}
	})
}

// TestUnavailableCarriesRetryAfter: every 503 answer, JSON or concise CBOR, says when to
// retry; other refusals do not.
func TestUnavailableCarriesRetryAfter(t *testing.T) {
	s := &Server{c: Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, m: newMetrics(func() float64 { return 0 }, func() float64 { return 0 })}
	req := httptest.NewRequest(http.MethodPost, "/v1/chains/c/entries", nil)
	for _, tc := range []struct {
		name       string
		answer     func(w http.ResponseWriter)
		status     int
		code       api.ProblemCode
		retryAfter string
	}{
		{"store conflict", func(w http.ResponseWriter) {
			s.fail(w, req, fmt.Errorf("commit chain %q: %w", "c", store.ErrConflict))
		}, http.StatusServiceUnavailable, api.CodeConcurrentWriter, "1"},
		{"log pushback", func(w http.ResponseWriter) { s.fail(w, req, log.ErrPushback) }, http.StatusServiceUnavailable, api.CodePushback, "1"},
		{"deadline", func(w http.ResponseWriter) { s.fail(w, req, context.DeadlineExceeded) }, http.StatusServiceUnavailable, api.CodeTimeout, "1"},
		{"not ready", func(w http.ResponseWriter) {
			problem(w, http.StatusServiceUnavailable, api.CodeNotReady, "no checkpoint published yet", -1)
		}, http.StatusServiceUnavailable, api.CodeNotReady, "1"},
		{"SCRAPI pushback", func(w http.ResponseWriter) { s.scittFail(w, req, log.ErrPushback) }, http.StatusServiceUnavailable, api.CodePushback, "1"},
		{"bodies in flight at the limit mid-body", func(w http.ResponseWriter) { s.fail(w, req, errOverloaded) }, http.StatusServiceUnavailable, api.CodeOverloaded, "1"},
		{"SCRAPI bodies in flight at the limit mid-body", func(w http.ResponseWriter) { s.scittFail(w, req, errOverloaded) }, http.StatusServiceUnavailable, api.CodeOverloaded, "1"},
		{"own Retry-After kept", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "7")
			problem(w, http.StatusServiceUnavailable, api.CodePushback, "busy", -1)
		}, http.StatusServiceUnavailable, api.CodePushback, "7"},
		{"no chain", func(w http.ResponseWriter) { s.fail(w, req, ingest.ErrNoChain) }, http.StatusNotFound, api.CodeNoSuchChain, ""},
		{"fork", func(w http.ResponseWriter) {
			s.fail(w, req, &ledger.RecordError{Code: ledger.CodeFork, Detail: "fork"})
		}, http.StatusConflict, api.LedgerCode(ledger.CodeFork), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tc.answer(rec)
			if rec.Code != tc.status || rec.Header().Get("Retry-After") != tc.retryAfter {
				t.Fatalf("%d with Retry-After %q, want %d with %q", rec.Code, rec.Header().Get("Retry-After"), tc.status, tc.retryAfter)
			}
			var code string
			if rec.Header().Get("Content-Type") == ConciseProblemType {
				p, err := api.ParseConciseProblem(rec.Body.Bytes())
				if err != nil {
					t.Fatal(err)
				}
				code = p.Code
			} else {
				var p api.Problem
				if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
					t.Fatal(err)
				}
				code = string(p.Code)
			}
			if code != string(tc.code) {
				t.Fatalf("code %q, want %q", code, tc.code)
			}
		})
	}
}

// failedStore is a ledger store whose commits have stopped (Err), as the embedded store's
// journal reports after a failed fsync, which no test here can cause.
type failedStore struct {
	store.Store
	err error
}

func (f failedStore) Err() error { return f.err }

// TestReadyzStoreFailed: GET /readyz is 503 not_ready, naming the cause, while the ledger
// store takes no commits, before the log is even asked.
func TestReadyzStoreFailed(t *testing.T) {
	s := &Server{c: Config{Store: failedStore{err: errors.New("journal: fsync failed, no more appends until restart: EIO")}}}
	w := httptest.NewRecorder()
	s.handleReady(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	var p api.Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatalf("%d %s: %v", w.Code, w.Body, err)
	}
	if w.Code != http.StatusServiceUnavailable || p.Code != api.CodeNotReady || !bytes.Contains([]byte(p.Detail), []byte("fsync failed")) {
		t.Fatalf("%d %+v", w.Code, p)
	}
}

// TestNewMaxBatch: a batch bound below one record means the default, as 0 does (splitBody
// would otherwise refuse every body, one record included).
func TestNewMaxBatch(t *testing.T) {
	for _, tc := range []struct{ in, want int }{{0, DefaultMaxBatch}, {-3, DefaultMaxBatch}, {1, 1}, {250, 250}} {
		c := Config{MaxBatch: tc.in}
		if c.defaults(); c.MaxBatch != tc.want {
			t.Errorf("MaxBatch %d: the server bounds batches at %d, want %d", tc.in, c.MaxBatch, tc.want)
		}
	}
}
