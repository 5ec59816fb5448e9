package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/evident-log/evident/verifier"
)

// TestVerifyHistoricBundles runs evident verify, as a user would, on bundles exported by
// earlier commits (verifier/testdata/history): a whole chain verifies with its story told,
// and a case slice is not evaluated as incomplete, its story not replayed and saying why
// (no entries.jsonl to read).
func TestVerifyHistoricBundles(t *testing.T) {
	const dir = "../../verifier/testdata/history/"
	for _, tc := range []struct {
		bundle string
		code   int
		story  string // in the chain's story: its error, or why it was not replayed
	}{
		{"09-c2b0a8a-head-chains", exitVerified, ""},
		{"09-c2b0a8a-head-slice", exitNotEvaluated, "a case slice (chains/wsp_history_a/slice.jsonl holds some of the chain's"},
		{"05-787ae07-coordinator-meta-chains", exitVerified, ""},
	} {
		code, out, errs := cli("verify", "-q", "--format", "json", "--trust", dir+tc.bundle+".trust.json", dir+tc.bundle+".zip")
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d: %s", tc.bundle, code, tc.code, errs)
			continue
		}
		var rep verifier.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s: %v", tc.bundle, err)
		}
		if len(rep.Story) == 0 {
			t.Fatalf("%s: no story", tc.bundle)
		}
		for _, s := range rep.Story {
			why := s.Error + s.NotReplayed
			if tc.story == "" && why != "" || tc.story != "" && !strings.Contains(why, tc.story) {
				t.Errorf("%s: chain %s story %q, want %q", tc.bundle, s.Chain, why, tc.story)
			}
		}
	}
}
