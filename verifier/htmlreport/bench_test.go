package htmlreport_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/trustfile"
	"github.com/evident-log/evident/verifier"
	"github.com/evident-log/evident/verifier/htmlreport"
)

// BenchmarkReportBundle verifies a bundle given by EVIDENT_REPORT_BUNDLE (a zip or directory,
// e.g. the million-entry one of BENCHMARKS.md, "Issue 36"), then writes its HTML report, in
// one run: verify alone, the single page (default bound) and the folder (every entry), each
// with the time of its report phase, the peak heap in use and the bytes written.
// EVIDENT_REPORT_TRUST names a trust file to pin (else the keys are the bundle's own).
//
//	EVIDENT_REPORT_BUNDLE=big.zip go test -run '^$' -bench ReportBundle -benchtime 1x ./verifier/htmlreport
func BenchmarkReportBundle(b *testing.B) {
	path := os.Getenv("EVIDENT_REPORT_BUNDLE")
	if path == "" {
		b.Skip("EVIDENT_REPORT_BUNDLE names no bundle")
	}
	var opts verifier.Options
	if tf := os.Getenv("EVIDENT_REPORT_TRUST"); tf != "" {
		data, err := os.ReadFile(tf)
		if err != nil {
			b.Fatal(err)
		}
		if opts.Trust, err = trustfile.Parse(data); err != nil {
			b.Fatal(err)
		}
	}
	for _, mode := range []string{"verify", "html", "html-dir"} {
		b.Run(mode, func(b *testing.B) {
			dir := b.TempDir()
			var verifyTime, reportTime time.Duration
			var size int64
			var peak, reportPeak uint64
			for b.Loop() {
				runtime.GC()
				stop := sampleHeap(&peak)
				start := time.Now()
				r, err := bundle.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				rep, err := verifier.Verify(context.Background(), r, opts)
				if err != nil {
					b.Fatal(err)
				}
				verifyTime += time.Since(start)
				if mode != "verify" {
					stop()
					runtime.GC()
					stop = sampleHeap(&reportPeak)
					start = time.Now()
					o := htmlreport.BundleOptions{MaxEntries: htmlreport.DefaultMaxEntries}
					var w countWriter
					if mode == "html-dir" {
						o.Dir = filepath.Join(dir, "report")
					}
					if err := htmlreport.WriteBundle(context.Background(), &w, rep, r, o); err != nil {
						b.Fatal(err)
					}
					reportTime += time.Since(start)
					size = w.n
					if o.Dir != "" {
						size = dirSize(b, o.Dir)
					}
				}
				stop()
				r.Close()
			}
			n := float64(b.N)
			b.ReportMetric(verifyTime.Seconds()/n, "verify-s")
			b.ReportMetric(float64(peak)/(1<<20), "verify-peak-heap-MiB")
			if mode != "verify" {
				b.ReportMetric(reportTime.Seconds()/n, "report-s")
				b.ReportMetric(reportTime.Seconds()/verifyTime.Seconds(), "report/verify")
				b.ReportMetric(float64(reportPeak)/(1<<20), "report-peak-heap-MiB")
				b.ReportMetric(float64(size)/(1<<20), "report-MiB")
			}
		})
	}
}

// sampleHeap records the peak of the heap in use (live and not yet collected objects) into
// peak every 5 ms until the returned function is called.
func sampleHeap(peak *uint64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			*peak = max(*peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)

func dirSize(b *testing.B, dir string) int64 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			b.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}
