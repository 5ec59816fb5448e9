package daemon

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/evidentd/server"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
)

// The HTTP conventions every route keeps: a body is read only under a Content-Type its route
// takes, a resend is answered 200 and a new write 201 alike on every write route, boolean query
// parameters go through one strict parser, the counters count what happened once, and every
// path and method evidentd does not serve answers a problem detail.

// roundTrip sends method url with body under contentType ("": no Content-Type header) and extra
// headers (name, value, …), and returns the answer, not followed if a redirect, and its body.
func roundTrip(t *testing.T, method, url, contentType string, body []byte, header ...string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := noRedirect.Do(req) // the answer itself, never one a redirect leads to
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// wantProblem checks that an answer is the JSON problem detail of status and code.
func wantProblem(t *testing.T, resp *http.Response, body []byte, status int, code api.ProblemCode) api.Problem {
	t.Helper()
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != api.MediaProblem {
		t.Fatalf("%d %s, want %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), status, api.MediaProblem, body)
	}
	var p api.Problem
	if resp.Request.Method == http.MethodHead {
		if len(body) != 0 {
			t.Fatalf("HEAD answered a body: %q", body)
		}
		return p
	}
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("problem %q: %v", body, err)
	}
	if p.Code != code || p.Status != status || p.Type != code.Type() || p.Title != http.StatusText(status) || p.Detail == "" || !code.Known() {
		t.Fatalf("problem %+v, want %d %s", p, status, code)
	}
	return p
}

// chainHead reads a chain's head; ok is false when the chain does not exist.
func chainHead(t *testing.T, base, chain string) (h api.ChainHead, ok bool) {
	t.Helper()
	status, body := get(t, base+"/v1/chains/"+chain)
	if status == http.StatusNotFound {
		return h, false
	}
	if status != http.StatusOK {
		t.Fatalf("head of %s: %d %s", chain, status, body)
	}
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatal(err)
	}
	return h, true
}

// triage returns the signed records of the support triage scenario for workspace ws.
func triage(t *testing.T, ws string) [][]byte {
	t.Helper()
	b, _, err := chapscenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	return b.Records()
}

