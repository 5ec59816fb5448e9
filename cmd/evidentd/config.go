package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/evident-log/evident/internal/evidentd/daemon"
)

// ErrConfigFile is wrapped by every refusal of a configuration file.
var ErrConfigFile = errors.New("config file")

// parseConfigFile reads an environment file: one NAME=value per line, NAME an EVIDENT_*
// (or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY) variable, blank lines and lines starting
// with # ignored, the value taken verbatim after the first '=' (optionally in double
// quotes). It is the same file systemd's EnvironmentFile= and compose's env_file read.
func parseConfigFile(b []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("%w: line %d: want NAME=value", ErrConfigFile, n)
		}
		if !strings.HasPrefix(name, "EVIDENT_") && name != "AWS_ACCESS_KEY_ID" && name != "AWS_SECRET_ACCESS_KEY" {
			return nil, fmt.Errorf("%w: line %d: %.40q is not an EVIDENT_ variable", ErrConfigFile, n, name)
		}
		if strings.ContainsFunc(name, func(r rune) bool { return !(r == '_' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') }) {
			return nil, fmt.Errorf("%w: line %d: bad variable name %.40q", ErrConfigFile, n, name)
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
			value = value[1 : len(value)-1]
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%w: line %d: %s set twice", ErrConfigFile, n, name)
		}
		out[name] = value
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfigFile, err)
	}
	return out, nil
}

// withConfigFile finds --config FILE (or EVIDENT_CONFIG) before the flags are defined and
// returns a getenv that answers from the process environment first, then from the file.
// Precedence is therefore: flag, environment, file, default.
func withConfigFile(args []string, getenv func(string) string) (func(string) string, error) {
	path := getenv("EVIDENT_CONFIG")
	for i, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "config" {
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("-config needs a file name")
			}
			value = args[i+1]
		}
		path = value
	}
	if path == "" {
		return getenv, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfigFile, err)
	}
	vars, err := parseConfigFile(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return func(name string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return vars[name]
	}, nil
}

// distributedFlags defines the distributed-mode flags, reading boolean environment values
// with envBool; the returned function, called after Parse, gives the configuration (nil:
// the embedded default).
func distributedFlags(fs *flag.FlagSet, getenv func(string) string, envBool func(name string, def bool) bool) func() (*daemon.Distributed, error) {
	env := func(name string) string { return getenv(name) }
	fs.String("config", env("EVIDENT_CONFIG"), "file of EVIDENT_*=value lines read before the flags; the environment overrides it, flags override both (env EVIDENT_CONFIG)")
	dsn := fs.String("db-dsn", env("EVIDENT_DB_DSN"), "distributed mode: MySQL-compatible database for the ledger store and the log's sequencer, user:pass@tcp(host:3306)/db (env EVIDENT_DB_DSN)")
	endpoint := fs.String("s3-endpoint", env("EVIDENT_S3_ENDPOINT"), "distributed mode: S3-compatible object store URL with conditional PUT; empty: Amazon S3 (env EVIDENT_S3_ENDPOINT)")
	bucket := fs.String("s3-bucket", env("EVIDENT_S3_BUCKET"), "distributed mode: bucket of the tile log (env EVIDENT_S3_BUCKET); credentials from EVIDENT_S3_ACCESS_KEY/EVIDENT_S3_SECRET_KEY or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY")
	prefix := fs.String("s3-prefix", env("EVIDENT_S3_PREFIX"), "distributed mode: prefix of every object name in the bucket (env EVIDENT_S3_PREFIX)")
	region := fs.String("s3-region", env("EVIDENT_S3_REGION"), "distributed mode: bucket region (env EVIDENT_S3_REGION; default us-east-1)")
	create := fs.Bool("s3-create-bucket", envBool("EVIDENT_S3_CREATE_BUCKET", false), "distributed mode: create the bucket if missing (env EVIDENT_S3_CREATE_BUCKET=true)")
	return func() (*daemon.Distributed, error) {
		if *dsn == "" && *bucket == "" && *endpoint == "" {
			return nil, nil
		}
		d := &daemon.Distributed{DSN: *dsn, S3Endpoint: *endpoint, S3Bucket: *bucket, S3Prefix: *prefix, S3Region: *region, S3CreateBucket: *create,
			S3AccessKey: firstOf(env("EVIDENT_S3_ACCESS_KEY"), env("AWS_ACCESS_KEY_ID")), S3SecretKey: firstOf(env("EVIDENT_S3_SECRET_KEY"), env("AWS_SECRET_ACCESS_KEY"))}
		if d.DSN == "" || d.S3Bucket == "" {
			return nil, fmt.Errorf("%w (-db-dsn and -s3-bucket)", daemon.ErrDistributedConfig)
		}
		return d, nil
	}
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
