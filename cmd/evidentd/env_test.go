package main

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/buildinfo"
)

// TestMalformedEnvironmentIsAnError: a bad EVIDENT_* value stops evidentd with a message that
// names it, before anything is created; it never falls back to the default silently.
func TestMalformedEnvironmentIsAnError(t *testing.T) {
	for name, value := range map[string]string{
		"EVIDENT_MAX_BODY":          "64MB",
		"EVIDENT_MAX_BATCH":         "lots",
		"EVIDENT_WITNESS_FAIL_OPEN": "yes please",
		"EVIDENT_LOG_MLDSA":         "on",
		"EVIDENT_MAX_CONNS":         "1k",
	} {
		env := map[string]string{name: value, "EVIDENT_DATA": t.TempDir() + "/data"}
		err := run(context.Background(), nil, func(k string) string { return env[k] }, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: %v", name, value, err)
		}
	}
}

// TestInvalidConfigurationCreatesNothing: a bad flag or environment value is refused with
// the exit code for usage and a message naming the flag or the variable it came from, and
// the data directory is not created.
func TestInvalidConfigurationCreatesNothing(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "missing.policy")
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"seal interval from the environment", nil, map[string]string{"EVIDENT_SEAL_INTERVAL": "x"}, `EVIDENT_SEAL_INTERVAL: invalid duration "x"`},
		{"seal interval flag", []string{"-seal-interval", "x"}, nil, `-seal-interval: invalid duration "x"`},
		{"flag wins over the environment", []string{"-seal-interval", "1m"}, map[string]string{"EVIDENT_SEAL_INTERVAL": "x"}, ""},
		{"seal every", nil, map[string]string{"EVIDENT_SEAL_EVERY": "ten"}, `EVIDENT_SEAL_EVERY: invalid count "ten"`},
		{"checkpoint interval too short", nil, map[string]string{"EVIDENT_CHECKPOINT_INTERVAL": "10ms"}, `EVIDENT_CHECKPOINT_INTERVAL: "10ms" is shorter than 100ms`},
		{"negative witness timeout", []string{"-witness-timeout", "-1s"}, nil, `-witness-timeout: negative duration "-1s"`},
		{"registration wait", nil, map[string]string{"EVIDENT_REGISTRATION_WAIT": "soon"}, `EVIDENT_REGISTRATION_WAIT: invalid duration "soon"`},
		{"listen address", nil, map[string]string{"EVIDENT_LISTEN": "8080"}, `EVIDENT_LISTEN: invalid address "8080"`},
		{"log format", nil, map[string]string{"EVIDENT_LOG_FORMAT": "xml"}, `EVIDENT_LOG_FORMAT: log format: want text or json, not "xml"`},
		{"access log", nil, map[string]string{"EVIDENT_ACCESS_LOG": "off"}, `EVIDENT_ACCESS_LOG: invalid boolean "off"`},
		{"max body", nil, map[string]string{"EVIDENT_MAX_BODY": "64MB"}, `EVIDENT_MAX_BODY: invalid integer "64MB"`},
		{"max depth zero", []string{"-max-depth", "0"}, nil, `-max-depth: 0 is outside 1..1048576`},
		{"max depth over the cap", nil, map[string]string{"EVIDENT_MAX_DEPTH": "2000000"}, `EVIDENT_MAX_DEPTH: 2000000 is outside 1..1048576`},
		{"max record bytes", nil, map[string]string{"EVIDENT_MAX_RECORD_BYTES": "32MiB"}, `EVIDENT_MAX_RECORD_BYTES: invalid integer "32MiB"`},
		{"max body below the record limit", []string{"-max-body", "1000000", "-max-record-bytes", "2000000"}, nil,
			`-max-body: 1000000 is below -max-record-bytes 2000000 plus 1 MiB`},
		{"max inflight bytes", nil, map[string]string{"EVIDENT_MAX_INFLIGHT_BYTES": "256MiB"}, `EVIDENT_MAX_INFLIGHT_BYTES: invalid integer "256MiB"`},
		{"max inflight bytes negative", []string{"-max-inflight-bytes", "-1"}, nil, `-max-inflight-bytes: -1 is negative`},
		{"max inflight bytes below the body limit", nil, map[string]string{"EVIDENT_MAX_INFLIGHT_BYTES": "1000000"},
			`EVIDENT_MAX_INFLIGHT_BYTES: 1000000 is below -max-body 67108864: a body at that limit could never be taken`},
		{"max inflight bytes below a body limit set", []string{"-max-inflight-bytes", "100000000"}, map[string]string{"EVIDENT_MAX_BODY": "200000000"},
			`-max-inflight-bytes: 100000000 is below EVIDENT_MAX_BODY 200000000`},
		{"max conns", nil, map[string]string{"EVIDENT_MAX_CONNS": "many"}, `EVIDENT_MAX_CONNS: invalid integer "many"`},
		{"max conns zero", []string{"-max-conns", "0"}, nil, `-max-conns: 0 is outside 1..1048576`},
		{"read header timeout", []string{"-read-header-timeout", "x"}, nil, `-read-header-timeout: invalid duration "x"`},
		{"read timeout zero", nil, map[string]string{"EVIDENT_READ_TIMEOUT": "0"}, `EVIDENT_READ_TIMEOUT: "0" is shorter than 1ms`},
		{"write timeout negative", []string{"-write-timeout", "-1s"}, nil, `-write-timeout: negative duration "-1s"`},
		{"idle timeout", nil, map[string]string{"EVIDENT_IDLE_TIMEOUT": "2 minutes"}, `EVIDENT_IDLE_TIMEOUT: invalid duration "2 minutes"`},
		{"tls key without cert", []string{"-tls-key", "k.pem"}, nil, "-tls-cert and -tls-key"},
		{"missing witness policy", nil, map[string]string{"EVIDENT_WITNESS_POLICY": policy}, "EVIDENT_WITNESS_POLICY: stat " + policy},
		{"short token", []string{"-tokens", "short"}, nil, "at least 16 characters"},
		{"unknown flag", []string{"-sael-every", "3"}, nil, "flag provided but not defined: -sael-every"},
		{"stray argument", []string{"serve"}, nil, "unexpected arguments: serve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			env := map[string]string{"EVIDENT_DATA": data, "EVIDENT_LISTEN": "127.0.0.1:0"}
			maps.Copy(env, tc.env)
			o, err := parseConfig(tc.args, func(k string) string { return env[k] }, io.Discard)
			if tc.want == "" {
				if err != nil || o.cfg.SealInterval != time.Minute {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			var stderr strings.Builder
			if code := exitCode(run(context.Background(), tc.args, func(k string) string { return env[k] }, io.Discard, io.Discard), &stderr); code != exitUsage {
				t.Errorf("exit code %d, want %d", code, exitUsage)
			}
			if !strings.HasPrefix(stderr.String(), "evidentd: ") || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q", stderr.String())
			}
			if _, err := os.Stat(data); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("data directory: %v", err)
			}
		})
	}
}

