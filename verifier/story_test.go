package verifier_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/evident-log/evident/ledger/profile/chap/replay"
	"github.com/evident-log/evident/verifier"
)

// TestStoryBesideVerdict: a report that carries the replay's findings states them on the
// verdict's line and counts them by code under it; an impossible history never sits under a
// plain VERIFIED; items the replay did not evaluate are listed and counted as not evaluated,
// never as findings; a report with no finding says so and names none; a report that carries
// no replay reads as before.
func TestStoryBesideVerdict(t *testing.T) {
	finding := func(sev replay.Severity, code string, seq uint64) replay.Finding {
		return replay.Finding{Severity: sev, Code: code, Seq: seq, Detail: "d"}
	}
	note := verifier.StoryNote{Seq: 7, Task: "tsk_1", Code: "profile_unknown", Detail: "the task runs under a profile this replay does not know"}
	cases := []struct {
		name     string
		verdict  verifier.Status
		findings []replay.Finding
		notes    []verifier.StoryNote
		noReplay bool
		line     string   // the verdict line
		has      []string // in the text above "bundle:"
		hasNot   []string
	}{
		{name: "no replay", verdict: verifier.Verified, noReplay: true, line: "VERDICT: VERIFIED\n", hasNot: []string{"story", "integrity"}},
		{name: "clean", verdict: verifier.Verified, line: "VERDICT: VERIFIED (integrity) — story: no impossible history, no warning\n",
			has: []string{"story (CHAP replay, 1 chain(s)): 0 impossible, 0 warning(s)\n"}, hasNot: []string{"×", "not evaluated", "evident replay BUNDLE"}},
		{name: "warnings", verdict: verifier.Verified,
			findings: []replay.Finding{finding(replay.Warning, replay.CodeUnknownTask, 4), finding(replay.Warning, replay.CodeUnknownTask, 14), finding(replay.Warning, replay.CodeTSRegression, 9)},
			line:     "VERDICT: VERIFIED (integrity) — story: 3 warning(s), no impossible history\n",
			has:      []string{"0 impossible, 3 warning(s) — warning unknown_task ×2, warning ts_not_monotonic ×1", "evident replay BUNDLE"}},
		{name: "impossible under verified", verdict: verifier.Verified,
			findings: []replay.Finding{finding(replay.Warning, replay.CodeUnknownTask, 4), finding(replay.Impossible, replay.CodeCompletedUnassigned, 4), finding(replay.Info, replay.CodeRefusal, 5)},
			line:     "VERDICT: VERIFIED (integrity) — STORY: 1 IMPOSSIBLE HISTORY(IES), 1 warning(s)\n",
			has:      []string{"1 impossible, 1 warning(s), 1 info — impossible completed_unassigned ×1, warning unknown_task ×1, info refused_request ×1"}},
		{name: "not evaluated is no finding", verdict: verifier.NotEvaluated, notes: []verifier.StoryNote{note},
			line:   "VERDICT: NOT_EVALUATED (integrity) — story: no impossible history, no warning\n",
			has:    []string{"0 impossible, 0 warning(s), 1 not evaluated\n", "chain wsp_a: not evaluated at seq 7 (profile_unknown): the task runs under a profile"},
			hasNot: []string{"×", "evident replay BUNDLE"}},
		{name: "not replayed", verdict: verifier.Verified, noReplay: true,
			line:   "VERDICT: VERIFIED (integrity) — story: not evaluated for 1 chain(s), not replayed (see below)\n",
			has:    []string{"0 impossible, 0 warning(s), 1 chain(s) not replayed (not evaluated)", "chain wsp_big: story not evaluated: 900000 entries, over"},
			hasNot: []string{"no warning", "×"}},
		{name: "broken with impossible", verdict: verifier.Broken, findings: []replay.Finding{finding(replay.Impossible, replay.CodeApprovalDigest, 3)},
			line: "VERDICT: BROKEN (integrity) — STORY: 1 IMPOSSIBLE HISTORY(IES), 0 warning(s)\n", has: []string{"impossible approval_digest_mismatch ×1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := &verifier.Report{Format: verifier.ReportFormat, Verdict: c.verdict, Checks: []verifier.Check{}, Chains: []verifier.ChainReport{}}
			if c.name == "not replayed" {
				rep.Story = []verifier.Story{{Chain: "wsp_big", Codes: []verifier.StoryCode{}, NotReplayed: "900000 entries, over the bound"}}
			} else if !c.noReplay {
				tl := &replay.Timeline{Chain: "wsp_a", Entries: 20, Findings: c.findings}
				s := verifier.StoryOf(tl, c.notes)
				if s.Impossible+s.Warnings+s.Info != len(c.findings) || len(s.NotEvaluated) != len(c.notes) {
					t.Fatalf("story %+v of %d finding(s) and %d note(s)", s, len(c.findings), len(c.notes))
				}
				rep.Story = []verifier.Story{s}
			}
			var buf bytes.Buffer
			if err := rep.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			text := buf.String()
			if !strings.HasPrefix(text, c.line) {
				t.Fatalf("text starts %q, want %q", text[:strings.Index(text, "\n")+1], c.line)
			}
			head := text[:strings.Index(text, "bundle:")]
			for _, w := range c.has {
				if !strings.Contains(head, w) {
					t.Errorf("the verdict's lines lack %q:\n%s", w, head)
				}
			}
			for _, w := range c.hasNot {
				if strings.Contains(head, w) {
					t.Errorf("the verdict's lines hold %q:\n%s", w, head)
				}
			}
			if strings.TrimSuffix(strings.TrimPrefix(c.line, "VERDICT: "), "\n") != rep.VerdictLine() {
				t.Errorf("VerdictLine %q differs from the text's", rep.VerdictLine())
			}
			var out map[string]any
			buf.Reset()
			if err := rep.WriteJSON(&buf); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
				t.Fatal(err)
			}
			if _, ok := out["story"]; ok != (len(rep.Story) > 0) {
				t.Errorf("JSON story present %v, want %v", ok, len(rep.Story) > 0)
			}
			if out["verdict"] != string(c.verdict) {
				t.Errorf("JSON verdict %v: the story must not change the integrity verdict %s", out["verdict"], c.verdict)
			}
		})
	}
}

// TestStoryTotals adds the stories of several chains by code, and counts a chain that could
// not be replayed.
func TestStoryTotals(t *testing.T) {
	a := verifier.StoryOf(&replay.Timeline{Chain: "a", Findings: []replay.Finding{
		{Severity: replay.Warning, Code: replay.CodeUnknownTask}, {Severity: replay.Warning, Code: replay.CodeUnknownTask}}}, nil)
	b := verifier.StoryOf(&replay.Timeline{Chain: "b", Findings: []replay.Finding{
		{Severity: replay.Warning, Code: replay.CodeUnknownTask}, {Severity: replay.Impossible, Code: replay.CodeResultMismatch}}}, nil)
	rep := &verifier.Report{Verdict: verifier.Verified, Story: []verifier.Story{a, b, {Chain: "c", Error: "line 3: bad"}}}
	got := rep.StoryTotals()
	if got.Chains != 3 || got.Impossible != 1 || got.Warnings != 3 || got.Failed != 1 ||
		fmt.Sprint(got.Codes) != "[{impossible decision_result_mismatch 1} {warning unknown_task 3}]" {
		t.Fatalf("totals %+v", got)
	}
	if h := got.Headline(); !strings.Contains(h, "1 chain(s) could not be replayed") || !strings.Contains(h, "warning unknown_task ×3") {
		t.Fatalf("headline %q", h)
	}
}
