package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/evident-log/evident/api"
)

// TestQueryBool: the one parser of boolean query parameters takes true/1 and false/0, given
// once, and nothing else; an absent parameter is the default.
func TestQueryBool(t *testing.T) {
	for _, tc := range []struct {
		query   string
		def     bool
		want    bool
		refused bool
	}{
		{"", false, false, false},
		{"", true, true, false},
		{"other=1", false, false, false},
		{"close=true", false, true, false},
		{"close=1", false, true, false},
		{"close=false", true, false, false},
		{"close=0", true, false, false},
		{"close=maybe", false, false, true},
		{"close=", false, false, true},
		{"close", false, false, true},
		{"close=TRUE", false, false, true},
		{"close=True", false, false, true},
		{"close=yes", false, false, true},
		{"close=on", false, false, true},
		{"close=01", false, false, true},
		{"close=%20true", false, false, true},
		{"close=true&close=true", false, false, true},
		{"close=true&close=false", false, false, true},
	} {
		t.Run(tc.query, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/v1/chains/c/seal?"+tc.query, nil)
			got, err := queryBool(r, "close", tc.def)
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), "close") {
					t.Fatalf("%q: %v, %v; want a refusal naming the parameter", tc.query, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("%q: %v, %v; want %v", tc.query, got, err, tc.want)
			}
		})
	}
}

// TestMediaTypeOf: a body route takes its types with any parameters (a UTF-8 charset) and in
// any case, and a body without Content-Type as its default; anything else is refused naming
// the types it takes.
func TestMediaTypeOf(t *testing.T) {
	for _, tc := range []struct {
		contentType string
		types       []string
		taken       bool
	}{
		{"", ingestTypes, true},
		{"application/json", ingestTypes, true},
		{"application/jsonl", ingestTypes, true},
		{"application/x-ndjson", ingestTypes, true},
		{"application/json; charset=utf-8", ingestTypes, true},
		{"application/json;charset=UTF-8", ingestTypes, true},
		{"APPLICATION/JSONL; CHARSET=utf-8", ingestTypes, true},
		{"application/json; version=2", ingestTypes, true},
		{"application/jsonl", evidenceHeadTypes, false},
		{"text/plain", ingestTypes, false},
		{"text/plain; charset=utf-8", evidenceHeadTypes, false},
		{"application/x-www-form-urlencoded", ingestTypes, false},
		{"application/json; charset=utf-16", ingestTypes, false},
		{"application/json; charset=", ingestTypes, false},
		{"application/json;;", ingestTypes, false},
		{"application/", ingestTypes, false},
		{"application/json+x", ingestTypes, false},
		{"*/*", ingestTypes, false},
	} {
		t.Run(tc.contentType, func(t *testing.T) {
			err := mediaTypeOf(tc.contentType, tc.types)
			if tc.taken != (err == nil) {
				t.Fatalf("%q: %v, want taken %v", tc.contentType, err, tc.taken)
			}
			if err == nil {
				return
			}
			for _, mt := range tc.types {
				if !strings.Contains(err.Error(), mt) {
					t.Errorf("%q: the refusal does not name %s: %v", tc.contentType, mt, err)
				}
			}
		})
	}
}

// failingCollector is a collector whose metric cannot be gathered.
type failingCollector struct{ desc *prometheus.Desc }

func (f failingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- f.desc }
func (f failingCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(f.desc, errors.New("the source is gone"))
}

// TestMetricsFailureIsAProblem: a registry that cannot be gathered answers GET /metrics 500
// internal as a problem detail, where promhttp answers plain text, and logs why at ERROR.
func TestMetricsFailureIsAProblem(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	zero := func() float64 { return 0 }
	m := newMetrics(zero, zero, failingCollector{prometheus.NewDesc("evident_test_failing", "fails", nil, nil)})
	w := httptest.NewRecorder()
	m.handler(logger).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	var p api.Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || w.Code != http.StatusInternalServerError || w.Header().Get("Content-Type") != api.MediaProblem || p.Code != api.CodeInternal {
		t.Fatalf("%d %s %q: %v", w.Code, w.Header().Get("Content-Type"), w.Body, err)
	}
	if !strings.Contains(logs.String(), `"level":"ERROR"`) || !strings.Contains(logs.String(), "the source is gone") {
		t.Fatalf("logged %q", logs.String())
	}
}
