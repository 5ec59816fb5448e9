package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/evident-log/evident/internal/evidentd/daemon"
)

func TestParseConfigFile(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want map[string]string
		bad  bool
	}{
		{"empty", "", map[string]string{}, false},
		{"comments and blanks", "# evidentd\n\n  # indented\n", map[string]string{}, false},
		{"values", "EVIDENT_DB_DSN=u:p@tcp(db:3306)/evident\nEVIDENT_S3_BUCKET = log \nAWS_ACCESS_KEY_ID=AK\n",
			map[string]string{"EVIDENT_DB_DSN": "u:p@tcp(db:3306)/evident", "EVIDENT_S3_BUCKET": "log", "AWS_ACCESS_KEY_ID": "AK"}, false},
		{"quoted value keeps its spaces and equals", `EVIDENT_TOKENS=" a=b "`, map[string]string{"EVIDENT_TOKENS": " a=b "}, false},
		{"empty value", "EVIDENT_S3_PREFIX=", map[string]string{"EVIDENT_S3_PREFIX": ""}, false},
		{"no equals", "EVIDENT_DATA\n", nil, true},
		{"no name", "=x\n", nil, true},
		{"foreign variable", "PATH=/bin\n", nil, true},
		{"lower-case name", "EVIDENT_data=x\n", nil, true},
		{"twice", "EVIDENT_DATA=a\nEVIDENT_DATA=b\n", nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseConfigFile([]byte(c.in))
			if c.bad {
				if !errors.Is(err, ErrConfigFile) {
					t.Fatalf("got %v, %v; want an ErrConfigFile", got, err)
				}
				return
			}
			if err != nil || !maps.Equal(got, c.want) {
				t.Fatalf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func FuzzParseConfigFile(f *testing.F) {
	for _, s := range []string{"", "EVIDENT_DATA=x\n", "# c\nEVIDENT_TOKENS=\"a\"\n", "=\n", "EVIDENT_A=1\nEVIDENT_A=2"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		vars, err := parseConfigFile(b)
		if err != nil {
			if !errors.Is(err, ErrConfigFile) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for name := range vars {
			if name == "" || (name[:min(8, len(name))] != "EVIDENT_" && name != "AWS_ACCESS_KEY_ID" && name != "AWS_SECRET_ACCESS_KEY") {
				t.Fatalf("accepted name %q", name)
			}
		}
	})
}

// TestDistributedConfig: the distributed flags come from flags, the environment and the
// config file, in that order of precedence, and an incomplete set is refused.
func TestDistributedConfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "evidentd.env")
	os.WriteFile(file, []byte("EVIDENT_DB_DSN=file:dsn@tcp(db:3306)/x\nEVIDENT_S3_BUCKET=file-bucket\nEVIDENT_S3_SECRET_KEY=file-secret\n"), 0o600)
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want *daemon.Distributed
		err  error
	}{
		{"embedded default", nil, nil, nil, nil},
		{"file", []string{"--config", file}, nil,
			&daemon.Distributed{DSN: "file:dsn@tcp(db:3306)/x", S3Bucket: "file-bucket", S3SecretKey: "file-secret"}, nil},
		{"env over file", []string{"-config=" + file}, map[string]string{"EVIDENT_S3_BUCKET": "env-bucket", "AWS_ACCESS_KEY_ID": "AK"},
			&daemon.Distributed{DSN: "file:dsn@tcp(db:3306)/x", S3Bucket: "env-bucket", S3AccessKey: "AK", S3SecretKey: "file-secret"}, nil},
		{"flag over env and file", []string{"--config", file, "--s3-bucket", "flag-bucket", "--s3-endpoint", "http://127.0.0.1:9000", "--s3-create-bucket"},
			map[string]string{"EVIDENT_S3_BUCKET": "env-bucket"},
			&daemon.Distributed{DSN: "file:dsn@tcp(db:3306)/x", S3Bucket: "flag-bucket", S3Endpoint: "http://127.0.0.1:9000", S3CreateBucket: true, S3SecretKey: "file-secret"}, nil},
		{"create bucket from env as 1", []string{"--config", file}, map[string]string{"EVIDENT_S3_CREATE_BUCKET": "1"},
			&daemon.Distributed{DSN: "file:dsn@tcp(db:3306)/x", S3Bucket: "file-bucket", S3CreateBucket: true, S3SecretKey: "file-secret"}, nil},
		{"config from env", nil, map[string]string{"EVIDENT_CONFIG": file},
			&daemon.Distributed{DSN: "file:dsn@tcp(db:3306)/x", S3Bucket: "file-bucket", S3SecretKey: "file-secret"}, nil},
		{"bucket without DSN", []string{"--s3-bucket", "b"}, nil, nil, daemon.ErrDistributedConfig},
		{"missing file", []string{"--config", file + ".missing"}, nil, nil, ErrConfigFile},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			getenv := func(k string) string { return c.env[k] }
			getenv, err := withConfigFile(c.args, getenv)
			var got *daemon.Distributed
			if err == nil {
				fs := flag.NewFlagSet("t", flag.ContinueOnError)
				fs.SetOutput(io.Discard)
				envBool := func(name string, def bool) bool {
					if b, err := strconv.ParseBool(getenv(name)); err == nil {
						return b
					}
					return def
				}
				d := distributedFlags(fs, getenv, envBool)
				if err = fs.Parse(c.args); err == nil {
					got, err = d()
				}
			}
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestHelpShowsTypes: --help names each flag's value type (durations and counts too, which
// are read as text so that a bad value names its source) and exits 0 with nothing created.
func TestHelpShowsTypes(t *testing.T) {
	dir := t.TempDir()
	var stderr strings.Builder
	err := run(context.Background(), []string{"--help", "--data", filepath.Join(dir, "data")}, func(string) string { return "" }, io.Discard, &stderr)
	if code := exitCode(err, io.Discard); code != 0 {
		t.Fatalf("exit %d: %v", code, err)
	}
	help := stderr.String()
	for _, want := range []string{
		"  --checkpoint-interval duration\n", "(default 1s)", "  --seal-every count\n", "  --seal-interval duration\n",
		"  --registration-wait duration\n", "  --idle-timeout duration\n", "  --max-body int\n", "  --data string\n",
		`(default "evident-data")`, "  --access-log\n",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	for _, name := range []string{"checkpoint-interval", "seal-every", "seal-interval", "registration-wait", "witness-timeout", "read-header-timeout", "read-timeout", "write-timeout", "idle-timeout"} {
		if strings.Contains(help, "--"+name+" string") {
			t.Errorf("help shows --%s as a string", name)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
		t.Error("--help created the data directory")
	}
}
