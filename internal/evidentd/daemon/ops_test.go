package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/buildinfo"
	"github.com/evident-log/evident/internal/logging"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
)

// syncBuffer is a log sink the server's goroutines and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startLogged starts a daemon with the access log on, logging JSON into the returned buffer.
func startLogged(t *testing.T) (*Daemon, *httptest.Server, *syncBuffer) {
	t.Helper()
	var logs syncBuffer
	logger, err := logging.New(&logs, logging.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(context.Background(), Config{Data: t.TempDir(), CheckpointInterval: 100 * time.Millisecond, Logger: logger, AccessLog: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveUntilCleanup(t, d)
	return d, srv, &logs
}

// TestUnknownRoutesAnswerProblems: a path evidentd does not serve, or a method it does not
// take on a path it serves, answers a JSON problem detail like every other refusal.
func TestUnknownRoutesAnswerProblems(t *testing.T) {
	_, srv, _ := startLogged(t)
	for _, tc := range []struct {
		method, path string
		status       int
		code         api.ProblemCode
		allow        string
	}{
		{"GET", "/nope", 404, api.CodeNoSuchRoute, ""},
		{"GET", "/v1/chainz/x", 404, api.CodeNoSuchRoute, ""},
		{"POST", "/v1/chains/x/entries/0/receipt", 405, api.CodeMethodNotAllowed, "GET, HEAD"},
		{"DELETE", "/v1/chains/x", 405, api.CodeMethodNotAllowed, "GET, HEAD"},
		{"PUT", "/v1/chains/x/entries", 405, api.CodeMethodNotAllowed, "GET, HEAD, POST"},
		{"POST", "/metrics", 405, api.CodeMethodNotAllowed, "GET, HEAD"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			resp, body := call(t, tc.method, srv.URL+tc.path)
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != api.MediaProblem {
				t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			var p api.Problem
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatal(err)
			}
			if p.Code != tc.code || p.Status != tc.status || p.Type != tc.code.Type() || p.Detail == "" || !tc.code.Known() {
				t.Errorf("problem %+v", p)
			}
			if got := resp.Header.Get("Allow"); got != tc.allow {
				t.Errorf("Allow %q, want %q", got, tc.allow)
			}
		})
	}
}

// TestOpenAPIServed: GET /v1/openapi.json serves the committed description with the routes
// the served profiles add (the COP Ledger), and nothing else changed.
func TestOpenAPIServed(t *testing.T) {
	_, srv, _ := startLogged(t)
	resp, body := call(t, "GET", srv.URL+"/v1/openapi.json")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != api.MediaJSON {
		t.Fatalf("%d %s %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
	var served, committed map[string]any
	if err := json.Unmarshal(body, &served); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(api.OpenAPI(), &committed); err != nil {
		t.Fatal(err)
	}
	paths := served["paths"].(map[string]any)
	added, ok := paths["/v1/chains/{chain}/cop-ledger"].(map[string]any)
	if !ok {
		t.Fatalf("the COP Ledger route is not described: %d paths", len(paths))
	}
	op := added["get"].(map[string]any)
	content := op["responses"].(map[string]any)["200"].(map[string]any)["content"].(map[string]any)
	if op["operationId"] != "getCOPLedger" || content["application/jsonl"] == nil {
		t.Fatalf("COP Ledger operation %v", op)
	}
	delete(paths, "/v1/chains/{chain}/cop-ledger")
	if !reflect.DeepEqual(served, committed) {
		t.Fatal("the served description differs from api/openapi.json beyond the COP Ledger route")
	}
}

// TestListChains: GET /v1/chains pages through every chain with its size and head.
func TestListChains(t *testing.T) {
	_, srv, _ := startLogged(t)
	heads := map[string]string{}
	for i, ws := range []string{"wsp_c", "wsp_a", "wsp_b"} {
		b, _, err := chapscenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		code, body := post(t, srv.URL+"/v1/chains/"+ws+"/entries", "application/jsonl", bytes.Join(b.Records()[:4+i], []byte("\n")))
		if code != http.StatusCreated {
			t.Fatalf("ingest: %d %s", code, body)
		}
		var r api.IngestResponse
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		heads[ws] = r.Head.String()
	}
	var got []string
	next := ""
	for range 4 {
		resp, body := call(t, "GET", srv.URL+"/v1/chains?limit=2&after="+next)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		var page api.ChainsPage
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		for _, c := range page.Chains {
			if c.Head.String() != heads[c.Chain] || c.Profile != "chap/0.3" || c.Created == "" {
				t.Errorf("chain %+v, head %s", c, heads[c.Chain])
			}
			got = append(got, fmt.Sprintf("%s:%d", c.Chain, c.Size))
		}
		if next = page.Next; next == "" {
			break
		}
	}
	if strings.Join(got, " ") != "wsp_a:5 wsp_b:6 wsp_c:4" {
		t.Fatalf("listed %v", got)
	}
	for _, bad := range []string{"limit=0", "limit=1001", "limit=x", "after=a%2Fb"} {
		resp, body := call(t, "GET", srv.URL+"/v1/chains?"+bad)
		if resp.StatusCode != 400 || !strings.Contains(string(body), `"bad_query"`) {
			t.Errorf("%s: %d %s", bad, resp.StatusCode, body)
		}
	}
}

// TestMetricsAndAccessLog: after a few requests, /metrics (client_golang) holds the request
// latency histogram by route pattern and status class, the service counters and Go
// runtime metrics; the access log has one line per request with its duration as text.
func TestMetricsAndAccessLog(t *testing.T) {
	_, srv, logs := startLogged(t)
	b, _, err := chapscenario.SupportTriage("wsp_m", time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if code, body := post(t, srv.URL+"/v1/chains/wsp_m/entries", "application/jsonl", bytes.Join(b.Records(), []byte("\n"))); code != http.StatusCreated {
		t.Fatalf("ingest: %d %s", code, body)
	}
	for range 3 {
		call(t, "GET", srv.URL+"/v1/chains/wsp_m")
	}
	call(t, "GET", srv.URL+"/v1/chains/nope")
	call(t, "GET", srv.URL+"/nope")
	call(t, "BREW", srv.URL+"/nope")
	resp, body := call(t, "GET", srv.URL+"/metrics")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	samples := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		samples[line[:i]] = v
	}
	const h = "evident_http_request_duration_seconds"
	for name, want := range map[string]float64{
		h + `_count{code="2xx",method="GET",route="GET /v1/chains/{chain}"}`:           3,
		h + `_count{code="4xx",method="GET",route="GET /v1/chains/{chain}"}`:           1,
		h + `_count{code="2xx",method="POST",route="POST /v1/chains/{chain}/entries"}`: 1,
		h + `_count{code="4xx",method="GET",route="unmatched"}`:                        1,
		"evident_records_accepted_total":                                               float64(len(b.Records())),
		"evident_ingest_batches_total":                                                 1,
		"evident_conflict_retries_total":                                               0,
	} {
		if got, ok := samples[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	// The embedded store's database holds the records, in its write-ahead log or tables.
	if got, ok := samples["evident_store_disk_bytes"]; !ok || got <= 0 {
		t.Errorf("evident_store_disk_bytes = %v (present %v), want more than 0", got, ok)
	}
	if got, ok := samples["evident_store_cache_bytes"]; !ok || got < 0 {
		t.Errorf("evident_store_cache_bytes = %v (present %v)", got, ok)
	}
	sum := samples[h+`_sum{code="2xx",method="GET",route="GET /v1/chains/{chain}"}`]
	inf := samples[h+`_bucket{code="2xx",method="GET",route="GET /v1/chains/{chain}",le="+Inf"}`]
	if sum <= 0 || sum > 30 || inf != 3 {
		t.Errorf("latency sum %v s, +Inf bucket %v", sum, inf)
	}
	if g := samples["go_goroutines"]; g < 1 || g > 100000 {
		t.Errorf("go_goroutines = %v", g)
	}
	if rss, ok := samples["process_resident_memory_bytes"]; ok && rss <= 0 {
		t.Errorf("process_resident_memory_bytes = %v", rss)
	}

	var lines []map[string]any
	for _, l := range strings.Split(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "http request" {
			lines = append(lines, m)
		}
	}
	if len(lines) < 7 {
		t.Fatalf("%d access log lines:\n%s", len(lines), logs.String())
	}
	first := lines[0]
	if first["method"] != "POST" || first["path"] != "/v1/chains/wsp_m/entries" || first["status"] != 201.0 || first["bytes"].(float64) <= 0 ||
		!strings.HasPrefix(first["remote"].(string), "127.0.0.1:") {
		t.Errorf("access log line %v", first)
	}
	d, ok := first["duration"].(string)
	if _, err := time.ParseDuration(d); !ok || err != nil {
		t.Errorf("duration %v is not text", first["duration"])
	}
}

// TestBundleProducerIsTheBuild: a bundle's manifest names the evidentd build that made it.
func TestBundleProducerIsTheBuild(t *testing.T) {
	_, srv, _ := startLogged(t)
	b, _, err := chapscenario.SupportTriage("wsp_p", time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if code, body := post(t, srv.URL+"/v1/chains/wsp_p/entries", "application/jsonl", bytes.Join(b.Records(), []byte("\n"))); code != http.StatusCreated {
		t.Fatalf("ingest: %d %s", code, body)
	}
	resp, zip := call(t, "GET", srv.URL+"/v1/export?chain=wsp_p")
	if resp.StatusCode != 200 {
		t.Fatalf("export: %d %s", resp.StatusCode, zip)
	}
	r, err := bundle.OpenZipBytes(zip)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if want := buildinfo.Read().Program("evidentd"); r.Manifest.Producer != want || !strings.Contains(want, runtime.Version()) {
		t.Fatalf("producer %q, want %q", r.Manifest.Producer, want)
	}
}
