package main

import (
	"io"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/daemon"
	"github.com/evident-log/evident/internal/evidentd/server"
	"github.com/evident-log/evident/ledger/canonical"
)

// TestRecordLimitSettings: --max-depth and --max-record-bytes come from the flag, the
// environment or the config file (in that order of precedence), default to canonical's, and a
// record limit above the body limit raises the body limit unless that was set.
func TestRecordLimitSettings(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "evidentd.env")
	if err := os.WriteFile(cfgFile, []byte("EVIDENT_MAX_DEPTH=500\nEVIDENT_MAX_RECORD_BYTES=2000000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const mib = 1 << 20
	for _, tc := range []struct {
		name                   string
		args                   []string
		env                    map[string]string
		depth, record, maxBody int64
	}{
		{"defaults", nil, nil, canonical.DefaultMaxDepth, canonical.DefaultMaxSize, server.DefaultMaxBody},
		{"flags", []string{"-max-depth", "80", "--max-record-bytes", "1100000"}, nil, 80, 1100000, server.DefaultMaxBody},
		{"environment", nil, map[string]string{"EVIDENT_MAX_DEPTH": "5000", "EVIDENT_MAX_RECORD_BYTES": "4194304"}, 5000, 4 * mib, server.DefaultMaxBody},
		{"config file", []string{"-config", cfgFile}, nil, 500, 2000000, server.DefaultMaxBody},
		{"environment over the config file", []string{"-config", cfgFile}, map[string]string{"EVIDENT_MAX_DEPTH": "7"}, 7, 2000000, server.DefaultMaxBody},
		{"flag over the environment", []string{"-max-depth", "9"}, map[string]string{"EVIDENT_MAX_DEPTH": "7"}, 9, canonical.DefaultMaxSize, server.DefaultMaxBody},
		{"a record limit above the body limit raises it", []string{"-max-record-bytes", "100000000"}, nil, canonical.DefaultMaxDepth, 100000000, 100000000 + mib},
		{"a body limit that was set stays", []string{"-max-record-bytes", "100000000", "-max-body", "200000000"}, nil, canonical.DefaultMaxDepth, 100000000, 200000000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"EVIDENT_DATA": filepath.Join(dir, "data"), "EVIDENT_LISTEN": "127.0.0.1:0"}
			for k, v := range tc.env {
				env[k] = v
			}
			o, err := parseConfig(tc.args, func(k string) string { return env[k] }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if int64(o.cfg.MaxDepth) != tc.depth || int64(o.cfg.MaxRecordBytes) != tc.record || o.cfg.MaxBody != tc.maxBody {
				t.Fatalf("depth %d, record %d, body %d; want %d, %d, %d", o.cfg.MaxDepth, o.cfg.MaxRecordBytes, o.cfg.MaxBody, tc.depth, tc.record, tc.maxBody)
			}
		})
	}
}

// TestLoadLimitSettings: --max-inflight-bytes, --max-conns and the four HTTP timeouts come
// from the flag, the environment or the config file (in that order of precedence) and default
// to daemon's; the bodies in flight default to four bodies at the final --max-body, raised
// with it when a record limit raises it.
func TestLoadLimitSettings(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "evidentd.env")
	if err := os.WriteFile(cfgFile, []byte("EVIDENT_MAX_CONNS=64\nEVIDENT_WRITE_TIMEOUT=5m\nEVIDENT_MAX_INFLIGHT_BYTES=134217728\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	defaults := daemon.HTTP{MaxInFlight: server.DefaultInFlightBodies * server.DefaultMaxBody, MaxConns: daemon.DefaultMaxConns,
		ReadHeaderTimeout: daemon.DefaultReadHeaderTimeout, ReadTimeout: daemon.DefaultReadTimeout, WriteTimeout: daemon.DefaultWriteTimeout, IdleTimeout: daemon.DefaultIdleTimeout}
	with := func(f func(*daemon.HTTP)) daemon.HTTP {
		h := defaults
		f(&h)
		return h
	}
	const mib = 1 << 20
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want daemon.HTTP
	}{
		{"defaults", nil, nil, defaults},
		{"flags", []string{"-max-inflight-bytes", "70000000", "--max-conns", "10", "-read-header-timeout", "2s", "-read-timeout", "30s", "-write-timeout", "90s", "-idle-timeout", "5s"}, nil,
			daemon.HTTP{MaxInFlight: 70000000, MaxConns: 10, ReadHeaderTimeout: 2 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 90 * time.Second, IdleTimeout: 5 * time.Second}},
		{"environment", nil, map[string]string{"EVIDENT_MAX_INFLIGHT_BYTES": "67108864", "EVIDENT_MAX_CONNS": "2000", "EVIDENT_READ_HEADER_TIMEOUT": "3s",
			"EVIDENT_READ_TIMEOUT": "1m", "EVIDENT_WRITE_TIMEOUT": "10s", "EVIDENT_IDLE_TIMEOUT": "30s"},
			daemon.HTTP{MaxInFlight: 64 * mib, MaxConns: 2000, ReadHeaderTimeout: 3 * time.Second, ReadTimeout: time.Minute, WriteTimeout: 10 * time.Second, IdleTimeout: 30 * time.Second}},
		{"config file", []string{"-config", cfgFile}, nil, with(func(h *daemon.HTTP) { h.MaxConns, h.WriteTimeout, h.MaxInFlight = 64, 5*time.Minute, 128*mib })},
		{"environment over the config file", []string{"-config", cfgFile}, map[string]string{"EVIDENT_MAX_CONNS": "65"},
			with(func(h *daemon.HTTP) { h.MaxConns, h.WriteTimeout, h.MaxInFlight = 65, 5*time.Minute, 128*mib })},
		{"flag over the environment", []string{"-max-conns", "7"}, map[string]string{"EVIDENT_MAX_CONNS": "8"}, with(func(h *daemon.HTTP) { h.MaxConns = 7 })},
		{"zero is the default", []string{"-max-inflight-bytes", "0"}, nil, defaults},
		{"four bodies at a body limit that was set", []string{"-max-body", "100000000"}, nil, with(func(h *daemon.HTTP) { h.MaxInFlight = 400000000 })},
		{"four bodies at a body limit a record limit raised", []string{"-max-record-bytes", "100000000"}, nil, with(func(h *daemon.HTTP) { h.MaxInFlight = 4 * (100000000 + mib) })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"EVIDENT_DATA": filepath.Join(dir, "data"), "EVIDENT_LISTEN": "127.0.0.1:0"}
			maps.Copy(env, tc.env)
			o, err := parseConfig(tc.args, func(k string) string { return env[k] }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if o.cfg.HTTP != tc.want {
				t.Fatalf("%+v, want %+v", o.cfg.HTTP, tc.want)
			}
		})
	}
}
