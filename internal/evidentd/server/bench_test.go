package server

import (
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/logging"
	"github.com/evident-log/evident/ledger"
)

// benchEnvelope is a single-envelope ingest body of the size and shape the daemon's
// single-envelope benchmarks post (one line of about 600 bytes).
const benchEnvelope = `{"chap":"0.3","evidence":{"prev_hash":"sha256:dc02a6fdb241640f1d94841ebb92bd16e6bc1ec5a7987370fd1e0732076c172b"},"from":"agent:triage-bot#v3.2","id":"wsp_single_3-000004","jsonrpc":"2.0","method":"participant.join","params":{"jwk":{"crv":"Ed25519","kid":"k-cd3db4ba","kty":"OKP","x":"_0e16mfNmpthNtJEDmgewIZkL8_LVvsQADPfcMLAy2k"},"role":"drafter","type":"agent","uri":"agent:triage-bot#v3.2"},"sig":"ed25519:k-cd3db4ba:EpK0qPEBsZg19hewhynZfP6OAg2EcTb3KcHMi5h8PQ8bwfLu9T2YrTHrr68nKyt+Jsr6syEOMOrCZMfSgzq5AQ==","to":"service:coordinator@example.org","ts":"2026-01-01T00:00:00.004Z","type":"request","workspace":"wsp_single_3"}`

// discardWriter is a ResponseWriter that keeps the headers and drops the rest, so a
// benchmark times the code that answers, not a recorder.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }

// BenchmarkSplitBody: the records of a single-envelope body (application/json, one line).
func BenchmarkSplitBody(b *testing.B) {
	body := []byte(benchEnvelope)
	b.ReportAllocs()
	for b.Loop() {
		recs, err := splitBody(body, "application/json", DefaultMaxBatch)
		if err != nil || len(recs) != 1 {
			b.Fatal(len(recs), err)
		}
	}
}

// BenchmarkIngestAnswer: the 201 answer to a single-envelope request, written by
// encoding/json (writeJSON, as before) and by writeIngestAnswer.
func BenchmarkIngestAnswer(b *testing.B) {
	l := ledger.Link(sha256.Sum256([]byte("x")))
	out := api.IngestResponse{Chain: "wsp_single_3", Accepted: []api.AcceptedEntry{{Seq: 4, Prev: l, Link: l, Arrival: "2026-01-01T00:00:00.004Z"}}, Size: 5, Head: l}
	for _, bc := range []struct {
		name  string
		write func(http.ResponseWriter)
	}{
		{"encoding-json", func(w http.ResponseWriter) { writeJSON(w, http.StatusCreated, out) }},
		{"appended", func(w http.ResponseWriter) { writeIngestAnswer(w, http.StatusCreated, &out) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				bc.write(w)
			}
		})
	}
}

// BenchmarkObserve: what observe adds to a request that a route answers at once — route
// matching, the latency histogram, and the access log (text, to io.Discard) when on.
func BenchmarkObserve(b *testing.B) {
	for _, accessLog := range []bool{false, true} {
		name := "no-access-log"
		if accessLog {
			name = "access-log"
		}
		b.Run(name, func(b *testing.B) {
			logger, err := logging.New(io.Discard, logging.FormatText)
			if err != nil {
				b.Fatal(err)
			}
			s := &Server{c: Config{Logger: logger, AccessLog: accessLog}, m: newMetrics(func() float64 { return 0 }, func() float64 { return 0 })}
			mux := http.NewServeMux()
			for _, rt := range routes() {
				mux.HandleFunc(rt.pattern, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) })
			}
			h := s.observe(mux)
			r := httptest.NewRequest(http.MethodPost, "/v1/chains/wsp_single_3/entries", nil)
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, r)
			}
		})
	}
}
