package log

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/transparency-dev/tessera"
	taws "github.com/transparency-dev/tessera/storage/aws"
	awsantispam "github.com/transparency-dev/tessera/storage/aws/antispam"
)

// DefaultS3Region is used when AWSOptions.Region is empty; S3-compatible servers such as
// MinIO accept any region in the signature.
const DefaultS3Region = "us-east-1"

// MinAWSCheckpointInterval is the smallest CheckpointInterval Tessera's AWS driver accepts.
const MinAWSCheckpointInterval = time.Second

// AWSOptions selects Tessera's AWS driver (github.com/transparency-dev/tessera/storage/aws)
// in its non-AWS mode: sequencing and coordination in a MySQL-compatible database
// (MariaDB, MySQL, Aurora MySQL), tiles, entry bundles and the checkpoint in an
// S3-compatible object store that honours conditional PUT (If-None-Match: *): MinIO,
// Amazon S3, Ceph RGW. Several processes may open the same log at once; each sequences,
// integrates and publishes under row locks in the database, so they share one tree.
//
// The object store holds the tile log laid out as C2SP tlog-tiles names it, so any
// tlog-tiles client can read it straight from the bucket (give the bucket, or the prefix,
// anonymous read access).
type AWSOptions struct {
	// DSN is the go-sql-driver/mysql DSN of the database for Tessera's sequencer, e.g.
	// "evident:secret@tcp(db:3306)/evident". Required.
	DSN string
	// Endpoint is the object store's base URL, e.g. "http://127.0.0.1:9000". Empty means
	// Amazon S3 itself.
	Endpoint string
	// Region of the bucket (default DefaultS3Region).
	Region string
	// Bucket holds the log. Required.
	Bucket string
	// Prefix is prepended to every object name, to keep several logs in one bucket.
	Prefix string
	// AccessKeyID and SecretAccessKey are the object store's credentials (static keys).
	AccessKeyID, SecretAccessKey string
	// VirtualHostedStyle addresses the bucket as a host name (bucket.endpoint) instead of
	// a path (endpoint/bucket), which most S3-compatible servers expect.
	VirtualHostedStyle bool
	// CreateBucket creates Bucket when it does not exist.
	CreateBucket bool
	// MaxOpenConns bounds Tessera's database pool (default: driver's).
	MaxOpenConns int
	// HTTPClient talks to the object store (default http.DefaultClient).
	HTTPClient *http.Client
}

// objectStore is the bucket of the AWS driver as a tileStore (for Handler and the
// open-time checkpoint check).
type objectStore struct {
	client *s3.Client
	bucket string
	prefix string
}

func (o *objectStore) key(rel string) string {
	if o.prefix == "" {
		return rel
	}
	return path.Join(o.prefix, rel)
}

// read implements tileStore: a missing object wraps fs.ErrNotExist, any other failure
// errUnavailable.
func (o *objectStore) read(ctx context.Context, rel string) ([]byte, time.Time, error) {
	out, err := o.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(o.bucket), Key: aws.String(o.key(rel))})
	if err != nil {
		if err = notExist(err); errors.Is(err, fs.ErrNotExist) {
			return nil, time.Time{}, err
		}
		return nil, time.Time{}, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("%w: reading %s: %w", errUnavailable, rel, err)
	}
	return b, aws.ToTime(out.LastModified), nil
}

// notExist makes the object store's "no such key" recognisable as fs.ErrNotExist.
func notExist(err error) error {
	var nsk *types.NoSuchKey
	var api smithy.APIError
	if errors.As(err, &nsk) || (errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound")) {
		return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	return err
}

func newObjectStore(a *AWSOptions) (*objectStore, *aws.Config, func(*s3.Options)) {
	region := a.Region
	if region == "" {
		region = DefaultS3Region
	}
	hc := a.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	cfg := aws.Config{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider(a.AccessKeyID, a.SecretAccessKey, ""),
		HTTPClient:  hc,
		// S3-compatible servers do not all accept the SDK's default CRC checksums.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	opts := func(o *s3.Options) {
		if a.Endpoint != "" {
			o.BaseEndpoint = aws.String(a.Endpoint)
		}
		o.UsePathStyle = !a.VirtualHostedStyle
	}
	return &objectStore{client: s3.NewFromConfig(cfg, opts), bucket: a.Bucket, prefix: a.Prefix}, &cfg, opts
}

// ensureBucket checks the bucket exists, creating it when asked to.
func (o *objectStore) ensureBucket(ctx context.Context, create bool) error {
	_, err := o.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(o.bucket)})
	if err == nil {
		return nil
	}
	if !create {
		return fmt.Errorf("log: bucket %q: %w", o.bucket, err)
	}
	if _, err := o.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(o.bucket)}); err != nil {
		var owned *types.BucketAlreadyOwnedByYou
		if !errors.As(err, &owned) {
			return fmt.Errorf("log: creating bucket %q: %w", o.bucket, err)
		}
	}
	return nil
}

