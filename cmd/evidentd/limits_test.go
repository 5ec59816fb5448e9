package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

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
