package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/trustfile"
)

// pinTrust saves the trust file the evidentd at base publishes with evident trust fetch, as
// a user would, and returns its path.
func pinTrust(t *testing.T, base string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "operator.trust.json")
	if code, out, errs := cli("trust", "fetch", base, "-o", path, "-timeout", "10s"); code != 0 {
		t.Fatalf("trust fetch: %d\n%s\n%s", code, out, errs)
	}
	return path
}

// TestTrustFetch drives evident trust fetch against a real evidentd on loopback: it saves
// the published trust file under a name derived from the origin, prints what to compare,
// accepts the service URL or the trust file's own URL, keeps a saved file that changed
// unless told otherwise, and refuses what is not a trust file without writing anything.
func TestTrustFetch(t *testing.T) {
	srv := startDaemon(t)
	other := startDaemon(t)
	dir := t.TempDir()
	t.Chdir(dir)

	code, out, errs := cli("trust", "fetch", srv.URL)
	if code != 0 {
		t.Fatalf("trust fetch: %d\n%s\n%s", code, out, errs)
	}
	saved, err := filepath.Glob(filepath.Join(dir, "*.trust.json"))
	if err != nil || len(saved) != 1 {
		t.Fatalf("saved files %v (%v)", saved, err)
	}
	raw, _ := os.ReadFile(saved[0])
	tf, err := trustfile.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(saved[0]) != trustFileName(tf.Origin) || strings.ContainsAny(filepath.Base(saved[0]), "/ ") {
		t.Fatalf("saved as %s for origin %s", saved[0], tf.Origin)
	}
	for _, want := range []string{"origin " + tf.Origin, "log key " + strings.Join(strings.Split(tf.LogKeys[0], "+")[:2], "+"), "issuer key kid " + tf.IssuerKeys[0].KID, "witnesses: none", "--trust " + trustFileName(tf.Origin)} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	for _, tc := range []struct {
		name string
		args []string
		code int
		errs string
	}{
		{"again: unchanged", []string{srv.URL}, 0, ""},
		{"the full URL", []string{srv.URL + "/.well-known/evident-trust", "-o", filepath.Join(dir, "full.json")}, 0, ""},
		{"another operator's file over the saved one", []string{other.URL, "-o", saved[0]}, exitFailure, "holds a different trust file"},
		{"not a trust file", []string{srv.URL + "/log/checkpoint.json", "-o", filepath.Join(dir, "bad.json")}, exitFailure, "404"},
		{"not a URL", []string{"ftp://example.org"}, exitUsage, "not an http(s) URL"},
		{"no URL", nil, exitUsage, "URL of the service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := cli(append([]string{"trust", "fetch"}, tc.args...)...)
			if code != tc.code || !strings.Contains(errs, tc.errs) {
				t.Fatalf("exit %d, want %d; stderr %q, want %q\n%s", code, tc.code, errs, tc.errs, out)
			}
		})
	}
	if b, _ := os.ReadFile(saved[0]); !bytes.Equal(b, raw) {
		t.Fatal("a refused fetch replaced the saved trust file")
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.json")); !os.IsNotExist(err) {
		t.Fatalf("a refused fetch wrote a file: %v", err)
	}
	if code, _, errs := cli("trust", "fetch", other.URL, "-o", saved[0], "-force"); code != 0 {
		t.Fatalf("-force: %d %s", code, errs)
	}

	// A server that answers with something that is not a trust file.
	junk := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"format":"evident-trust/v1","origin":"x"}`))
	}))
	defer junk.Close()
	if code, _, errs := cli("trust", "fetch", junk.URL, "-o", filepath.Join(dir, "junk.json")); code != exitFailure || !strings.Contains(errs, "log_keys") {
		t.Fatalf("junk: %d %s", code, errs)
	}
	// A server that never answers: bounded by -timeout.
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer stall.Close()
	start := time.Now()
	if code, _, errs := cli("trust", "fetch", stall.URL, "-timeout", "300ms", "-o", filepath.Join(dir, "stall.json")); code != exitFailure || !strings.Contains(errs, "deadline") {
		t.Fatalf("stall: %d %s", code, errs)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("-timeout 300ms took %v", d)
	}
}

// TestVerifyPinsTrust drives the evident binary as a user would: a bundle of a real evidentd
// is not evaluated (exit 2) unpinned, with the banner and JSON report saying how to pin;
// verified (exit 0) with the operator's trust file fetched by evident trust fetch; and broken
// (exit 1) against another operator's trust file, as a bundle re-signed end to end under other
// keys would be. --log-key and --issuer-keys combine with --trust.
func TestVerifyPinsTrust(t *testing.T) {
	bin := buildTools(t)
	evident := filepath.Join(bin, "evident")
	srv := startDaemon(t)
	other := startDaemon(t)
	dir := t.TempDir()
	const ws = "wsp_pin"
	b, _, err := chapscenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	recs := filepath.Join(dir, "recs.jsonl")
	os.WriteFile(recs, bytes.Join(b.Records(), []byte("\n")), 0o644)
	zip := filepath.Join(dir, "case.zip")
	for _, args := range [][]string{
		{"submit", "-url", srv.URL, "-chain", ws, recs},
		{"seal", "-url", srv.URL, "-chain", ws},
		{"export", "-url", srv.URL, "-chain", ws, "-o", zip},
	} {
		if code, out, errs := run1(t, evident, args...); code != 0 {
			t.Fatalf("%v: %d\n%s\n%s", args, code, out, errs)
		}
	}
	trust := filepath.Join(dir, "operator.trust.json")
	if code, out, errs := run1(t, evident, "trust", "fetch", srv.URL, "-o", trust); code != 0 {
		t.Fatalf("trust fetch: %d\n%s\n%s", code, out, errs)
	}
	otherTrust := filepath.Join(dir, "other.trust.json")
	if code, _, errs := run1(t, evident, "trust", "fetch", other.URL, "-o", otherTrust); code != 0 {
		t.Fatalf("trust fetch: %d %s", code, errs)
	}
	vkey := filepath.Join(dir, "log.vkey")
	resp, err := http.Get(srv.URL + "/log/vkey")
	if err != nil {
		t.Fatal(err)
	}
	var vb bytes.Buffer
	vb.ReadFrom(resp.Body)
	resp.Body.Close()
	os.WriteFile(vkey, vb.Bytes(), 0o644)

	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"unpinned", nil, exitNotEvaluated, []string{"VERDICT: NOT_EVALUATED", "evident trust fetch URL, then evident verify --trust FILE", "(trust_not_pinned)"}},
		{"pinned", []string{"--trust", trust}, exitVerified, []string{"VERDICT: VERIFIED", "is the pinned key", "pinned"}},
		{"another operator's trust", []string{"--trust", otherTrust}, exitBroken, []string{"VERDICT: BROKEN", "(trust_mismatch)"}},
		{"log key only", []string{"--log-key", vkey}, exitNotEvaluated, []string{"is the pinned key", "trust.issuers @ trust/issuers.cbor (trust_not_pinned)"}},
		{"trust and the right log key", []string{"--trust", trust, "--log-key", vkey}, exitVerified, []string{"VERDICT: VERIFIED"}},
		{"other trust, right log key", []string{"--trust", otherTrust, "--log-key", vkey}, exitBroken, []string{"trust.issuers @ trust/issuers.cbor (trust_mismatch)"}},
		{"a trust file that is not one", []string{"--trust", recs}, exitUsage, []string{"--trust:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run1(t, evident, append(append([]string{"verify", "-q"}, tc.args...), zip)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, out, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(out+errs, w) {
					t.Errorf("output lacks %q:\n%s\n%s", w, out, errs)
				}
			}
		})
	}
	// The JSON report carries the hint and keeps trust_not_pinned on the trust.* checks.
	code, out, _ := run1(t, evident, "verify", "-q", "-format", "json", zip)
	var rep struct {
		Verdict string
		Hint    string
		Checks  []struct{ Name, Status, Code string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitNotEvaluated || rep.Verdict != "not_evaluated" || !strings.Contains(rep.Hint, "--trust") {
		t.Fatalf("json: %d %v %+v", code, err, rep)
	}
	unpinned := map[string]bool{}
	for _, c := range rep.Checks {
		if c.Code == "trust_not_pinned" && c.Status == "not_evaluated" {
			unpinned[c.Name] = true
		}
	}
	if !unpinned["trust.log_key"] || !unpinned["trust.issuers"] {
		t.Fatalf("unpinned checks %v", unpinned)
	}
}

// run1 runs the evident binary: exit code, standard output, standard error.
func run1(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	return runIn(t, "", bin, args...)
}
