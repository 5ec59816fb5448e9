package verifier_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/ledger/profile/chieflab"
	"github.com/evident-log/evident/ledger/profile/cop"
	"github.com/evident-log/evident/ledger/profile/owp"
	"github.com/evident-log/evident/verifier"
)

// TestTypedCheckJSON holds the typed Check.Name and Check.Code to the report format: they
// marshal as plain JSON strings, byte for byte, and unmarshal back to the same typed values.
func TestTypedCheckJSON(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check verifier.Check
		json  string
		text  string
	}{
		{"verifier code",
			verifier.Check{Name: verifier.CheckChainEntries, Chain: "c1", Status: verifier.Broken, Code: verifier.CodeEntryLink, Detail: "link differs", Where: "seq 3"},
			`{"name":"chain.entries","chain":"c1","status":"broken","code":"entry_link_mismatch","detail":"link differs","where":"seq 3"}`,
			"chain.entries [c1] @ seq 3 (entry_link_mismatch): link differs"},
		{"ledger code",
			verifier.Check{Name: verifier.CheckChainClosure, Status: verifier.Broken, Code: ledger.CodeAfterClosure, Detail: "d"},
			`{"name":"chain.closure","status":"broken","code":"events_after_closure","detail":"d"}`,
			"chain.closure (events_after_closure): d"},
		{"profile check, no code",
			verifier.Check{Name: cop.CheckLedger, Status: verifier.Verified, Detail: "ok"},
			`{"name":"cop.ledger","status":"verified","detail":"ok"}`,
			"cop.ledger: ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.check)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.json {
				t.Errorf("JSON\n got %s\nwant %s", got, tc.json)
			}
			var back verifier.Check
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			if back.Name != tc.check.Name || back.Code != tc.check.Code {
				t.Errorf("round trip: name %q code %q, want %q %q", back.Name, back.Code, tc.check.Name, tc.check.Code)
			}
			var buf bytes.Buffer
			rep := verifier.Report{Format: verifier.ReportFormat, Verdict: tc.check.Status, Checks: []verifier.Check{tc.check}}
			if err := rep.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(buf.String(), tc.text) {
				t.Errorf("text report lacks %q:\n%s", tc.text, buf.String())
			}
		})
	}
}

// TestProfileCheckNamesAreVerifierNames keeps the check names the verifier lists for
// profiles equal to the ones the profiles report under.
func TestProfileCheckNamesAreVerifierNames(t *testing.T) {
	for _, tc := range []struct {
		verifier verifier.CheckName
		profile  ledger.CheckName
	}{
		{verifier.CheckCHAPBootstrap, chap.CheckBootstrap},
		{verifier.CheckCOPLedger, cop.CheckLedger},
		{verifier.CheckCOPParents, cop.CheckParents},
		{verifier.CheckOWPProvenance, owp.CheckProvenance},
		{verifier.CheckChiefLabApproval, chieflab.CheckApproval},
		{verifier.CheckChiefLabIdempotency, chieflab.CheckIdempotency},
		{verifier.CheckChiefLabWorkspace, chieflab.CheckWorkspace},
		{verifier.CheckChiefLabOperator, chieflab.CheckOperator},
	} {
		if tc.verifier != tc.profile {
			t.Errorf("verifier lists %q, the profile reports %q", tc.verifier, tc.profile)
		}
	}
}
