package verifier_test

import (
	"strings"
	"testing"

	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/verifier"
	"github.com/evident-log/evident/verifier/internal/testbundle"
)

// TestCHAPBootstrap: a workspace.create signed with the key its sender's following join
// introduces is verified by that join (chap.bootstrap verified); one whose key never arrives
// leaves the chain broken under chap.bootstrap, although every record was admitted.
func TestCHAPBootstrap(t *testing.T) {
	for _, tc := range []struct {
		kid     string
		verdict verifier.Status
		status  verifier.Status
		code    verifier.Code
	}{
		{"k0-1", verifier.Verified, verifier.Verified, ""},
		{"k0-other", verifier.Broken, verifier.Broken, verifier.Code(chap.CodeBootstrapUnverified)},
	} {
		t.Run(tc.kid, func(t *testing.T) {
			b := testbundle.Build(t, testbundle.Options{Entries: 12, CreateKid: tc.kid})
			rep := verify(t, b.Reader(t))
			cs := checksNamed(rep, verifier.CheckCHAPBootstrap)
			if len(cs) != 1 {
				t.Fatalf("%d chap.bootstrap checks\n%s", len(cs), text(t, rep))
			}
			c := cs[0]
			if rep.Verdict != tc.verdict || c.Status != tc.status || c.Code != tc.code {
				t.Fatalf("verdict %s, check %+v\n%s", rep.Verdict, c, text(t, rep))
			}
			if tc.code != "" && (c.Where != "seq 0" || !strings.Contains(c.Detail, "k0-other")) {
				t.Fatalf("check %+v", c)
			}
			if cv := rep.Chains[0].Coverage; cv.EntriesTotal != 13 {
				t.Fatalf("coverage %+v", cv)
			}
		})
	}
}
