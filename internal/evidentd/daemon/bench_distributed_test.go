package daemon

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/testinfra"
)

// distributedBenchDaemon starts evidentd in its distributed mode (the MySQL ledger store and
// Tessera's AWS driver on a fresh database and bucket of the test servers) behind real HTTP
// on loopback. It skips without the servers.
func distributedBenchDaemon(b *testing.B) string {
	b.Helper()
	dsn, s3 := testinfra.MySQLDatabase(b), testinfra.S3Server(b)
	d, err := Open(context.Background(), Config{Data: testinfra.TempDir(b), CheckpointInterval: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Distributed: &Distributed{DSN: dsn, S3Endpoint: s3.Endpoint, S3Bucket: s3.Bucket, S3AccessKey: s3.AccessKey,
			S3SecretKey: s3.SecretKey, S3CreateBucket: true}})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	b.Cleanup(func() { srv.Close(); d.Close() })
	return srv.URL
}

// BenchmarkIngestHTTPDistributed: one chain written through one distributed-mode replica,
// one envelope per request and batches of 100 (the ledger store reads the chain from the
// database before every request, as with several replicas). With -cpuprofile it shows
// where evidentd's time goes per envelope.
func BenchmarkIngestHTTPDistributed(b *testing.B) {
	for _, bc := range []struct {
		name  string
		batch int
	}{{"single", 1}, {"batch100", 100}} {
		b.Run(bc.name, func(b *testing.B) {
			base := distributedBenchDaemon(b)
			recs := envelopes(b, "wsp_bench", b.N*bc.batch)
			ct := "application/jsonl"
			if bc.batch == 1 {
				ct = "application/json"
			}
			c := &http.Client{}
			url := base + "/v1/chains/wsp_bench/entries"
			b.ResetTimer()
			for i := range b.N {
				mustPost(b, c, url, ct, bytes.Join(recs[i*bc.batch:(i+1)*bc.batch], []byte("\n")))
			}
			b.ReportMetric(float64(b.N*bc.batch)/b.Elapsed().Seconds(), "envelopes/s")
		})
	}
}
