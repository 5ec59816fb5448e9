package htmlreport_test

import (
	"strings"
	"testing"

	"github.com/evident-log/evident/ledger/profile/chap/replay"
	"github.com/evident-log/evident/verifier"
)

// TestStoryBanner: the banner states the replay's findings beside the integrity verdict, by
// code, with links to the findings; an impossible history never sits under a plain
// VERIFIED; what the replay did not evaluate is listed as "not evaluated" with its reason and
// counted, never as a finding; a chain that did not replay says why; a page with no finding
// claims none; a page with no CHAP chain has no story at all.
func TestStoryBanner(t *testing.T) {
	warn := replay.Finding{Severity: replay.Warning, Code: replay.CodeUnknownTask, Seq: 4, Task: "tsk_0", Detail: "task.update names task tsk_0, which this chain never created"}
	imp := replay.Finding{Severity: replay.Impossible, Code: replay.CodeCompletedUnassigned, Seq: 9, Task: "tsk_0", Detail: "completed, never assigned"}
	note := verifier.StoryNote{Seq: 11, Task: "tsk_1", Code: "profile_unknown", Detail: "runs under a profile the replay does not know"}
	cases := []struct {
		name     string
		findings []replay.Finding
		story    func(tl *replay.Timeline) []verifier.Story // the caller's Report.Story; nil: counted from the timelines
		noChain  bool
		has      []string // in the banner
		hasNot   []string // in the banner
		summary  []string // in the story summary
	}{
		{name: "clean", has: []string{`class="story st-clean"`, "no impossible history · no warning", `href="#findings-1"`},
			hasNot: []string{"<code>", "warning(s)", "impossible history(ies)"}, summary: []string{"0 impossible, 0 warning(s), 0 not evaluated", "no finding"}},
		{name: "warnings", findings: []replay.Finding{warn, warn},
			has:    []string{`class="story st-warning"`, "<b>2 warning(s)</b>", "<code>unknown_task</code> ×2", "no impossible history"},
			hasNot: []string{"impossible history(ies)"}, summary: []string{"0 impossible, 2 warning(s)"}},
		{name: "impossible", findings: []replay.Finding{warn, imp},
			has:     []string{`class="story st-impossible"`, "<b>1 impossible history(ies)</b>", "<b>1 warning(s)</b>", "<code>completed_unassigned</code> ×1"},
			summary: []string{"1 impossible, 1 warning(s)"}},
		{name: "not evaluated", story: func(tl *replay.Timeline) []verifier.Story {
			return []verifier.Story{verifier.StoryOf(tl, []verifier.StoryNote{note})}
		}, has: []string{"1 not evaluated by the replay", "no impossible history · no warning"}, hasNot: []string{"<code>"},
			summary: []string{"0 impossible, 0 warning(s), 1 not evaluated", "not evaluated</span> at seq 11", "<code>profile_unknown</code> runs under a profile", "no finding"}},
		{name: "a chain that did not replay", story: func(tl *replay.Timeline) []verifier.Story {
			return []verifier.Story{verifier.StoryOf(tl, nil), {Chain: "wsp_other", Codes: []verifier.StoryCode{}, Error: "the chain does not replay: line 3"}}
		}, has: []string{"<b>1 chain(s) could not be replayed</b>", "of 2 chain(s)"}, summary: []string{"not replayed:</b> the chain does not replay: line 3"}},
		{name: "no CHAP chain", noChain: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := sample(t)
			in.Report.Verdict = verifier.Verified
			tl := in.Timelines[0]
			tl.Findings = c.findings
			if c.story != nil {
				in.Report.Story = c.story(tl)
			}
			if c.noChain {
				in.Timelines = nil
			}
			page := string(render(t, in))
			// The STORY box of the banner (the rest of it is the integrity verdict and the pins).
			verdict := page[strings.Index(page, `id="verdict"`):strings.Index(page, `id="summary"`)]
			banner := ""
			if i := strings.Index(verdict, `<div class="story`); i >= 0 {
				banner = verdict[i:]
				banner = banner[:strings.Index(banner, "</div>")]
			}
			if strings.Contains(verdict, "(integrity)") == c.noChain {
				t.Errorf("the verdict says (integrity) %v, want %v:\n%s", !c.noChain, !c.noChain, verdict)
			}
			for _, w := range c.has {
				if !strings.Contains(banner, w) {
					t.Errorf("the banner lacks %q:\n%s", w, banner)
				}
			}
			for _, w := range c.hasNot {
				if strings.Contains(banner, w) {
					t.Errorf("the banner holds %q:\n%s", w, banner)
				}
			}
			if c.noChain {
				if banner != "" || strings.Contains(page, `id="story"`) {
					t.Error("a page without a CHAP chain has a story summary")
				}
				return
			}
			i := strings.Index(page, `id="story"`)
			if i < 0 {
				t.Fatal("no story summary")
			}
			summary := page[i:strings.Index(page, `id="chains"`)]
			for _, w := range c.summary {
				if !strings.Contains(summary, w) {
					t.Errorf("the story summary lacks %q:\n%s", w, summary)
				}
			}
			if !strings.Contains(page, `<h4 id="findings-1">`) {
				t.Error("the findings table has no anchor the banner links to")
			}
			if c.findings == nil && strings.Contains(summary, "s-warning") {
				t.Errorf("the summary marks a warning the story does not hold:\n%s", summary)
			}
		})
	}
}
