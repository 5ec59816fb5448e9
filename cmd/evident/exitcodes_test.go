package main

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/evidentd/daemon"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
)

// exitFixture is what the exit-code cases run against: a real evidentd on loopback holding a
// sealed chain, its exported bundle, a tampered copy, a bundle with unsealed entries, the
// operator's published keys, and an address where nothing listens.
type exitFixture struct {
	url, down                   string
	good, tampered, unsealed    string
	logKey, issuerKeys, records string
	notBundle, badRecord        string
	newer, badManifest          string
}

func newExitFixture(t *testing.T) *exitFixture {
	t.Helper()
	data := t.TempDir()
	d, err := daemon.Open(context.Background(), daemon.Config{Data: data, CheckpointInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() { srv.Close(); d.Close() })
	dir := t.TempDir()
	f := &exitFixture{url: srv.URL, logKey: filepath.Join(data, "keys", "log.vkey")}
	if f.down, err = freeLoopbackAddr(); err != nil {
		t.Fatal(err)
	}
	f.down = "http://" + f.down

	const ws = "wsp_exit"
	b, _, err := chapscenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	f.records = filepath.Join(dir, "records.jsonl")
	write(t, f.records, bytes.Join(b.Records(), []byte("\n")))
	mustCLI(t, "submit", "-url", f.url, "-chain", ws, f.records)
	mustCLI(t, "seal", "-url", f.url, "-chain", ws)
	f.good = filepath.Join(dir, "good.zip")
	mustCLI(t, "export", "-url", f.url, "-chain", ws, "-o", f.good)

	// A chain whose last entries no seal covers: nothing broken, something unchecked.
	const open = "wsp_open"
	ob, _, err := chapscenario.SupportTriage(open, time.Date(2026, 5, 18, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	recs := ob.Records()
	first := filepath.Join(dir, "first.jsonl")
	write(t, first, bytes.Join(recs[:5], []byte("\n")))
	rest := filepath.Join(dir, "rest.jsonl")
	write(t, rest, bytes.Join(recs[5:], []byte("\n")))
	mustCLI(t, "submit", "-url", f.url, "-chain", open, first)
	mustCLI(t, "seal", "-url", f.url, "-chain", open)
	mustCLI(t, "submit", "-url", f.url, "-chain", open, rest)
	f.unsealed = filepath.Join(dir, "unsealed.zip")
	mustCLI(t, "export", "-url", f.url, "-chain", open, "-o", f.unsealed)

	f.tampered = filepath.Join(dir, "tampered.zip")
	write(t, f.tampered, tamper(t, f.good, "chains/"+ws+"/entries.jsonl", "human:bob@example.org", "human:eve@example.org"))

	resp, err := http.Get(f.url + "/.well-known/scitt-keys")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scitt-keys: %v %v", resp, err)
	}
	keys, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	f.issuerKeys = filepath.Join(dir, "scitt-keys.cbor")
	write(t, f.issuerKeys, keys)

	// A bundle of a later format version, with a member this one does not know; and the same
	// member under this version's name.
	f.newer = filepath.Join(dir, "newer.zip")
	write(t, f.newer, tamper(t, f.good, bundle.ManifestFile, `"format": "evident-bundle/v1",`, `"format": "evident-bundle/v2", "only_in_v2": true,`))
	f.badManifest = filepath.Join(dir, "bad-manifest.zip")
	write(t, f.badManifest, tamper(t, f.good, bundle.ManifestFile, `"format": "evident-bundle/v1",`, `"format": "evident-bundle/v1", "only_in_v2": true,`))

	f.notBundle = filepath.Join(dir, "notes.txt")
	write(t, f.notBundle, []byte("this is a text file, not a bundle\n"))
	f.badRecord = filepath.Join(dir, "bad.json")
	write(t, f.badRecord, []byte(`{"jsonrpc":"2.0","id":"x","method":"m","params":{"load":0.42}}`))
	return f
}

// TestExitCodes runs the real evident, evidentd and evident-witness binaries as a user
// would and checks each exit code against the one documented table (docs/cli.md): 0
// verified or done, 1 broken, 2 not evaluated, 3 could not run, 64 usage; help on standard
// output; usage errors name what is missing and show the one-line usage.
func TestExitCodes(t *testing.T) {
	bin := buildTools(t)
	f := newExitFixture(t)
	work := t.TempDir()
	missing := filepath.Join(work, "missing.zip")
	auditDump, err := filepath.Abs("../../testvectors/chap-reference/ts/full.audit.json")
	if err != nil {
		t.Fatal(err)
	}
	proofs, err := filepath.Abs("../../misbehaviour/testdata")
	if err != nil {
		t.Fatal(err)
	}
	fork, goldenKey := filepath.Join(proofs, "consistency_proof_failed.golden"), filepath.Join(proofs, "log.vkey")
	type tc struct {
		name    string
		prog    string // default evident
		args    []string
		env     []string
		code    int
		stdout  []string // substrings of standard output
		stderr  []string // substrings of standard error
		nostd   []string // substrings standard error must not hold
		cleanOE bool     // nothing on standard error
	}
	cases := []tc{
		// evident itself
		{name: "no command", args: nil, code: exitUsage, stderr: []string{"Usage: evident <command>"}},
		{name: "help", args: []string{"--help"}, code: 0, stdout: []string{"Exit codes", "64  usage"}, cleanOE: true},
		{name: "help verify", args: []string{"help", "verify"}, code: 0, stdout: []string{"Usage: evident verify"}, cleanOE: true},
		{name: "unknown command", args: []string{"frobnicate"}, code: exitUsage, stderr: []string{`unknown command "frobnicate"`}},

		// verify
		{name: "verify verified", args: []string{"verify", "-q", "--log-key", f.logKey, "--issuer-keys", f.issuerKeys, f.good}, code: exitVerified, stdout: []string{"VERIFIED"}},
		{name: "verify broken", args: []string{"verify", "-q", f.tampered}, code: exitBroken, stdout: []string{"BROKEN"}},
		{name: "verify not evaluated", args: []string{"verify", "-q", "--log-key", f.logKey, "--issuer-keys", f.issuerKeys, f.unsealed}, code: exitNotEvaluated, stdout: []string{"VERDICT: NOT_EVALUATED"}},
		{name: "verify not a bundle", args: []string{"verify", f.notBundle}, code: exitFailure, stderr: []string{"not an evident-bundle/v1"}},
		{name: "verify newer format", args: []string{"verify", f.newer}, code: exitFailure,
			stderr: []string{`made by a newer Evident (format "evident-bundle/v2"; this verifier reads evident-bundle/v1): upgrade`}, nostd: []string{"unknown field"}},
		{name: "verify manifest unknown member", args: []string{"verify", "-q", f.badManifest}, code: exitBroken,
			stdout: []string{"VERDICT: BROKEN", "bundle.manifest @ manifest.json (manifest_invalid)", `unknown field "only_in_v2"`}},
		{name: "verify no such file", args: []string{"verify", missing}, code: exitFailure, stderr: []string{"no such file"}},
		{name: "verify missing bundle", args: []string{"verify"}, code: exitUsage, stderr: []string{"verify: missing BUNDLE argument", "usage: evident verify [flags] BUNDLE"}},
		{name: "verify two bundles", args: []string{"verify", f.good, f.good}, code: exitUsage, stderr: []string{"unexpected argument"}},
		{name: "verify unknown flag", args: []string{"verify", "--nope", f.good}, code: exitUsage,
			stderr: []string{"evident verify: flag provided but not defined: -nope", "usage: evident verify [flags] BUNDLE", "Run 'evident verify --help'"}, nostd: []string{"-witness-max-age"}},
		{name: "verify bad format", args: []string{"verify", "-format", "xml", f.good}, code: exitUsage, stderr: []string{"-format must be text, json or html"}},
		{name: "verify html-dir with -o", args: []string{"verify", "--html-dir", missing, "-o", missing, f.good}, code: exitUsage, stderr: []string{"--html-dir writes DIR/index.html and its pages; -o is not taken with it"}},
		{name: "verify help", args: []string{"verify", "--help"}, code: 0, stdout: []string{"Usage: evident verify", "-format"}, cleanOE: true},

		// submit, import, seal, export
		{name: "submit missing chain", args: []string{"submit", f.records}, code: exitUsage, stderr: []string{"submit: missing -chain"}},
		{name: "submit missing file", args: []string{"submit", "-chain", "c"}, code: exitUsage, stderr: []string{"submit: missing FILE argument"}},
		{name: "submit batch 0", args: []string{"submit", "-chain", "c", "-batch", "0", f.records}, code: exitUsage, stderr: []string{"-batch must be at least 1"}},
		{name: "submit bad url", args: []string{"submit", "-url", "ftp://x", "-chain", "c", f.records}, code: exitUsage, stderr: []string{"-url:"}},
		{name: "submit unreadable file", args: []string{"submit", "-url", f.url, "-chain", "c", missing}, code: exitFailure, stderr: []string{"no such file"}},
		{name: "submit unreachable", args: []string{"submit", "-url", f.down, "-timeout", "5s", "-chain", "c", f.records}, code: exitFailure,
			stderr: []string{"connection refused", "0 record(s) accepted before the error"}},
		{name: "submit refused record", args: []string{"submit", "-url", f.url, "-chain", "wsp_refused", f.badRecord}, code: exitBroken,
			stderr: []string{"number_out_of_range", "0 record(s) accepted before the refusal"}},
		{name: "submit help", args: []string{"submit", "-h"}, code: 0, stdout: []string{"Usage: evident submit"}, cleanOE: true},
		{name: "import missing file arg", args: []string{"import", "-chain", "c"}, code: exitUsage, stderr: []string{"import: missing FILE argument"}},
		{name: "import unreachable", args: []string{"import", "-url", f.down, "-timeout", "5s", "-chain", "c", auditDump}, code: exitFailure, stderr: []string{"connection refused"}},
		{name: "seal missing chain", args: []string{"seal"}, code: exitUsage, stderr: []string{"seal: missing -chain"}},
		{name: "seal unreachable", args: []string{"seal", "-url", f.down, "-timeout", "5s", "-chain", "c"}, code: exitFailure, stderr: []string{"connection refused"}},
		{name: "seal no such chain", args: []string{"seal", "-url", f.url, "-chain", "wsp_none"}, code: exitFailure, stderr: []string{"no_such_chain"}},
		{name: "export missing chain", args: []string{"export", "-o", missing}, code: exitUsage, stderr: []string{"export: missing -chain"}},
		{name: "export two slices", args: []string{"export", "-chain", "c", "-task", "t", "-logical-id", "l"}, code: exitUsage, stderr: []string{"give one"}},
		{name: "export unreachable", args: []string{"export", "-url", f.down, "-timeout", "5s", "-chain", "c", "-o", missing}, code: exitFailure, stderr: []string{"connection refused"}},

		// replay
		{name: "replay missing bundle", args: []string{"replay"}, code: exitUsage, stderr: []string{"replay: missing BUNDLE argument"}},
		{name: "replay unknown task", args: []string{"replay", "-q", "--task", "tsk_nope", f.good}, code: exitUsage,
			stderr: []string{`-task "tsk_nope" is not in the chain wsp_exit; its tasks include `}},
		{name: "replay not a bundle", args: []string{"replay", f.notBundle}, code: exitFailure, stderr: []string{"not an evident-bundle/v1"}},

		// receipt, keys, cop-ledger, demo
		{name: "receipt no subcommand", args: []string{"receipt"}, code: exitUsage, stderr: []string{"missing subcommand (verify)"}},
		{name: "receipt help", args: []string{"receipt", "--help"}, code: 0, stdout: []string{"Usage: evident receipt verify"}, cleanOE: true},
		{name: "receipt missing key", args: []string{"receipt", "verify", "--transparent", f.records}, code: exitUsage, stderr: []string{"missing --key"}},
		{name: "receipt unreadable key", args: []string{"receipt", "verify", "--key", missing, "--transparent", f.records}, code: exitFailure, stderr: []string{"no such file"}},
		{name: "keys help", args: []string{"keys", "--help"}, code: 0, stdout: []string{"Usage: evident keys"}, cleanOE: true},
		{name: "keys generate help", args: []string{"keys", "generate", "--help"}, code: 0, stdout: []string{"Usage: evident keys", "-type"}, cleanOE: true},
		{name: "keys no subcommand", args: []string{"keys"}, code: exitUsage, stderr: []string{"missing subcommand"}},
		{name: "keys unknown subcommand", args: []string{"keys", "burn"}, code: exitUsage, stderr: []string{`unknown subcommand "burn"`}},
		{name: "keys show missing file arg", args: []string{"keys", "show"}, code: exitUsage, stderr: []string{"keys show: missing FILE argument"}},
		{name: "keys show no such file", args: []string{"keys", "show", missing}, code: exitFailure, stderr: []string{"no such file"}},
		{name: "keys generate missing -o", args: []string{"keys", "generate"}, code: exitUsage, stderr: []string{"missing -o FILE"}},
		{name: "keys generate bad type", args: []string{"keys", "generate", "-type", "rsa", "-o", filepath.Join(work, "k.pem")}, code: exitUsage, stderr: []string{"-type"}},
		{name: "cop-ledger help", args: []string{"cop-ledger", "--help"}, code: 0, stdout: []string{"Usage: evident cop-ledger verify"}, cleanOE: true},
		{name: "cop-ledger missing ledger", args: []string{"cop-ledger", "verify"}, code: exitUsage, stderr: []string{"missing LEDGER argument"}},
		{name: "cop-ledger missing key", args: []string{"cop-ledger", "verify", f.records}, code: exitUsage, stderr: []string{"missing --key"}},
		{name: "demo extra argument", args: []string{"demo", "now"}, code: exitUsage, stderr: []string{"unexpected argument"}},

		// the service and the witness: usage errors are 64, help is 0 on standard output
		{name: "evidentd help", prog: "evidentd", args: []string{"--help"}, code: 0, stdout: []string{"Usage: evidentd"}, cleanOE: true},
		{name: "evidentd unknown flag", prog: "evidentd", args: []string{"--nope"}, code: exitUsage, stderr: []string{"flag provided but not defined: -nope"}},
		{name: "evidentd argument", prog: "evidentd", args: []string{"serve"}, code: exitUsage, stderr: []string{"unexpected arguments: serve"}},
		{name: "evidentd bad duration", prog: "evidentd", args: []string{"-checkpoint-interval", "fast"}, code: exitUsage, stderr: []string{"-checkpoint-interval"}},
		// misbehaviour check: 1 when the log signed two histories, 0 when the file proves nothing
		{name: "misbehaviour proven", args: []string{"misbehaviour", "check", fork, "--log-key", goldenKey}, code: exitBroken, stdout: []string{"PROVEN: the log signed two histories"}, cleanOE: true},
		{name: "misbehaviour not proven", args: []string{"misbehaviour", "check", fork, "--log-key", filepath.Join(proofs, "impostor.vkey")}, code: exitVerified, stdout: []string{"NOT PROVEN: "}, cleanOE: true},
		{name: "misbehaviour no key", args: []string{"misbehaviour", "check", fork}, code: exitUsage, stderr: []string{"no log key pinned"}},

		{name: "evidentd bad environment", prog: "evidentd", env: []string{"EVIDENT_MAX_BODY=64MB"}, code: exitUsage, stderr: []string{"EVIDENT_MAX_BODY"}},
		{name: "witness help", prog: "evident-witness", args: []string{"-help"}, code: 0, stdout: []string{"Usage: evident-witness"}, cleanOE: true},
		{name: "witness unknown flag", prog: "evident-witness", args: []string{"--nope"}, code: exitUsage, stderr: []string{"flag provided but not defined: -nope"}},
		{name: "witness bad log format", prog: "evident-witness", args: []string{"-log-format", "xml"}, code: exitUsage, stderr: []string{"-log-format must be text or json"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prog := c.prog
			if prog == "" {
				prog = "evident"
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(bin, prog), c.args...)
			cmd.Dir = t.TempDir() // nothing may land in the package directory
			cmd.Env = append(os.Environ(), c.env...)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			code := exitCode(cmd)
			if code != c.code {
				t.Fatalf("%s %q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", prog, c.args, code, c.code, out.String(), errb.String())
			}
			for _, s := range c.stdout {
				if !strings.Contains(out.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, out.String())
				}
			}
			for _, s := range c.stderr {
				if !strings.Contains(errb.String(), s) {
					t.Errorf("stderr lacks %q:\n%s", s, errb.String())
				}
			}
			for _, s := range c.nostd {
				if strings.Contains(errb.String(), s) {
					t.Errorf("stderr holds %q:\n%s", s, errb.String())
				}
			}
			if c.cleanOE && errb.Len() > 0 {
				t.Errorf("stderr is not empty:\n%s", errb.String())
			}
			if entries, _ := os.ReadDir(cmd.Dir); len(entries) > 0 {
				t.Errorf("left %d file(s) in the working directory", len(entries))
			}
		})
	}
}

func write(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// mustCLI runs evident in-process and fails the test unless it exits 0.
func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := cli(args...)
	if code != 0 {
		t.Fatalf("evident %q: exit %d\n%s\n%s", args, code, out, errs)
	}
	return out
}

// tamper copies a zip bundle with one file's text replaced (the manifest's digests kept).
func tamper(t *testing.T, src, name, old, new string) []byte {
	t.Helper()
	replaced := false
	out := rezip(t, src, func(n string, b []byte) [][]byte {
		if n == name {
			replaced = bytes.Contains(b, []byte(old))
			b = bytes.ReplaceAll(b, []byte(old), []byte(new))
		}
		return [][]byte{b}
	})
	if !replaced {
		t.Fatalf("%s holds no %q", name, old)
	}
	return out
}

// rezip copies a zip bundle entry by entry with archive/zip, writing under each entry's name
// the copies edit returns for its content (none drops it, two write the name twice).
func rezip(t *testing.T, src string, edit func(name string, data []byte) [][]byte) []byte {
	t.Helper()
	zr, err := zip.OpenReader(src)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range edit(f.Name, b) {
			w, err := zw.Create(f.Name)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(c)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
