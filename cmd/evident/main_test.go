package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// built holds the programs this package's tests run, built once per test process.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// TestMain removes the programs built for the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// buildTools builds evident, evidentd and evident-witness, as a user runs them, once for
// all the tests of this package, and returns the directory holding them.
func buildTools(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds binaries")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool")
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "evident-cli-test"); built.err != nil {
			return
		}
		cmd := exec.Command(goBin, "build", "-o", built.dir+string(os.PathSeparator), "../evidentd", "../evident-witness", ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}

// TestDemoThenOfflineVerify runs `evident demo` (evidentd on loopback), then verifies the
// exported bundle again in an empty network namespace where no connection can succeed,
// and traces the verifier's system calls to prove it opens no socket at all.
func TestDemoThenOfflineVerify(t *testing.T) {
	bin := buildTools(t)
	work := t.TempDir()
	var out, errb bytes.Buffer
	demo := exec.Command(filepath.Join(bin, "evident"), "demo", "--dir", work)
	demo.Stdout, demo.Stderr = &out, &errb
	if err := demo.Run(); err != nil {
		t.Fatalf("demo: %v\n%s\n%s", err, out.String(), errb.String())
	}
	for _, want := range []string{"decide.override", "human:bob@example.org", "Sealed: chain size 10", "evident trust fetch", "evident verify --trust", "VERDICT: VERIFIED"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
	bundlePath := filepath.Join(work, "wsp_support_triage.evident.zip")

	trustFiles, _ := filepath.Glob(filepath.Join(work, "*.trust.json")) // the demo fetched and pinned it
	if len(trustFiles) != 1 {
		t.Fatalf("the demo saved trust files %v", trustFiles)
	}
	args := []string{filepath.Join(bin, "evident"), "verify", "-format", "json", "--trust", trustFiles[0], bundlePath}
	if _, err := exec.LookPath("unshare"); err == nil && exec.Command("unshare", "-rn", "true").Run() == nil {
		args = append([]string{"unshare", "-rn"}, args...)
	} else {
		t.Log("unshare unavailable: verifying without a network namespace")
	}
	traceFile := filepath.Join(work, "trace")
	if _, err := exec.LookPath("strace"); err == nil {
		args = append([]string{"strace", "-f", "-qq", "-e", "trace=socket,connect", "-o", traceFile}, args...)
	}
	v := exec.CommandContext(context.Background(), args[0], args[1:]...)
	var vout, verr bytes.Buffer
	v.Stdout, v.Stderr = &vout, &verr
	if err := v.Run(); err != nil {
		t.Fatalf("offline verify: %v\n%s\n%s", err, vout.String(), verr.String())
	}
	var rep struct {
		Verdict string `json:"verdict"`
	}
	if err := json.Unmarshal(vout.Bytes(), &rep); err != nil || rep.Verdict != "verified" {
		t.Fatalf("verdict %q (%v):\n%s", rep.Verdict, err, vout.String())
	}
	if trace, err := os.ReadFile(traceFile); err == nil {
		if bytes.Contains(trace, []byte("socket(")) || bytes.Contains(trace, []byte("connect(")) {
			t.Fatalf("the verifier made network system calls:\n%s", trace)
		}
	}

	// Pinned keys: nothing pinned is not evaluated; the operator's own log key with its trust
	// file verifies; another log's key is broken.
	if code := exitCode(exec.Command(filepath.Join(bin, "evident"), "verify", "-q", bundlePath)); code != exitNotEvaluated {
		t.Errorf("nothing pinned: exit %d, want %d", code, exitNotEvaluated)
	}
	vkeyFile := filepath.Join(work, "data", "keys", "log.vkey")
	if code := exitCode(exec.Command(filepath.Join(bin, "evident"), "verify", "-q", "--log-key", vkeyFile, "--trust", trustFiles[0], bundlePath)); code != exitVerified {
		t.Errorf("pinned to the right log key: exit %d", code)
	}
	other := "evident.localhost/log+b56526d1+AdA9CjZ5LE6JGHtE5FQdC7JCvQ8JlaHUWxy9+wIcUrg3" // a valid key of another log
	if code := exitCode(exec.Command(filepath.Join(bin, "evident"), "verify", "-q", "--log-key", other, bundlePath)); code != exitBroken {
		t.Errorf("pinned to another log key: exit %d, want %d", code, exitBroken)
	}

	// Exit codes: usage error and a broken bundle.
	if code := exitCode(exec.Command(filepath.Join(bin, "evident"), "verify")); code != exitUsage {
		t.Errorf("no bundle: exit %d, want %d", code, exitUsage)
	}
	bad := filepath.Join(work, "bad.zip")
	os.WriteFile(bad, []byte("PK\x03\x04 not really a zip"), 0o644)
	if code := exitCode(exec.Command(filepath.Join(bin, "evident"), "verify", bad)); code != exitFailure {
		t.Errorf("not a bundle at all: exit %d, want %d", code, exitFailure)
	}
}

func exitCode(c *exec.Cmd) int {
	err := c.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
