package verifier_test

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/verifier"
	"github.com/evident-log/evident/verifier/internal/testbundle"
	"golang.org/x/mod/sumdb/note"
)

// TestPinnedTrust: with the operator's keys pinned, the genuine bundle verifies and a bundle
// carrying other keys (a forger who re-signed everything) is broken at the trust check.
func TestPinnedTrust(t *testing.T) {
	b := testbundle.Build(t, testbundle.Options{Entries: 10})
	vkey := strings.TrimSpace(string(b.Files[bundle.LogKeyFile]))
	_, otherVkey, err := note.GenerateKey(rand.Reader, b.Origin)
	if err != nil {
		t.Fatal(err)
	}
	otherPub, _, _ := ed25519.GenerateKey(rand.Reader)
	for _, tc := range []struct {
		name    string
		o       verifier.Options
		verdict verifier.Status
		failing verifier.CheckName
	}{
		{"nothing pinned", verifier.Options{}, verifier.Verified, ""},
		{"right keys pinned", verifier.Options{TrustedLogKeys: []string{otherVkey, vkey}, TrustedIssuers: []crypto.PublicKey{otherPub, b.Issuer.Public()}}, verifier.Verified, ""},
		{"other log key pinned", verifier.Options{TrustedLogKeys: []string{otherVkey}}, verifier.Broken, "trust.log_key"},
		{"other issuer pinned", verifier.Options{TrustedIssuers: []crypto.PublicKey{otherPub}}, verifier.Broken, "trust.issuers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := verifier.Verify(context.Background(), b.Reader(t), tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != tc.verdict {
				t.Fatalf("verdict %s, want %s", rep.Verdict, tc.verdict)
			}
			if tc.failing == "" {
				return
			}
			for _, c := range rep.Checks {
				if c.Name == tc.failing {
					if c.Status != verifier.Broken || c.Code != verifier.CodeTrustNotPinned {
						t.Fatalf("%s: %s %s", c.Name, c.Status, c.Code)
					}
					return
				}
			}
			t.Fatalf("no %s check", tc.failing)
		})
	}
}