// TestBooleanEnvironment: EVIDENT_ACCESS_LOG and EVIDENT_S3_CREATE_BUCKET take every form
// strconv.ParseBool accepts (0, f, F, false, … and 1, t, T, true, …), each meaning what it says.
func TestBooleanEnvironment(t *testing.T) {
	for _, tc := range []struct {
		access, create string
		wantAccess     bool
		wantCreate     bool
	}{
		{"", "", true, false},
		{"0", "1", false, true},
		{"f", "t", false, true},
		{"F", "T", false, true},
		{"false", "true", false, true},
		{"FALSE", "TRUE", false, true},
		{"1", "0", true, false},
		{"true", "false", true, false},
	} {
		env := map[string]string{"EVIDENT_DATA": t.TempDir() + "/data", "EVIDENT_LISTEN": "127.0.0.1:0",
			"EVIDENT_ACCESS_LOG": tc.access, "EVIDENT_S3_CREATE_BUCKET": tc.create,
			"EVIDENT_DB_DSN": "u:p@tcp(db:3306)/x", "EVIDENT_S3_BUCKET": "b"}
		o, err := parseConfig(nil, func(k string) string { return env[k] }, io.Discard)
		if err != nil {
			t.Fatalf("EVIDENT_ACCESS_LOG=%q EVIDENT_S3_CREATE_BUCKET=%q: %v", tc.access, tc.create, err)
		}
		if o.cfg.AccessLog != tc.wantAccess {
			t.Errorf("EVIDENT_ACCESS_LOG=%q: access log %v, want %v", tc.access, o.cfg.AccessLog, tc.wantAccess)
		}
		if o.cfg.Distributed == nil || o.cfg.Distributed.S3CreateBucket != tc.wantCreate {
			t.Errorf("EVIDENT_S3_CREATE_BUCKET=%q: distributed %+v, want S3CreateBucket %v", tc.create, o.cfg.Distributed, tc.wantCreate)
		}
	}
	env := map[string]string{"EVIDENT_S3_CREATE_BUCKET": "yes"}
	if _, err := parseConfig(nil, func(k string) string { return env[k] }, io.Discard); err == nil || !strings.Contains(err.Error(), `EVIDENT_S3_CREATE_BUCKET: invalid boolean "yes"`) {
		t.Errorf("EVIDENT_S3_CREATE_BUCKET=yes: %v", err)
	}
}

// TestVersion: --version prints the build and exits 0 without creating anything.
func TestVersion(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	var stdout strings.Builder
	err := run(context.Background(), []string{"--version"}, func(k string) string { return map[string]string{"EVIDENT_DATA": data}[k] }, &stdout, io.Discard)
	if err != nil || exitCode(err, io.Discard) != 0 {
		t.Fatal(err)
	}
	if want := buildinfo.Read().Program("evidentd") + "\n"; stdout.String() != want || !strings.Contains(want, runtime.Version()) {
		t.Fatalf("printed %q, want %q", stdout.String(), want)
	}
	if _, err := os.Stat(data); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("data directory: %v", err)
	}
}

func TestParseTokens(t *testing.T) {
	toks, err := parseTokens("aaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbb=wsp_, cccccccccccccccc=run-=operator:post@acme")
	if err != nil || len(toks) != 3 {
		t.Fatalf("%v %v", toks, err)
	}
	if toks[0].Prefix != "" || toks[1].Prefix != "wsp_" || toks[2].Prefix != "run-" || toks[2].Operator != "operator:post@acme" || toks[1].Operator != "" {
		t.Fatalf("%+v", toks)
	}
	if _, err := parseTokens("short=wsp_"); err == nil {
		t.Fatal("a short secret was accepted")
	}
}
