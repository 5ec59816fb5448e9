package log

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/internal/testinfra"
)

// awsTestLog opens a log on the AWS driver against the test MariaDB and S3 server.
func awsTestLog(t *testing.T, signer note.Signer, dsn string, s3 testinfra.S3) *Log {
	t.Helper()
	l, err := Open(context.Background(), Options{
		AWS: &AWSOptions{DSN: dsn, Endpoint: s3.Endpoint, Bucket: s3.Bucket, AccessKeyID: s3.AccessKey, SecretAccessKey: s3.SecretKey,
			CreateBucket: true},
		Signer:             signer,
		CheckpointInterval: time.Second,
		BatchMaxAge:        20 * time.Millisecond,
		Logger:             quietLogger(),
	})
	if err != nil {
		t.Fatalf("Open (AWS driver): %v", err)
	}
	t.Cleanup(func() { closeLog(t, l) })
	return l
}

// TestAWSTwoWritersOneTree runs two Logs — two evidentd replicas — on one database and
// one bucket: both append at once, every entry gets its own index in one tree, every
// checkpoint verifies, proofs built by either replica verify, and the tile log reads back
// through Handler and straight from the bucket with Tessera's tlog-tiles client.
func TestAWSTwoWritersOneTree(t *testing.T) {
	dsn, s3srv := testinfra.MySQLDatabase(t), testinfra.S3Server(t)
	signer, vkey, err := LoadOrCreateKey(filepath.Join(t.TempDir(), "keys"), testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	l1 := awsTestLog(t, signer, dsn, s3srv)
	l2 := awsTestLog(t, signer, dsn, s3srv)

	const per = 30
	var a1, a2 []appended
	var wg sync.WaitGroup
	wg.Go(func() { a1 = appendConcurrently(t, l1, "replica-1", per) })
	wg.Go(func() { a2 = appendConcurrently(t, l2, "replica-2", per) })
	wg.Wait()
	all := append(a1, a2...)
	seen := map[uint64]bool{}
	for _, a := range all {
		if seen[a.index] {
			t.Fatalf("index %d handed out twice", a.index)
		}
		seen[a.index] = true
		cp, err := VerifyCheckpoint(a.cp, vkey)
		if err != nil {
			t.Fatalf("checkpoint of index %d: %v", a.index, err)
		}
		if a.index >= cp.Size {
			t.Fatalf("index %d not covered by its checkpoint of size %d", a.index, cp.Size)
		}
		// Proofs from the other replica's reader, against this append's checkpoint.
		other := l2
		if a.index%2 == 0 {
			other = l1
		}
		p, err := other.InclusionProof(t.Context(), a.index, cp.Size)
		if err != nil {
			t.Fatalf("InclusionProof(%d, %d): %v", a.index, cp.Size, err)
		}
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, a.index, cp.Size, LeafHash(a.entry), p, cp.Hash); err != nil {
			t.Fatalf("inclusion of %d in %d: %v", a.index, cp.Size, err)
		}
	}
	if len(seen) != 2*per {
		t.Fatalf("%d distinct indices, want %d", len(seen), 2*per)
	}
	size, err := l1.Size(t.Context())
	if err != nil || size < 2*per {
		t.Fatalf("Size = %d, %v", size, err)
	}
	for _, a := range all[:5] {
		if e, err := l2.Entry(t.Context(), a.index); err != nil || string(e) != string(a.entry) {
			t.Fatalf("Entry(%d) = %x, %v", a.index, e, err)
		}
	}

	// The read API through evidentd proxies the bucket.
	srv := httptest.NewServer(l2.Handler())
	defer srv.Close()
	for _, c := range []struct {
		path string
		code int
	}{{"/checkpoint", 200}, {"/tile/0/000.p/1", 404}, {"/tile/../checkpoint", 404}, {"/keys", 404}} {
		resp, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Fatalf("GET %s: %d, want %d", c.path, resp.StatusCode, c.code)
		}
		if c.path == "/checkpoint" {
			if _, err := VerifyCheckpoint(body, vkey); err != nil {
				t.Fatalf("checkpoint through Handler: %v", err)
			}
		}
	}

	// Any tlog-tiles client reads the log straight from the bucket once it is public.
	obj, _, _ := newObjectStore(&AWSOptions{Endpoint: s3srv.Endpoint, Bucket: s3srv.Bucket, AccessKeyID: s3srv.AccessKey, SecretAccessKey: s3srv.SecretKey})
	policy := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::%s/*"]}]}`, s3srv.Bucket)
	if _, err := obj.client.PutBucketPolicy(t.Context(), &s3.PutBucketPolicyInput{Bucket: aws.String(s3srv.Bucket), Policy: aws.String(policy)}); err != nil {
		t.Fatalf("making the bucket publicly readable: %v", err)
	}
	root, _ := url.Parse(s3srv.Endpoint + "/" + s3srv.Bucket + "/")
	f, err := client.NewHTTPFetcher(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := f.ReadCheckpoint(t.Context())
	if err != nil {
		t.Fatalf("checkpoint straight from the bucket: %v", err)
	}
	cp, err := VerifyCheckpoint(raw, vkey)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := client.NewProofBuilder(t.Context(), cp.Size, f.ReadTile)
	if err != nil {
		t.Fatal(err)
	}
	a := all[len(all)-1]
	if a.index < cp.Size {
		p, err := pb.InclusionProof(t.Context(), a.index)
		if err != nil {
			t.Fatal(err)
		}
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, a.index, cp.Size, LeafHash(a.entry), p, cp.Hash); err != nil {
			t.Fatalf("inclusion proof from bucket tiles: %v", err)
		}
	}
}

// TestAWSRefusesOtherIdentity: a bucket holding a log signed by one key is not reopened
// with another.
func TestAWSRefusesOtherIdentity(t *testing.T) {
	dsn, s3srv := testinfra.MySQLDatabase(t), testinfra.S3Server(t)
	signer, _, err := LoadOrCreateKey(filepath.Join(t.TempDir(), "keys"), testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	l := awsTestLog(t, signer, dsn, s3srv)
	appendConcurrently(t, l, "one", 1)
	other, _, err := LoadOrCreateKey(filepath.Join(t.TempDir(), "keys2"), testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(context.Background(), Options{AWS: &AWSOptions{DSN: dsn, Endpoint: s3srv.Endpoint, Bucket: s3srv.Bucket,
		AccessKeyID: s3srv.AccessKey, SecretAccessKey: s3srv.SecretKey}, Signer: other, CheckpointInterval: time.Second, Logger: quietLogger()})
	if !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("Open with another key: %v, want ErrKeyMismatch", err)
	}
	for _, o := range []AWSOptions{{Bucket: "b"}, {DSN: "x:y@tcp(127.0.0.1:1)/z"}} {
		if _, err := Open(context.Background(), Options{AWS: &o, Signer: other, CheckpointInterval: time.Second}); err == nil {
			t.Fatalf("Open with %+v succeeded", o)
		}
	}
	if _, err := Open(context.Background(), Options{AWS: &AWSOptions{DSN: dsn, Bucket: "b"}, Signer: other, CheckpointInterval: 500 * time.Millisecond}); err == nil {
		t.Fatal("Open with a checkpoint interval below the AWS driver's minimum succeeded")
	}
}
