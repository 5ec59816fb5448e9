package verifier_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/evident-log/evident/trustfile"
	"github.com/evident-log/evident/verifier"
	"github.com/evident-log/evident/verifier/internal/testbundle"
	"golang.org/x/mod/sumdb/note"
)

// TestPinnedTrust: a verdict is verified only with the operator's keys pinned. Unpinned, the
// trust.* checks are not evaluated (trust_not_pinned), the report says how to pin and the
// other checks still run; a bundle re-signed end to end under a forger's keys is broken
// against the genuine trust file; pinned keys the bundle does not carry are broken
// (trust_mismatch).
func TestPinnedTrust(t *testing.T) {
	b := testbundle.Build(t, testbundle.Options{Entries: 10})
	forged := testbundle.Build(t, testbundle.Options{Entries: 10, Service: "forger"})
	tampered := b.Clone()
	lines := tampered.Lines()
	lines[5] = bytes.Replace(lines[5], []byte(`"seq":5`), []byte(`"seq":6`), 1)
	tampered.SetLines(lines)
	tampered.Digests()

	trust := testbundle.Trust(t)
	issuers, err := trust.IssuerPublicKeys()
	if err != nil {
		t.Fatal(err)
	}
	_, otherVkey, err := note.GenerateKey(rand.Reader, b.Origin)
	if err != nil {
		t.Fatal(err)
	}
	otherPub, _, _ := ed25519.GenerateKey(rand.Reader)
	type want struct {
		name   verifier.CheckName
		status verifier.Status
		code   verifier.Code
	}
	for _, tc := range []struct {
		name    string
		b       *testbundle.Bundle
		o       verifier.Options
		verdict verifier.Status
		checks  []want
	}{
		{"nothing pinned", b, verifier.Options{}, verifier.NotEvaluated, []want{
			{"trust.log_key", verifier.NotEvaluated, verifier.CodeTrustNotPinned},
			{"trust.issuers", verifier.NotEvaluated, verifier.CodeTrustNotPinned},
			{"seals", verifier.Verified, ""}}},
		{"nothing pinned, broken stays broken", tampered, verifier.Options{}, verifier.Broken, []want{
			{"trust.log_key", verifier.NotEvaluated, verifier.CodeTrustNotPinned},
			{"chain.entries", verifier.Broken, verifier.CodeEntrySeq}}},
		{"forged, nothing pinned", forged, verifier.Options{}, verifier.NotEvaluated, []want{
			{"trust.log_key", verifier.NotEvaluated, verifier.CodeTrustNotPinned}}},
		{"forged, the operator's trust file pinned", forged, verifier.Options{Trust: trust}, verifier.Broken, []want{
			{"trust.log_key", verifier.Broken, verifier.CodeTrustMismatch},
			{"trust.issuers", verifier.Broken, verifier.CodeTrustMismatch}}},
		{"forged, the forger's trust file pinned", forged, verifier.Options{Trust: testbundle.TrustOf(t, "forger")}, verifier.Verified, []want{
			{"trust.log_key", verifier.Verified, ""}}},
		{"trust file pinned", b, verifier.Options{Trust: trust}, verifier.Verified, []want{
			{"trust.log_key", verifier.Verified, ""},
			{"trust.issuers", verifier.Verified, ""}}},
		{"keys pinned one by one", b, verifier.Options{TrustedLogKeys: []string{otherVkey, trust.LogKeys[0]}, TrustedIssuers: []crypto.PublicKey{otherPub, issuers[0]}}, verifier.Verified, nil},
		{"log key pinned, issuers not", b, verifier.Options{TrustedLogKeys: trust.LogKeys}, verifier.NotEvaluated, []want{
			{"trust.log_key", verifier.Verified, ""},
			{"trust.issuers", verifier.NotEvaluated, verifier.CodeTrustNotPinned}}},
		{"other log key pinned", b, verifier.Options{TrustedLogKeys: []string{otherVkey}}, verifier.Broken, []want{
			{"trust.log_key", verifier.Broken, verifier.CodeTrustMismatch}}},
		{"other issuer pinned", b, verifier.Options{TrustedIssuers: []crypto.PublicKey{otherPub}}, verifier.Broken, []want{
			{"trust.issuers", verifier.Broken, verifier.CodeTrustMismatch}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := verifier.Verify(context.Background(), tc.b.Reader(t), tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != tc.verdict {
				t.Fatalf("verdict %s, want %s\n%s", rep.Verdict, tc.verdict, text(t, rep))
			}
			for _, w := range tc.checks {
				one(t, rep, w.name, w.status, w.code)
			}
			unpinned := false
			for _, c := range rep.Checks {
				unpinned = unpinned || c.Code == verifier.CodeTrustNotPinned
			}
			if hinted := strings.Contains(rep.Hint, "evident trust fetch"); hinted != unpinned {
				t.Fatalf("hint %q with a trust_not_pinned check: %v", rep.Hint, unpinned)
			}
			if !unpinned {
				return
			}
			if out := text(t, rep); !strings.Contains(strings.SplitN(out, "bundle:", 2)[0], "--trust FILE") {
				t.Errorf("the text banner does not say how to pin:\n%s", out)
			}
			var js bytes.Buffer
			if err := rep.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			var doc struct{ Hint string }
			if err := json.Unmarshal(js.Bytes(), &doc); err != nil || !strings.Contains(doc.Hint, "--trust") {
				t.Errorf("JSON hint %q (%v)", doc.Hint, err)
			}
		})
	}
}

// TestPinnedTrustFileInvalid: a trust file that does not pass its own check is the caller's
// error, not a verdict on the bundle.
func TestPinnedTrustFileInvalid(t *testing.T) {
	b := testbundle.Build(t, testbundle.Options{Entries: 4, Participants: 2})
	bad := testbundle.Trust(t)
	bad.Origin = "elsewhere.example/log"
	_, err := verifier.Verify(context.Background(), b.Reader(t), verifier.Options{Trust: bad})
	if !errors.Is(err, trustfile.ErrLogKey) {
		t.Fatalf("Verify with an invalid trust file: %v", err)
	}
}
