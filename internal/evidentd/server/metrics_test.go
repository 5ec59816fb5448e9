package server

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/logging"
)

// observed returns s.observe around a mux serving every route of the table with a handler
// that answers 201 and a three-byte body.
func observed(s *Server) http.Handler {
	mux := http.NewServeMux()
	for _, rt := range routes() {
		mux.HandleFunc(rt.pattern, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte("{}\n"))
		})
	}
	return s.observe(mux)
}

// TestAccessLogRecord: one Info record "http request" per request, with exactly the fields
// method, path (with its query, escaped as sent), status, bytes, duration (as text), remote
// and route, and no source position; none when the access log is off or Info is not enabled.
func TestAccessLogRecord(t *testing.T) {
	for _, tc := range []struct {
		name, method, target string
		status               float64
		route                string
	}{
		{"ingest", http.MethodPost, "/v1/chains/wsp_a/entries", 201, "POST /v1/chains/{chain}/entries"},
		{"query and escapes kept", http.MethodGet, "/v1/chains/a%2Fb/entries?from=3&limit=2", 201, "GET /v1/chains/{chain}/entries"},
		{"no route", http.MethodGet, "/nowhere", 404, unmatchedRoute},
		{"method not served", http.MethodDelete, "/v1/chains/wsp_a", 405, unmatchedRoute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			logger, err := logging.New(&buf, logging.FormatJSON)
			if err != nil {
				t.Fatal(err)
			}
			s := &Server{c: Config{Logger: logger, AccessLog: true}, m: newMetrics(func() float64 { return 0 }, func() float64 { return 0 })}
			req := httptest.NewRequest(tc.method, tc.target, nil)
			req.RemoteAddr = "127.0.0.1:40000"
			w := httptest.NewRecorder()
			observed(s).ServeHTTP(w, req)
			var rec map[string]any
			if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
				t.Fatalf("%v: %q", err, buf.String())
			}
			if keys := slices.Sorted(maps.Keys(rec)); !slices.Equal(keys, []string{"bytes", "duration", "level", "method", "msg", "path", "remote", "route", "status", "time"}) {
				t.Errorf("fields %v", keys)
			}
			want := map[string]any{"level": "INFO", "msg": "http request", "method": tc.method, "path": tc.target, "status": tc.status,
				"bytes": float64(w.Body.Len()), "remote": "127.0.0.1:40000", "route": tc.route}
			for k, v := range want {
				if rec[k] != v {
					t.Errorf("%s = %v, want %v", k, rec[k], v)
				}
			}
			if d, ok := rec["duration"].(string); !ok {
				t.Errorf("duration %v is not text", rec["duration"])
			} else if _, err := time.ParseDuration(d); err != nil {
				t.Errorf("duration %q: %v", d, err)
			}
		})
	}
	for _, tc := range []struct {
		name      string
		level     slog.Level
		accessLog bool
	}{
		{"access log off", slog.LevelInfo, false},
		{"Info not enabled", slog.LevelWarn, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: tc.level}))
			s := &Server{c: Config{Logger: logger, AccessLog: tc.accessLog}, m: newMetrics(func() float64 { return 0 }, func() float64 { return 0 })}
			observed(s).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/chains/wsp_a/entries", nil))
			if buf.Len() != 0 {
				t.Errorf("logged %q", buf.String())
			}
		})
	}
}

// TestStatusClass: the code label is the status's hundreds followed by "xx".
func TestStatusClass(t *testing.T) {
	for status := 100; status < 1000; status++ {
		if got, want := statusClass(status), strconv.Itoa(status/100)+"xx"; got != want {
			t.Fatalf("statusClass(%d) = %q, want %q", status, got, want)
		}
	}
}
