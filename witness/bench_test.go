package witness

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	tlog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
)

// BenchmarkAddCheckpoint measures add-checkpoint over loopback HTTP against a real store
// (fsync'd temp file + rename + directory fsync per accepted checkpoint): each iteration
// grows the log by one leaf and submits the new checkpoint with its consistency proof.
// Reports p50/p99 latency besides ns/op.
func BenchmarkAddCheckpoint(b *testing.B) {
	for _, tc := range []struct {
		name  string
		mldsa bool
	}{{"ed25519", false}, {"ed25519+mldsa44", true}} {
		b.Run(tc.name, func(b *testing.B) {
			lg := newTestLog(b, "log.bench/a")
			lg.grow(b.N+1, "main")
			bodies := make([][]byte, b.N)
			for i := range bodies {
				bodies[i] = lg.request(b, uint64(i+1), uint64(i+2))
			}
			w, _, st := newTestWitness(b, b.TempDir(), tc.mldsa, lg)
			defer st.Close()
			srv := httptest.NewServer(w.Handler())
			defer srv.Close()
			if code, _, body := post(b, srv, lg.request(b, 0, 1)); code != http.StatusOK {
				b.Fatalf("%d %s", code, body)
			}
			lat := make([]time.Duration, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				resp, err := srv.Client().Post(srv.URL+"/add-checkpoint", "text/plain", bytes.NewReader(bodies[i]))
				if err != nil {
					b.Fatal(err)
				}
				var buf bytes.Buffer
				buf.ReadFrom(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("%d %s", resp.StatusCode, buf.Bytes())
				}
				lat[i] = time.Since(t0)
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkRefuseFork measures the refusal of a checkpoint of the held size with another
// root over loopback HTTP: the proof of misbehaviour is built, checked with the log's key
// and answered. "new": every refused checkpoint is another one, so its proof file is
// written (fsynced temp file + rename + directory fsync); the state is replaced, outside the
// timer, before the 1000-file cap. "again": the same refused checkpoint each time (kept once,
// nothing written).
func BenchmarkRefuseFork(b *testing.B) {
	for _, tc := range []struct {
		name     string
		distinct bool
	}{{"new", true}, {"again", false}} {
		b.Run(tc.name, func(b *testing.B) {
			lg := newTestLog(b, "log.bench/a")
			lg.grow(13, "main")
			bodies := make([][]byte, b.N)
			for i := range bodies {
				tag := 0
				if tc.distinct {
					tag = i
				}
				root := sha256.Sum256(fmt.Appendf(nil, "fork %d", tag))
				cp, err := note.Sign(&note.Note{Text: string(tlog.Checkpoint{Origin: lg.origin, Size: 13, Hash: root[:]}.Marshal())}, lg.signer)
				if err != nil {
					b.Fatal(err)
				}
				bodies[i] = (&Request{OldSize: 13, Checkpoint: cp}).Marshal()
			}
			var srv *httptest.Server
			fresh := func() {
				if srv != nil {
					srv.Close()
				}
				w, _, st := newTestWitness(b, b.TempDir(), false, lg)
				b.Cleanup(func() { st.Close() })
				srv = httptest.NewServer(w.Handler())
				if code, _, body := post(b, srv, lg.request(b, 0, 13)); code != http.StatusOK {
					b.Fatalf("%d %s", code, body)
				}
			}
			fresh()
			defer func() { srv.Close() }()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if tc.distinct && i > 0 && i%maxProofs == 0 {
					b.StopTimer()
					fresh()
					b.StartTimer()
				}
				resp, err := srv.Client().Post(srv.URL+"/add-checkpoint", "text/plain", bytes.NewReader(bodies[i]))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusConflict || resp.Header.Get(HeaderMisbehaviour) != "proven" {
					b.Fatalf("%d %s", resp.StatusCode, resp.Header.Get(HeaderMisbehaviour))
				}
			}
		})
	}
}