// awsDriver opens Tessera's AWS driver for o.AWS. The object store is reached with
// a.HTTPClient, the witnesses with witnesses (Tessera's driver uses its HTTPClient for them
// only).
func awsDriver(ctx context.Context, a *AWSOptions, witnesses *http.Client) (tessera.Driver, *objectStore, error) {
	if a.DSN == "" || a.Bucket == "" {
		return nil, nil, errors.New("log: AWSOptions.DSN and AWSOptions.Bucket are required")
	}
	obj, cfg, s3opts := newObjectStore(a)
	if err := obj.ensureBucket(ctx, a.CreateBucket); err != nil {
		return nil, nil, err
	}
	d, err := taws.New(ctx, taws.Config{
		SDKConfig:    cfg,
		S3Options:    s3opts,
		Bucket:       a.Bucket,
		BucketPrefix: a.Prefix,
		DSN:          a.DSN,
		MaxOpenConns: a.MaxOpenConns,
		HTTPClient:   witnesses,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("log: aws driver: %w", err)
	}
	return d, obj, nil
}

// awsReader adapts the AWS driver's LogReader to what Log expects of a reader: a missing
// object wraps fs.ErrNotExist, and a partial tile or bundle that was garbage-collected
// once it filled up is served from the full one (whose first entries are the same).
type awsReader struct {
	tessera.LogReader
}

func (r awsReader) ReadCheckpoint(ctx context.Context) ([]byte, error) {
	b, err := r.LogReader.ReadCheckpoint(ctx)
	return b, notExist(err)
}

func (r awsReader) ReadTile(ctx context.Context, l, i uint64, p uint8) ([]byte, error) {
	b, err := r.LogReader.ReadTile(ctx, l, i, p)
	if err = notExist(err); errors.Is(err, fs.ErrNotExist) && p > 0 {
		if full, ferr := r.LogReader.ReadTile(ctx, l, i, 0); ferr == nil {
			return full, nil
		}
	}
	return b, err
}

func (r awsReader) ReadEntryBundle(ctx context.Context, i uint64, p uint8) ([]byte, error) {
	b, err := r.LogReader.ReadEntryBundle(ctx, i, p)
	if err = notExist(err); errors.Is(err, fs.ErrNotExist) && p > 0 {
		if full, ferr := r.LogReader.ReadEntryBundle(ctx, i, 0); ferr == nil {
			return full, nil
		}
	}
	return b, err
}

// Antispam tuning for the distributed mode. The log holds seals and registrations, not
// envelopes, so it grows slowly: the follower inserts up to antispamBatch entries per
// transaction, and pushes back only when it falls antispamPushback entries behind (for
// instance while it first indexes an existing log), not at Tessera's default of 2,048.
const (
	antispamBatch    = 512
	antispamPushback = 1 << 17
)

// persistentAntispam returns Tessera's MySQL antispam for the AWS driver (nil for the
// POSIX driver): an index of entry → log index in the sequencing database, filled by a
// follower that reads the integrated log, shared by every replica and kept across restarts.
func persistentAntispam(ctx context.Context, a *AWSOptions) (tessera.Antispam, error) {
	if a == nil {
		return nil, nil
	}
	as, err := awsantispam.NewAntispam(ctx, a.DSN, awsantispam.AntispamOpts{
		MaxBatchSize:      antispamBatch,
		PushbackThreshold: antispamPushback,
		MaxOpenConns:      2,
		MaxIdleConns:      1,
	})
	if err != nil {
		return nil, fmt.Errorf("log: antispam: %w", err)
	}
	return as, nil
}
