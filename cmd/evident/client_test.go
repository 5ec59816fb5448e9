package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/daemon"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
)

// TestSubmitSealExportVerify walks the README's flow with the CLI against a real evidentd
// (in-process, real Tessera log and SQLite store, loopback HTTP).
func TestSubmitSealExportVerify(t *testing.T) {
	srv := startDaemon(t)
	dir := t.TempDir()
	const ws = "wsp_cli"
	b, _, err := chapscenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	recs := b.Records()
	lines := filepath.Join(dir, "first.jsonl")
	os.WriteFile(lines, bytes.Join(recs[:8], []byte("\n")), 0o644)
	array := filepath.Join(dir, "rest.json")
	os.WriteFile(array, append(append([]byte("["), bytes.Join(recs[8:], []byte(","))...), ']'), 0o644)

	if code, out, errs := cli("submit", "-url", srv.URL, "-chain", ws, "-batch", "3", lines, array); code != 0 || !strings.Contains(out, "13 record(s) accepted") {
		t.Fatalf("submit: %d %s %s", code, out, errs)
	}
	// A refused record: the message names the code and the record.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"jsonrpc":"2.0","id":"x","method":"m","params":{"load":0.42}}`), 0o644)
	if code, _, errs := cli("submit", "-url", srv.URL, "-chain", ws, bad); code != exitBroken || !strings.Contains(errs, "number_out_of_range") ||
		!strings.Contains(errs, "400 Bad Request: number_out_of_range (record 0 of the request): ") || !strings.Contains(errs, "0 record(s) accepted before the refusal") {
		t.Fatalf("bad submit: %d %s", code, errs)
	}
	sealFile := filepath.Join(dir, "seal.cose")
	if code, out, errs := cli("seal", "-url", srv.URL, "-chain", ws, "-o", sealFile); code != 0 || !strings.Contains(out, "size 13") {
		t.Fatalf("seal: %d %s %s", code, out, errs)
	}
	if st, err := os.Stat(sealFile); err != nil || st.Size() == 0 {
		t.Fatalf("seal statement not written: %v", err)
	}
	zip := filepath.Join(dir, "case.zip")
	if code, out, errs := cli("export", "-url", srv.URL, "-chain", ws, "-o", zip); code != 0 {
		t.Fatalf("export: %d %s %s", code, out, errs)
	}
	if code, out, errs := cli("verify", zip, "-format", "json", "-q", "--trust", pinTrust(t, srv.URL)); code != exitVerified || !strings.Contains(out, `"verdict": "verified"`) {
		t.Fatalf("verify: %d %s %s", code, out, errs)
	}
	// A failed export leaves no file behind.
	missing := filepath.Join(dir, "missing.zip")
	if code, _, errs := cli("export", "-url", srv.URL, "-chain", "wsp_none", "-o", missing); code != exitFailure || !strings.Contains(errs, "404 Not Found: no_such_chain: ") {
		t.Fatalf("export of a missing chain: %d %s", code, errs)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("a failed export left %s: %v", missing, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 5 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
	if code, _, errs := cli("seal", "-url", srv.URL, "-chain", "wsp_none"); code != exitFailure || !strings.Contains(errs, "no_such_chain") {
		t.Fatalf("seal of a missing chain: %d %s", code, errs)
	}
	if code, _, _ := cli("submit", "-chain", ws); code != exitUsage {
		t.Fatalf("submit without files: %d", code)
	}
}

// startDaemon runs a real evidentd in-process (Tessera log and SQLite store in a temporary
// directory) behind loopback HTTP, closed when the test ends.
func startDaemon(t *testing.T) *httptest.Server {
	t.Helper()
	return startDaemonWith(t, daemon.Config{})
}

// startDaemonWith is startDaemon with c's settings; an empty Data is a temporary directory.
func startDaemonWith(t *testing.T, c daemon.Config) *httptest.Server {
	t.Helper()
	if c.Data == "" {
		c.Data = t.TempDir()
	}
	c.CheckpointInterval = 100 * time.Millisecond
	c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := daemon.Open(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() { srv.Close(); d.Close() })
	return srv
}

// cli runs the evident command in-process: exit code, standard output, standard error.
func cli(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}
