package daemon

import (
	"context"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/ledger/profile/chap/scenario"
	"github.com/evident-log/evident/trustfile"
	"github.com/evident-log/evident/verifier"
)

// fetchTrust is the trust file the evidentd at base publishes, fetched as a user would.
func fetchTrust(t testing.TB, base string) *trustfile.File { return testinfra.FetchTrust(t, base) }

// TestTrustPublished: evidentd serves its log key at /log/vkey exactly as keys/log.vkey in
// its data directory holds it, and a trust file naming that key, the keys of
// /.well-known/scitt-keys and the log origin.
func TestTrustPublished(t *testing.T) {
	dir := t.TempDir()
	_, srv := start(t, dir)
	code, vkey := get(t, srv.URL+"/log/vkey")
	onDisk, err := os.ReadFile(filepath.Join(dir, "keys", "log.vkey"))
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusOK || strings.TrimSpace(string(vkey)) != strings.TrimSpace(string(onDisk)) {
		t.Fatalf("GET /log/vkey: %d %q, keys/log.vkey holds %q", code, vkey, onDisk)
	}
	tf := fetchTrust(t, srv.URL)
	if tf.LogKeys[0] != strings.TrimSpace(string(onDisk)) || !strings.HasPrefix(tf.LogKeys[0], tf.Origin+"+") {
		t.Fatalf("trust file log keys %q, origin %q", tf.LogKeys, tf.Origin)
	}
	published := serviceKeys(t, srv.URL)
	if len(tf.IssuerKeys) != len(published) {
		t.Fatalf("trust file has %d issuer keys, scitt-keys %d", len(tf.IssuerKeys), len(published))
	}
	for _, k := range tf.IssuerKeys {
		kid, _ := hex.DecodeString(k.KID)
		if _, ok := published[string(kid)]; !ok {
			t.Fatalf("issuer key %s of the trust file is not in scitt-keys", k.KID)
		}
	}
	if tf.WitnessPolicy != "" {
		t.Fatalf("a log without witnesses publishes witness policy %q", tf.WitnessPolicy)
	}
}

// TestVerifyNeedsPinnedTrust: a bundle of one evidentd is verified with its own published trust
// file pinned, not evaluated with nothing pinned (trust_not_pinned, with the hint), and broken
// against another evidentd's trust file: the other service signed everything under keys of
// its own, the way a forger re-signs a bundle end to end.
func TestVerifyNeedsPinnedTrust(t *testing.T) {
	_, srv := start(t, t.TempDir())
	_, other := start(t, t.TempDir())
	const ws = "wsp_pin"
	for _, base := range []string{srv.URL, other.URL} {
		b, _, err := scenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range b.Records() {
			if code, body := post(t, base+"/v1/chains/"+ws+"/entries", "application/json", rec); code != http.StatusCreated {
				t.Fatalf("ingest: %d %s", code, body)
			}
		}
		if code, body := post(t, base+"/v1/chains/"+ws+"/seal", "", nil); code != http.StatusCreated {
			t.Fatalf("seal: %d %s", code, body)
		}
	}
	code, zipBytes := get(t, srv.URL+"/v1/export?chain="+ws)
	if code != http.StatusOK {
		t.Fatalf("export: %d", code)
	}
	for _, tc := range []struct {
		name    string
		trust   *trustfile.File
		verdict verifier.Status
		status  verifier.Status
		code    verifier.Code
	}{
		{"its own trust file", fetchTrust(t, srv.URL), verifier.Verified, verifier.Verified, ""},
		{"nothing pinned", nil, verifier.NotEvaluated, verifier.NotEvaluated, verifier.CodeTrustNotPinned},
		{"another service's trust file", fetchTrust(t, other.URL), verifier.Broken, verifier.Broken, verifier.CodeTrustMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := bundle.OpenZipBytes(zipBytes)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := verifier.Verify(context.Background(), r, verifier.Options{Trust: tc.trust})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != tc.verdict {
				t.Fatalf("verdict %s, want %s\n%s", rep.Verdict, tc.verdict, reportText(rep))
			}
			for _, name := range []verifier.CheckName{verifier.CheckTrustLogKey, verifier.CheckTrustIssuers} {
				if c := findCheck(rep, name, tc.status); c == nil || c.Code != tc.code {
					t.Fatalf("%s: want %s %s\n%s", name, tc.status, tc.code, reportText(rep))
				}
			}
			if (tc.code == verifier.CodeTrustNotPinned) != strings.Contains(rep.Hint, "--trust") {
				t.Fatalf("hint %q", rep.Hint)
			}
		})
	}
}
