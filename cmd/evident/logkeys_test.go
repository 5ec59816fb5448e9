package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/internal/evidentd/daemon"
	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/trustfile"
)

// testTrustFile writes a trust file of origin pinning the given log keys (Ed25519 first,
// ML-DSA-44 after) and a witness policy, with one real issuer key.
func testTrustFile(t *testing.T, origin string, ed, pq []string, policy string) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ik, err := trustfile.IssuerKeyOf(k.Public(), "2026-05-17T09:00:00Z", "")
	if err != nil {
		t.Fatal(err)
	}
	f := &trustfile.File{Format: trustfile.Format, Origin: origin, LogKeys: ed, LogMLDSAKeys: pq, IssuerKeys: []trustfile.IssuerKey{ik}, WitnessPolicy: policy}
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return writeTemp(t, "operator.trust.json", b)
}

// collidingA and collidingB are two Ed25519 vkeys of one name and key hash (found by a
// birthday search over public keys: the hash is 32 bits).
const (
	collidingA = "log.example.org/evident+62f6952f+AREhdKxYHUvge862xRccUjjnsHSbrMaPCTq+vmwk8Hbt"
	collidingB = "log.example.org/evident+62f6952f+AVD5roAZ9YzXBydWjdQWKr4fms7pmTy2RrsVlW3mSz4O"
)

// TestReadVKeys: a --log-key value is a vkey of either type, a file holding vkeys, or a
// trust file (all its log keys); anything else is refused with the reason.
func TestReadVKeys(t *testing.T) {
	const origin = "log.example/keys"
	_, ed, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		t.Fatal(err)
	}
	_, pq, err := log.GenerateMLDSAKey(origin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	trust := testTrustFile(t, origin, []string{ed}, []string{pq}, "")
	for _, tc := range []struct {
		name   string
		values []string
		want   []string
		err    string
	}{
		{name: "an Ed25519 vkey", values: []string{ed}, want: []string{ed}},
		{name: "an ML-DSA-44 vkey", values: []string{pq}, want: []string{pq}},
		{name: "a file holding one", values: []string{writeTemp(t, "log-mldsa.vkey", []byte(pq+"\n"))}, want: []string{pq}},
		{name: "a file holding both", values: []string{writeTemp(t, "both.vkey", []byte(ed+"\n"+pq+"\n"))}, want: []string{ed, pq}},
		{name: "a trust file", values: []string{trust}, want: []string{ed, pq}},
		{name: "each key once", values: []string{ed, trust, pq}, want: []string{ed, pq}},
		{name: "none", values: nil, want: nil},
		{name: "a name of no file that is no vkey", values: []string{filepath.Join(dir, "missing.vkey")}, err: "neither a vkey"},
		{name: "a malformed vkey", values: []string{origin + "+00000000+AQ=="}, err: "neither a vkey"},
		{name: "a file holding no key", values: []string{writeTemp(t, "empty.vkey", []byte("\n\n"))}, err: "no vkey in the file"},
		{name: "a file holding a malformed key", values: []string{writeTemp(t, "bad.vkey", []byte(ed+"\nnot a key\n"))}, err: "bad.vkey"},
		{name: "a malformed trust file", values: []string{writeTemp(t, "bad.trust.json", []byte(`{"format":"evident-trust/v1"}`))}, err: "trust file"},
		{name: "a directory", values: []string{dir}, err: "is a directory"},
		{name: "two keys of one name and key hash", values: []string{collidingA, writeTemp(t, "other.vkey", []byte(collidingB+"\n"))}, err: "one name and key hash"},
		{name: "a file too large", values: []string{writeTemp(t, "big", bytes.Repeat([]byte("a"), maxKeyFile+1))}, err: "not a key or a trust file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readVKeys(tc.values)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("readVKeys: %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("readVKeys: %q %v, want %q", got, err, tc.want)
			}
		})
	}
}

// TestVerifyPinsPostQuantumKey exports a bundle from a real evidentd that signs checkpoints
// with Ed25519 and ML-DSA-44, and verifies it with the post-quantum key pinned by --log-key
// as a vkey file, as a trust file, and as another log's key.
func TestVerifyPinsPostQuantumKey(t *testing.T) {
	data := t.TempDir()
	srv := startDaemonWith(t, daemon.Config{Data: data, PostQuantum: true})
	dir := t.TempDir()
	const ws = "wsp_pq"
	recs := triageFile(t, dir, ws)
	zip := filepath.Join(dir, "case.zip")
	mustCLI(t, "submit", "-url", srv.URL, "-chain", ws, recs)
	mustCLI(t, "seal", "-url", srv.URL, "-chain", ws)
	mustCLI(t, "export", "-url", srv.URL, "-chain", ws, "-o", zip)
	trust := filepath.Join(dir, "operator.trust.json")
	mustCLI(t, "trust", "fetch", srv.URL, "-o", trust)
	pqFile := filepath.Join(data, "keys", log.MLDSAVerifierKeyFile)
	pq, err := os.ReadFile(pqFile)
	if err != nil {
		t.Fatal(err)
	}
	_, otherPQ, err := log.GenerateMLDSAKey(strings.SplitN(string(pq), "+", 2)[0])
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		keys   []string
		code   int
		checks map[string]string // check name → status
	}{
		{name: "the ML-DSA-44 vkey file alone", keys: []string{pqFile}, code: exitNotEvaluated,
			checks: map[string]string{"trust.log_pq_key": "verified", "log.pq_signature": "verified", "trust.log_key": "not_evaluated"}},
		{name: "the trust file as --log-key", keys: []string{trust}, code: exitNotEvaluated,
			checks: map[string]string{"trust.log_pq_key": "verified", "trust.log_key": "verified"}},
		{name: "another log's ML-DSA-44 key", keys: []string{otherPQ}, code: exitBroken,
			checks: map[string]string{"trust.log_pq_key": "broken"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"verify", "-q", "-format", "json"}
			for _, k := range tc.keys {
				args = append(args, "--log-key", k)
			}
			code, out, errs := cli(append(args, zip)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, out, errs)
			}
			var rep struct {
				Checks []struct{ Name, Status, Code string }
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, c := range rep.Checks {
				if _, ok := tc.checks[c.Name]; ok && (got[c.Name] == "" || got[c.Name] == "verified") {
					got[c.Name] = c.Status // the worst status of the check's rows
				}
			}
			for name, want := range tc.checks {
				if got[name] != want {
					t.Errorf("%s: %q, want %q", name, got[name], want)
				}
			}
		})
	}
}
