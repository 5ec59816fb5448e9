// Package testinfra holds what integration tests share: a temporary directory that outlives
// a closed Tessera log's last write (TempDir), and for tests of the distributed mode a fresh
// database on the MySQL-compatible server named by EVIDENT_TEST_MYSQL_DSN and a fresh bucket
// on the S3-compatible server named by EVIDENT_TEST_S3_ENDPOINT (with
// EVIDENT_TEST_S3_ACCESS_KEY and EVIDENT_TEST_S3_SECRET_KEY). Without those variables the
// distributed tests skip and say how to get them: .ci/distributed-services starts MariaDB and
// MinIO on loopback and exports them.
package testinfra

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/evident-log/evident/trustfile"
)

// Environment variables naming the test servers.
const (
	EnvMySQLDSN    = "EVIDENT_TEST_MYSQL_DSN"
	EnvS3Endpoint  = "EVIDENT_TEST_S3_ENDPOINT"
	EnvS3AccessKey = "EVIDENT_TEST_S3_ACCESS_KEY"
	EnvS3SecretKey = "EVIDENT_TEST_S3_SECRET_KEY"
)

const howTo = "source .ci/distributed-services to start MariaDB and MinIO on loopback"

// MySQLDatabase creates an empty database on the test server and returns its DSN; the
// database is dropped when the test ends. It skips the test when EVIDENT_TEST_MYSQL_DSN
// is not set.
func MySQLDatabase(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvMySQLDSN)
	if dsn == "" {
		t.Skipf("%s is not set: no MySQL-compatible server to test against (%s)", EnvMySQLDSN, howTo)
	}
	cfg, err := driver.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("%s: %v", EnvMySQLDSN, err)
	}
	name := "evt_" + strings.ToLower(randomHex(6))
	admin := cfg.Clone()
	admin.DBName = ""
	db, err := sql.Open("mysql", admin.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating test database on %s: %v", cfg.Addr, err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("mysql", admin.FormatDSN())
		if err != nil {
			return
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name)
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}

// S3 names a bucket on the test server.
type S3 struct {
	Endpoint, AccessKey, SecretKey, Bucket string
}

// S3Server returns the test S3 server and a fresh bucket name (not yet created). It skips
// the test when EVIDENT_TEST_S3_ENDPOINT is not set.
func S3Server(t testing.TB) S3 {
	t.Helper()
	ep := os.Getenv(EnvS3Endpoint)
	if ep == "" {
		t.Skipf("%s is not set: no S3-compatible server to test against (%s)", EnvS3Endpoint, howTo)
	}
	return S3{Endpoint: ep, AccessKey: os.Getenv(EnvS3AccessKey), SecretKey: os.Getenv(EnvS3SecretKey),
		Bucket: "evt-" + strings.ToLower(randomHex(6))}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// String is for failure messages.
func (s S3) String() string { return fmt.Sprintf("%s/%s", s.Endpoint, s.Bucket) }

// TempDir returns a fresh directory that is removed when the test and its cleanups are done.
// Unlike t.TempDir it retries the removal for a few seconds: a Tessera log's background
// goroutines stop asynchronously after Close and may still write a file or two, which makes
// t.TempDir's single RemoveAll fail the test with "directory not empty".
func TempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "evident-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var err error
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if err = os.RemoveAll(dir); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	return dir
}

// FetchTrust downloads the trust file the evidentd at base publishes at
// /.well-known/evident-trust, as a user pinning it would, checks its media type and parses it.
func FetchTrust(t testing.TB, base string) *trustfile.File {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/.well-known/evident-trust", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, trustfile.MaxSize+1))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /.well-known/evident-trust: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	f, err := trustfile.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
