package daemon

import (
	"context"
	"errors"
	"fmt"

	"github.com/evident-log/evident/internal/evidentd/store/mysql"
	"github.com/evident-log/evident/log"
)

// Distributed configures the scale-out mode: the ledger store and Tessera's sequencer in
// one MySQL-compatible database (MariaDB, MySQL, Aurora MySQL), the tile log in an
// S3-compatible object store with conditional PUT (MinIO, S3, Ceph RGW), through
// Tessera's AWS driver in its non-AWS mode. Every replica is configured the same way and
// shares the keys of the data directory.
type Distributed struct {
	// DSN of the database (EVIDENT_DB_DSN), go-sql-driver/mysql syntax:
	// "user:password@tcp(host:3306)/evident". Required.
	DSN string
	// S3Endpoint is the object store's URL (EVIDENT_S3_ENDPOINT); empty: Amazon S3.
	S3Endpoint string
	// S3Bucket holds the tile log (EVIDENT_S3_BUCKET). Required.
	S3Bucket string
	// S3Prefix is prepended to every object name (EVIDENT_S3_PREFIX).
	S3Prefix string
	// S3Region (EVIDENT_S3_REGION), default log.DefaultS3Region.
	S3Region string
	// S3AccessKey and S3SecretKey are the object store's credentials, from the environment
	// only (EVIDENT_S3_ACCESS_KEY and EVIDENT_S3_SECRET_KEY, or AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY).
	S3AccessKey, S3SecretKey string
	// S3CreateBucket creates the bucket when missing (EVIDENT_S3_CREATE_BUCKET).
	S3CreateBucket bool
	// MaxOpenConns bounds each of the two database pools (ledger store, sequencer).
	MaxOpenConns int
}

// ErrDistributedConfig is returned for an incomplete distributed-mode configuration.
var ErrDistributedConfig = errors.New("distributed mode needs a database DSN and an S3 bucket")

func (d *Distributed) logOptions(o log.Options) (log.Options, error) {
	if d.DSN == "" || d.S3Bucket == "" {
		return o, ErrDistributedConfig
	}
	if o.CheckpointInterval < log.MinAWSCheckpointInterval {
		o.CheckpointInterval = log.MinAWSCheckpointInterval
	}
	o.Dir = ""
	o.AWS = &log.AWSOptions{DSN: d.DSN, Endpoint: d.S3Endpoint, Region: d.S3Region, Bucket: d.S3Bucket, Prefix: d.S3Prefix,
		AccessKeyID: d.S3AccessKey, SecretAccessKey: d.S3SecretKey, CreateBucket: d.S3CreateBucket, MaxOpenConns: d.MaxOpenConns}
	return o, nil
}

func (d *Distributed) openStore(ctx context.Context) (*mysql.Store, error) {
	st, err := mysql.Open(ctx, d.DSN, mysql.Options{MaxOpenConns: d.MaxOpenConns})
	if err != nil {
		return nil, fmt.Errorf("ledger store: %w", err)
	}
	return st, nil
}
