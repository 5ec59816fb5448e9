package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/internal/testinfra"
)

// startDistributed runs evidentd in distributed mode on a fresh database of the test
// MariaDB and a fresh bucket of the test MinIO, served over loopback HTTP.
func startDistributed(t *testing.T) (*Daemon, *httptest.Server) {
	t.Helper()
	dsn, s3 := testinfra.MySQLDatabase(t), testinfra.S3Server(t)
	d, err := Open(context.Background(), Config{Data: testinfra.TempDir(t), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Distributed: &Distributed{DSN: dsn, S3Endpoint: s3.Endpoint, S3Bucket: s3.Bucket, S3AccessKey: s3.AccessKey, S3SecretKey: s3.SecretKey, S3CreateBucket: true}})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveUntilCleanup(t, d)
	return d, srv
}

// TestDistributedBurstOfNewChains: 32 clients each post the first envelope of a different
// new chain to one evidentd on MariaDB at the same moment. Every one is answered 201 at
// its first attempt, and evidentd did not have to retry a single commit: creating chains
// never contends in the store.
func TestDistributedBurstOfNewChains(t *testing.T) {
	const clients = 32
	d, srv := startDistributed(t)
	cast := chapscenario.NewCast()
	firsts := make([][]byte, clients)
	for i := range firsts {
		b := chapscenario.NewBuilder(burstChain(i), time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
		if err := b.Join(cast.Coordinator, cast.Coordinator.URI); err != nil {
			t.Fatal(err)
		}
		firsts[i] = b.Records()[0]
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	answers, errs := make([]ingestAnswer, clients), make([]error, clients)
	testinfra.AtOnce(clients, func(i int) {
		answers[i], errs[i] = submit(t, hc, srv.URL+"/v1/chains/"+burstChain(i)+"/entries", api.MediaJSON, firsts[i])
	})
	for i, a := range answers {
		if errs[i] != nil {
			t.Fatalf("client %d: %v", i, errs[i])
		}
		if a.status != http.StatusCreated || len(a.res.Accepted) != 1 || a.res.Accepted[0].Seq != 0 || a.res.Size != 1 {
			t.Errorf("client %d: %d %s %s; want 201 with seq 0", i, a.status, a.prob.Code, a.prob.Detail)
		}
	}
	if n := d.Pipeline().ConflictRetries(); n != 0 {
		t.Errorf("%d commits retried after a conflict, want none", n)
	}
	for i := range clients {
		var h api.ChainHead
		code, body := get(t, srv.URL+"/v1/chains/"+burstChain(i))
		if err := json.Unmarshal(body, &h); code != http.StatusOK || err != nil || h.Size != 1 || h.Head != answers[i].res.Head {
			t.Fatalf("chain %s: %d %s; want size 1 at the acknowledged head", burstChain(i), code, body)
		}
	}
}

func burstChain(i int) string { return fmt.Sprintf("wsp_burst_%02d", i) }