// expectContinueAnswer sends a request with Expect: 100-continue and no body on a raw
// connection to base, and returns the first answer: a 100 Continue when the handler began to
// read the body, its final answer when it answered without reading it.
func expectContinueAnswer(t *testing.T, base, target, contentType string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Minute)) // a hang fails the test instead of stalling it
	if _, err := io.WriteString(conn, expectContinue("POST", target, contentType, 100)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestBodyMediaTypes: every route that takes a body reads it only under a Content-Type it
// takes — parameters such as a UTF-8 charset included, and none at all read as the route's
// default — and answers any other 415 unsupported_media_type naming the types it takes, with
// the body unread (no 100 Continue is asked for it) and nothing changed.
func TestBodyMediaTypes(t *testing.T) {
	_, srv := start(t, t.TempDir())
	const (
		taken = iota
		refused
	)
	cases := []struct {
		name, contentType string
		ingest, head      int // taken or refused by POST …/entries and POST …/evidence-head
	}{
		{"no Content-Type", "", taken, taken},
		{"application/json", "application/json", taken, taken},
		{"json with a UTF-8 charset", "application/json; charset=utf-8", taken, taken},
		{"json in capitals", "Application/JSON;Charset=UTF-8", taken, taken},
		{"json with another parameter", "application/json; profile=chap", taken, taken},
		{"JSON Lines", "application/jsonl", taken, refused},
		{"NDJSON with a charset", "application/x-ndjson; charset=utf-8", taken, refused},
		{"text/plain", "text/plain", refused, refused},
		{"text/plain with a UTF-8 charset", "text/plain; charset=utf-8", refused, refused},
		{"curl -d's form", "application/x-www-form-urlencoded", refused, refused},
		{"json in Latin-1", "application/json; charset=iso-8859-1", refused, refused},
		{"a Content-Type that does not parse", "application/json; charset", refused, refused},
		{"a type without subtype", "json", refused, refused},
		{"a COSE statement", "application/cose", refused, refused},
		{"multipart", "multipart/form-data; boundary=x", refused, refused},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := fmt.Sprintf("wsp_media_%d", i)
			recs := triage(t, ws)
			if resp, body := roundTrip(t, "POST", srv.URL+"/v1/chains/"+ws+"/entries", api.MediaJSONLines, bytes.Join(recs[:3], []byte("\n"))); resp.StatusCode != http.StatusCreated {
				t.Fatalf("setup: %d %s", resp.StatusCode, body)
			}
			third, _ := chainHead(t, srv.URL, ws) // the head after 3 entries, which the evidence head reports
			for _, route := range []struct {
				path  string
				body  []byte
				want  int
				types []string
			}{
				{"/entries", recs[3], tc.ingest, []string{api.MediaJSON, api.MediaJSONLines, api.MediaNDJSON}},
				{"/evidence-head", []byte(fmt.Sprintf(`{"evidence_head":%q,"audit_count":3}`, third.Head)), tc.head, []string{api.MediaJSON}},
			} {
				target := "/v1/chains/" + ws + route.path
				before, _ := chainHead(t, srv.URL, ws)
				resp, body := roundTrip(t, "POST", srv.URL+target, tc.contentType, route.body)
				if route.want == taken {
					if resp.StatusCode != http.StatusCreated {
						t.Fatalf("POST %s as %q: %d %s, want 201", route.path, tc.contentType, resp.StatusCode, body)
					}
					continue
				}
				p := wantProblem(t, resp, body, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType)
				if got := resp.Header.Get("Accept-Post"); got != strings.Join(route.types, ", ") {
					t.Errorf("POST %s as %q: Accept-Post %q", route.path, tc.contentType, got)
				}
				for _, mt := range route.types {
					if !strings.Contains(p.Detail, mt) {
						t.Errorf("POST %s as %q: the detail does not name %s: %s", route.path, tc.contentType, mt, p.Detail)
					}
				}
				if after, _ := chainHead(t, srv.URL, ws); after != before {
					t.Fatalf("POST %s as %q changed the chain: %+v, was %+v", route.path, tc.contentType, after, before)
				}
				// Unread: asked with Expect: 100-continue, the route answers before it would read.
				if tc.contentType != "" {
					if cont := expectContinueAnswer(t, srv.URL, target, tc.contentType); cont.StatusCode != http.StatusUnsupportedMediaType {
						t.Fatalf("POST %s as %q with Expect: 100-continue: %d, want 415 before the body", route.path, tc.contentType, cont.StatusCode)
					}
				}
			}
			if tc.ingest == refused {
				if after, _ := chainHead(t, srv.URL, ws); after.Size != 3 {
					t.Fatalf("size %d after refusals, want 3", after.Size)
				}
			}
		})
	}
	// Two Content-Types, even both taken, are one too many: which one the body is, is unsaid.
	req, err := http.NewRequest("POST", srv.URL+"/v1/chains/wsp_media_twice/entries", bytes.NewReader(triage(t, "wsp_media_twice")[0]))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Add("Content-Type", api.MediaJSON)
	req.Header.Add("Content-Type", api.MediaJSONLines)
	resp, err := noRedirect.Do(req) // the answer itself, never one a redirect leads to
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	wantProblem(t, resp, body, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType)
	if h, ok := chainHead(t, srv.URL, "wsp_media_twice"); ok {
		t.Fatalf("a body under two Content-Types made a chain: %+v", h)
	}
	// The SCRAPI registration takes COSE only, in its own problem format (docs/scitt.md).
	for _, ct := range []string{"text/plain", api.MediaJSON} {
		resp, body := roundTrip(t, "POST", srv.URL+"/entries", ct, []byte{0xd2, 0x84})
		if resp.StatusCode != http.StatusUnsupportedMediaType || resp.Header.Get("Content-Type") != server.ConciseProblemType {
			t.Fatalf("POST /entries as %s: %d %s %x", ct, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if p, err := api.ParseConciseProblem(body); err != nil || p.Code != string(api.CodeUnsupportedMediaType) {
			t.Fatalf("POST /entries as %s: %+v %v", ct, p, err)
		}
	}
}

// sealAnswer is a seal's answer: its status and body.
type sealAnswer struct {
	status int
	seal   api.SealResponse
	prob   api.Problem
}

// postSeal seals chain with query (e.g. "?close=true").
func postSeal(t *testing.T, base, chain, query string) sealAnswer {
	t.Helper()
	resp, body := roundTrip(t, "POST", base+"/v1/chains/"+chain+"/seal"+query, "", nil)
	a := sealAnswer{status: resp.StatusCode}
	target := any(&a.seal)
	if resp.StatusCode >= 400 {
		target = &a.prob
	}
	if err := json.Unmarshal(body, target); err != nil {
		t.Fatalf("seal%s: %d %q: %v", query, resp.StatusCode, body, err)
	}
	return a
}

// seals returns the chain's seals.
func seals(t *testing.T, base, chain string) []api.SealView {
	t.Helper()
	status, body := get(t, base+"/v1/chains/"+chain+"/seals")
	var page api.SealsPage
	if err := json.Unmarshal(body, &page); status != http.StatusOK || err != nil {
		t.Fatalf("seals: %d %s %v", status, body, err)
	}
	return page.Seals
}

// TestSealAnswers: a seal is answered as a batch is — 201 when the request made one, 200 when
// the chain had not moved and its last seal is answered again, the same seal (n, log index,
// receipt) — and close is a strict boolean: a value that is not true, false, 1 or 0 is 400
// bad_query and seals nothing.
func TestSealAnswers(t *testing.T) {
	_, srv := start(t, t.TempDir())
	const ws = "wsp_seal"
	recs := triage(t, ws)
	ingest := func(batch [][]byte) int {
		t.Helper()
		resp, body := roundTrip(t, "POST", srv.URL+"/v1/chains/"+ws+"/entries", api.MediaJSONLines, bytes.Join(batch, []byte("\n")))
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
			t.Fatalf("ingest: %d %s", resp.StatusCode, body)
		}
		return resp.StatusCode
	}
	if got := ingest(recs[:4]); got != http.StatusCreated {
		t.Fatalf("first batch: %d", got)
	}

	for _, bad := range []string{"?close=maybe", "?close=", "?close", "?close=TRUE", "?close=yes", "?close=on", "?close=2", "?close=true&close=false", "?close=%20true"} {
		a := postSeal(t, srv.URL, ws, bad)
		if a.status != http.StatusBadRequest || a.prob.Code != api.CodeBadQuery || !strings.Contains(a.prob.Detail, "close") {
			t.Fatalf("seal%s: %d %+v, want 400 bad_query", bad, a.status, a.prob)
		}
	}
	if s := seals(t, srv.URL, ws); len(s) != 0 {
		t.Fatalf("refused seals sealed: %+v", s)
	}
	if h, _ := chainHead(t, srv.URL, ws); h.Closed || h.LastSeal != "" {
		t.Fatalf("refused seals changed the chain: %+v", h)
	}

	steps := []struct {
		name, query string
		batch       [][]byte // ingested first, when not nil
		batchStatus int
		status      int
		n           uint64
		closed      bool
	}{
		{"the first seal", "?close=0", nil, 0, http.StatusCreated, 0, false},
		{"resent", "", nil, 0, http.StatusOK, 0, false},
		{"resent with close=false", "?close=false", nil, 0, http.StatusOK, 0, false},
		{"after a resent batch, which stored nothing", "", recs[:4], http.StatusOK, http.StatusOK, 0, false},
		{"after new records", "", recs[4:6], http.StatusCreated, http.StatusCreated, 1, false},
		{"closing with 1", "?close=1", nil, 0, http.StatusCreated, 2, true},
		{"closing resent", "?close=true", nil, 0, http.StatusOK, 2, true},
		{"a closed chain's seal resent", "", nil, 0, http.StatusOK, 2, true},
	}
	var last sealAnswer
	for _, st := range steps {
		if st.batch != nil {
			if got := ingest(st.batch); got != st.batchStatus {
				t.Fatalf("%s: batch answered %d, want %d", st.name, got, st.batchStatus)
			}
		}
		a := postSeal(t, srv.URL, ws, st.query)
		if a.status != st.status || a.seal.N != st.n || a.seal.Seal.Closed != st.closed {
			t.Fatalf("%s: %d n=%d closed=%v %+v, want %d n=%d closed=%v", st.name, a.status, a.seal.N, a.seal.Seal.Closed, a.prob, st.status, st.n, st.closed)
		}
		if a.status == http.StatusOK && (a.seal.LogIndex != last.seal.LogIndex || a.seal.Receipt != last.seal.Receipt || a.seal.Transparent != last.seal.Transparent) {
			t.Fatalf("%s: answered another seal than the last: log index %d, was %d", st.name, a.seal.LogIndex, last.seal.LogIndex)
		}
		if n := uint64(len(seals(t, srv.URL, ws))); n != st.n+1 {
			t.Fatalf("%s: %d seals, want %d", st.name, n, st.n+1)
		}
		last = a
	}
	// The COSE form of a resent seal: 200 too, the same transparent statement.
	resp, body := roundTrip(t, "POST", srv.URL+"/v1/chains/"+ws+"/seal", "", nil, "Accept", api.MediaCOSE)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != api.MediaCOSESign1 || last.seal.Transparent != base64.StdEncoding.EncodeToString(body) {
		t.Fatalf("COSE seal resent: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// scrape reads base's /metrics with Prometheus' own text parser.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, body := roundTrip(t, "GET", base+"/metrics", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics: %d %s", resp.StatusCode, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	return fams
}

// counter is the value of the unlabelled counter name in fams.
func counter(t *testing.T, fams map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok || f.GetType() != dto.MetricType_COUNTER || len(f.GetMetric()) != 1 {
		t.Fatalf("%s: not one counter: %v", name, f)
	}
	return f.GetMetric()[0].GetCounter().GetValue()
}

// TestCountersCountOnce: each service counter counts an event once, read through a real
// /metrics scrape parsed by Prometheus' text parser: one seal is +1 to evident_seals_total
// however often it is answered again; a batch that stored records is +1 to
// evident_ingest_batches_total and its records to evident_records_accepted_total, a resent one
// only its records to evident_records_duplicate_total; every 4xx refusal of an ingest request,
// whatever refused it, is +1 to evident_records_refused_total.
func TestCountersCountOnce(t *testing.T) {
	_, srv := start(t, t.TempDir())
	const ws = "wsp_count"
	recs := triage(t, ws)
	entries := srv.URL + "/v1/chains/" + ws + "/entries"
	type counts struct{ seals, batches, accepted, duplicate, refused float64 }
	read := func() counts {
		t.Helper()
		f := scrape(t, srv.URL)
		return counts{counter(t, f, "evident_seals_total"), counter(t, f, "evident_ingest_batches_total"),
			counter(t, f, "evident_records_accepted_total"), counter(t, f, "evident_records_duplicate_total"),
			counter(t, f, "evident_records_refused_total")}
	}
	var want counts
	for _, st := range []struct {
		name   string
		send   func() int
		status int
		add    counts
	}{
		{"a batch of 4", func() int {
			resp, _ := roundTrip(t, "POST", entries, api.MediaJSONLines, bytes.Join(recs[:4], []byte("\n")))
			return resp.StatusCode
		}, 201, counts{batches: 1, accepted: 4}},
		{"one seal", func() int { return postSeal(t, srv.URL, ws, "").status }, 201, counts{seals: 1}},
		{"the seal resent", func() int { return postSeal(t, srv.URL, ws, "").status }, 200, counts{}},
		{"the seal resent again", func() int { return postSeal(t, srv.URL, ws, "?close=false").status }, 200, counts{}},
		{"a seal refused", func() int { return postSeal(t, srv.URL, ws, "?close=maybe").status }, 400, counts{}},
		{"the batch resent", func() int {
			resp, _ := roundTrip(t, "POST", entries, api.MediaJSONLines, bytes.Join(recs[:4], []byte("\n")))
			return resp.StatusCode
		}, 200, counts{duplicate: 4}},
		{"2 stored again and 2 new", func() int {
			resp, _ := roundTrip(t, "POST", entries, api.MediaJSONLines, bytes.Join(recs[2:6], []byte("\n")))
			return resp.StatusCode
		}, 201, counts{batches: 1, accepted: 2, duplicate: 2}},
		{"a batch as text/plain", func() int {
			resp, _ := roundTrip(t, "POST", entries, "text/plain", recs[6])
			return resp.StatusCode
		}, 415, counts{refused: 1}},
		{"a batch with a bad query", func() int {
			resp, _ := roundTrip(t, "POST", entries+"?profile=x;y", api.MediaJSON, recs[6])
			return resp.StatusCode
		}, 400, counts{refused: 1}},
		{"a record refused", func() int {
			resp, _ := roundTrip(t, "POST", entries, api.MediaJSON, []byte(`{"jsonrpc":`))
			return resp.StatusCode
		}, 400, counts{refused: 1}},
		{"a second seal", func() int { return postSeal(t, srv.URL, ws, "?close=true").status }, 201, counts{seals: 1}},
		{"it resent", func() int { return postSeal(t, srv.URL, ws, "?close=1").status }, 200, counts{}},
	} {
		if got := st.send(); got != st.status {
			t.Fatalf("%s: %d, want %d", st.name, got, st.status)
		}
		want = counts{want.seals + st.add.seals, want.batches + st.add.batches, want.accepted + st.add.accepted,
			want.duplicate + st.add.duplicate, want.refused + st.add.refused}
		if got := read(); got != want {
			t.Fatalf("after %s: %+v, want %+v", st.name, got, want)
		}
	}
}

// TestEveryUnservedPathIsAProblem: a path evidentd does not serve — under /log/, where the
// tlog-tiles file server answers, too, and a path Go's mux would redirect in HTML to a route
// (a doubled slash, a "." or ".." segment, /log for /log/) — a tile not published, a method a path does not take,
// and the tile server's own refusals (a Range outside the checkpoint, a failed precondition)
// each answer a JSON problem detail with its code, never the plain text of Go's handlers.
func TestEveryUnservedPathIsAProblem(t *testing.T) {
	_, srv := start(t, t.TempDir())
	// A published checkpoint, so that /log/checkpoint is served.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if status, _ := get(t, srv.URL+"/readyz"); status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no checkpoint published")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status, body := get(t, srv.URL+"/log/checkpoint"); status != http.StatusOK {
		t.Fatalf("checkpoint: %d %s", status, body)
	}
	for _, tc := range []struct {
		method, path string
		header       []string
		status       int
		code         api.ProblemCode
		allow        string
	}{
		{"GET", "/nope", nil, 404, api.CodeNoSuchRoute, ""},
		{"GET", "/log/", nil, 404, api.CodeNoSuchRoute, ""},
		{"GET", "/log/nope", nil, 404, api.CodeNoSuchRoute, ""},
		{"GET", "/log/checkpoint/x", nil, 404, api.CodeNoSuchRoute, ""},
		{"GET", "/log/.state/treeState", nil, 404, api.CodeNoSuchRoute, ""},
		{"HEAD", "/log/nope", nil, 404, api.CodeNoSuchRoute, ""},
		{"GET", "/log/tile/0/999", nil, 404, api.CodeNotFound, ""},
		{"GET", "/log/tile/entries/x001/234", nil, 404, api.CodeNotFound, ""},
		{"GET", "/log/tile/0/x9223372036854775808", nil, 404, api.CodeNotFound, ""},
		{"GET", "/log/tile/zz/000", nil, 404, api.CodeNotFound, ""},
		{"HEAD", "/log/tile/0/999", nil, 404, api.CodeNotFound, ""},
		{"POST", "/log/checkpoint", nil, 405, api.CodeMethodNotAllowed, "GET, HEAD"},
		{"DELETE", "/log/tile/0/000", nil, 405, api.CodeMethodNotAllowed, "GET, HEAD"},
		{"PUT", "/log/nope", nil, 405, api.CodeMethodNotAllowed, "GET, HEAD"},
		{"GET", "/log/checkpoint", []string{"Range", "bytes=100000-"}, 416, api.CodeRangeNotSatisfiable, ""},
		{"GET", "/log/checkpoint", []string{"If-Match", `"nope"`}, 412, api.CodePreconditionFailed, ""},
		{"GET", "/log", nil, 404, api.CodeNoSuchRoute, ""},
		{"GET", "//v1/chains", nil, 404, api.CodeNoSuchRoute, ""},
		{"GET", "/v1/chains/../chains", nil, 404, api.CodeNoSuchRoute, ""},
		{"GET", "/v1/./chains", nil, 404, api.CodeNoSuchRoute, ""},
		{"GET", "/log//checkpoint", nil, 404, api.CodeNoSuchRoute, ""},
		{"GET", "/log/tile/../checkpoint", nil, 404, api.CodeNoSuchRoute, ""},
		{"POST", "/v1/chains/wsp_x/./seal", nil, 404, api.CodeNoSuchRoute, ""},
		{"POST", "/v1/chains/x/seals", nil, 405, api.CodeMethodNotAllowed, "GET, HEAD"},
		{"PATCH", "/healthz", nil, 405, api.CodeMethodNotAllowed, "GET, HEAD"},
	} {
		t.Run(tc.method+" "+tc.path+" "+strings.Join(tc.header, " "), func(t *testing.T) {
			resp, body := roundTrip(t, tc.method, srv.URL+tc.path, "", nil, tc.header...)
			wantProblem(t, resp, body, tc.status, tc.code)
			if got := resp.Header.Get("Allow"); got != tc.allow {
				t.Errorf("Allow %q, want %q", got, tc.allow)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control %q", cc)
			}
		})
	}
	// A write to a path the mux would redirect to a route is not served: nothing is stored.
	recs := triage(t, "wsp_x")
	resp, body := roundTrip(t, "POST", srv.URL+"/v1//chains/wsp_x/entries", api.MediaJSON, recs[0])
	wantProblem(t, resp, body, http.StatusNotFound, api.CodeNoSuchRoute)
	if h, ok := chainHead(t, srv.URL, "wsp_x"); ok {
		t.Fatalf("a write to a path not served made a chain: %+v", h)
	}
}

// TestMetricsLint: /metrics, after a batch, a resent batch, a refusal and a seal, passes the
// checks of `promtool check metrics` (client_golang's promlint, which promtool runs): names,
// units, help texts and counter suffixes as Prometheus' conventions ask.
func TestMetricsLint(t *testing.T) {
	_, srv := start(t, t.TempDir())
	const ws = "wsp_lint"
	recs := triage(t, ws)
	entries := srv.URL + "/v1/chains/" + ws + "/entries"
	for _, body := range [][]byte{bytes.Join(recs[:3], []byte("\n")), bytes.Join(recs[:3], []byte("\n")), []byte(`{"jsonrpc":`)} {
		roundTrip(t, "POST", entries, api.MediaJSONLines, body)
	}
	if a := postSeal(t, srv.URL, ws, ""); a.status != http.StatusCreated {
		t.Fatalf("seal: %d", a.status)
	}
	resp, body := roundTrip(t, "GET", srv.URL+"/metrics", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics: %d %s", resp.StatusCode, body)
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	if !bytes.Contains(body, []byte("evident_records_duplicate_total 3")) {
		t.Errorf("the resent batch is not counted as 3 duplicates:\n%s", body)
	}
}
