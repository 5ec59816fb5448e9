package verifier_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile"
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

// TestProfileCheckNamesAreVerifierNames: every check a served profile documents is one the
// verifier lists, after its own.
func TestProfileCheckNamesAreVerifierNames(t *testing.T) {
	names := verifier.CheckNames()
	own := verifier.OwnCheckNames()
	if !slices.Equal(names[:len(own)], own) {
		t.Fatalf("CheckNames does not start with the verifier's own")
	}
	for _, c := range profile.Default().Checks() {
		if !slices.Contains(names[len(own):], c.Name) {
			t.Errorf("%s's check %q is not in CheckNames", c.Profile, c.Name)
		}
	}
	for _, want := range []ledger.CheckName{chap.CheckBootstrap, cop.CheckLedger, cop.CheckParents, owp.CheckProvenance,
		chieflab.CheckApproval, chieflab.CheckIdempotency, chieflab.CheckWorkspace, chieflab.CheckOperator} {
		if !slices.Contains(names, want) {
			t.Errorf("%q is not in CheckNames", want)
		}
	}
}
