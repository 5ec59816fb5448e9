package daemon

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/misbehaviour"
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
		b, _, err := chapscenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
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

// TestMLDSAKeyPublished: GET /log/mldsa.vkey answers the ML-DSA-44 key of keys/log-mldsa.vkey,
// the same key the trust file lists first under log_mldsa_keys, and one that verifies the
// post-quantum signature of the checkpoint the log serves; a log without a post-quantum key
// answers 404 not_found as a problem detail, and its trust file lists no such key.
func TestMLDSAKeyPublished(t *testing.T) {
	for _, pq := range []bool{false, true} {
		t.Run(fmt.Sprintf("post-quantum=%v", pq), func(t *testing.T) {
			dir := t.TempDir()
			d, err := Open(context.Background(), Config{Data: dir, CheckpointInterval: 100 * time.Millisecond, PostQuantum: pq,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			srv := serveUntilCleanup(t, d)
			resp, body := call(t, http.MethodGet, srv.URL+"/log/mldsa.vkey")
			tf := fetchTrust(t, srv.URL)
			if !pq {
				var p api.Problem
				if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != api.MediaProblem ||
					json.Unmarshal(body, &p) != nil || p.Code != api.CodeNotFound || !strings.Contains(p.Detail, "post-quantum") {
					t.Fatalf("GET /log/mldsa.vkey without a post-quantum key: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
				}
				if len(tf.LogMLDSAKeys) != 0 {
					t.Fatalf("trust file of a log without a post-quantum key lists %q", tf.LogMLDSAKeys)
				}
				return
			}
			served := strings.TrimSpace(string(body))
			onDisk, err := os.ReadFile(filepath.Join(dir, "keys", log.MLDSAVerifierKeyFile))
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") ||
				served != strings.TrimSpace(string(onDisk)) || !trustfile.IsMLDSA44(served) {
				t.Fatalf("GET /log/mldsa.vkey: %d %q, keys/%s holds %q", resp.StatusCode, body, log.MLDSAVerifierKeyFile, onDisk)
			}
			if len(tf.LogMLDSAKeys) == 0 || tf.LogMLDSAKeys[0] != served {
				t.Fatalf("trust file log_mldsa_keys %q, GET /log/mldsa.vkey %q", tf.LogMLDSAKeys, served)
			}
			vs, err := misbehaviour.Verifiers([]string{served})
			if err != nil {
				t.Fatal(err)
			}
			code, cp := get(t, srv.URL+"/log/checkpoint")
			if _, err := note.Open(cp, note.VerifierList(vs...)); code != http.StatusOK || err != nil {
				t.Fatalf("the served checkpoint (%d) does not verify with the served ML-DSA-44 key: %v\n%s", code, err, cp)
			}
		})
	}
}
