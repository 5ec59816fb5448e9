package verifier

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/evident-log/evident/ledger/profile/chap/replay"
)

// The integrity verdict (Report.Verdict: the checks) and the story a CHAP chain tells (the
// replay of `evident replay`: impossible histories, warnings) are separate axes. A report
// that carries a replay's findings (Report.Story) states both where it states the verdict:
// a VERIFIED bundle whose story holds an impossible history, or thousands of warnings, says
// so on the same line, never under a plain VERIFIED.

// Story is what the replay of one CHAP chain found, counted by severity and code.
type Story struct {
	Chain string `json:"chain"`
	Task  string `json:"task,omitempty"` // the task the replay was cut to, "" for the whole chain
	// Entries is how many entries the replay read.
	Entries    uint64 `json:"entries"`
	Impossible int    `json:"impossible"` // histories that cannot have happened under the CHAP rules
	Warnings   int    `json:"warnings"`   // what deserves a look
	Info       int    `json:"info"`       // what is worth knowing (a recorded refusal, a whisper's default)
	// Codes counts the findings by severity and code, impossible first, then warnings, then
	// info, each by count (most first) and code.
	Codes []StoryCode `json:"codes"`
	// NotEvaluated are what the replay did not evaluate, with why: they are no finding.
	NotEvaluated []StoryNote `json:"not_evaluated,omitempty"`
	// Error says why the chain could not be replayed at all ("" when it was).
	Error string `json:"error,omitempty"`
	// NotReplayed says why the chain's story was not replayed by this report's maker (a
	// bound on what it replays), and where it is: not evaluated, no finding ("" when it was).
	NotReplayed string `json:"not_replayed,omitempty"`
}

// StoryCode is how many findings of one severity and code a replay made.
type StoryCode struct {
	Severity replay.Severity `json:"severity"`
	Code     string          `json:"code"`
	Count    int             `json:"count"`
}

// StoryNote is one item the replay did not evaluate, and why.
type StoryNote struct {
	Seq    uint64 `json:"seq"`
	Task   string `json:"task,omitempty"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// StoryOf counts the findings of a replayed timeline; notes are what the replay did not
// evaluate (they are listed, never counted as findings).
func StoryOf(tl *replay.Timeline, notes []StoryNote) Story {
	s := Story{Chain: tl.Chain, Task: tl.Task, Entries: tl.Entries, Codes: []StoryCode{}, NotEvaluated: notes}
	n := map[StoryCode]int{}
	for _, f := range tl.Findings {
		switch f.Severity {
		case replay.Impossible:
			s.Impossible++
		case replay.Warning:
			s.Warnings++
		default:
			s.Info++
		}
		n[StoryCode{Severity: f.Severity, Code: f.Code}]++
	}
	for k, c := range n {
		k.Count = c
		s.Codes = append(s.Codes, k)
	}
	sortCodes(s.Codes)
	return s
}

// sortCodes orders codes impossible first, then warnings, then info, each by count (most
// first) and code.
func sortCodes(codes []StoryCode) {
	sort.Slice(codes, func(i, j int) bool {
		a, b := codes[i], codes[j]
		if ra, rb := severityRank(a.Severity), severityRank(b.Severity); ra != rb {
			return ra < rb
		}
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Code < b.Code
	})
}

func severityRank(s replay.Severity) int {
	switch s {
	case replay.Impossible:
		return 0
	case replay.Warning:
		return 1
	}
	return 2
}

// StoryTotals adds up the stories of a report's chains.
type StoryTotals struct {
	Chains       int         // chains replayed (or that could not be)
	Impossible   int         // impossible findings
	Warnings     int         // warnings
	Info         int         // info findings
	NotEvaluated int         // items not evaluated
	Failed       int         // chains that could not be replayed
	NotReplayed  int         // chains whose story was not replayed (Story.NotReplayed)
	Codes        []StoryCode // by severity and code over every chain, ordered as Story.Codes
}

// StoryTotals adds up Report.Story.
func (r *Report) StoryTotals() StoryTotals {
	t := StoryTotals{Chains: len(r.Story)}
	n := map[StoryCode]int{}
	for _, s := range r.Story {
		t.Impossible += s.Impossible
		t.Warnings += s.Warnings
		t.Info += s.Info
		t.NotEvaluated += len(s.NotEvaluated)
		if s.Error != "" {
			t.Failed++
		}
		if s.NotReplayed != "" {
			t.NotReplayed++
		}
		for _, c := range s.Codes {
			n[StoryCode{Severity: c.Severity, Code: c.Code}] += c.Count
		}
	}
	t.Codes = []StoryCode{}
	for k, c := range n {
		k.Count = c
		t.Codes = append(t.Codes, k)
	}
	sortCodes(t.Codes)
	return t
}

// Headline is the verdict's second axis in one line: what the replay of the CHAP chains
// found, by code ("" when the report carries no replay). It never reads as a plain pass when
// there is something to say.
func (t StoryTotals) Headline() string {
	if t.Chains == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "story (CHAP replay, %d chain(s)): %d impossible, %d warning(s)", t.Chains, t.Impossible, t.Warnings)
	if t.Info > 0 {
		fmt.Fprintf(&b, ", %d info", t.Info)
	}
	if t.NotEvaluated > 0 {
		fmt.Fprintf(&b, ", %d not evaluated", t.NotEvaluated)
	}
	if t.Failed > 0 {
		fmt.Fprintf(&b, ", %d chain(s) could not be replayed", t.Failed)
	}
	if t.NotReplayed > 0 {
		fmt.Fprintf(&b, ", %d chain(s) not replayed (not evaluated)", t.NotReplayed)
	}
	if len(t.Codes) > 0 {
		parts := make([]string, 0, len(t.Codes))
		for _, c := range t.Codes {
			parts = append(parts, fmt.Sprintf("%s %s ×%d", c.Severity, safe(c.Code), c.Count))
		}
		fmt.Fprintf(&b, " — %s", strings.Join(parts, ", "))
	}
	return b.String()
}

// VerdictLine is the verdict as reports state it on top: the integrity verdict and, when the
// report carries a replay, the story's impossible findings and warnings beside it. A VERIFIED
// bundle whose story holds an impossible history reads "VERIFIED (integrity) — STORY
// IMPOSSIBLE", never a plain VERIFIED.
func (r *Report) VerdictLine() string {
	v := strings.ToUpper(string(r.Verdict))
	t := r.StoryTotals()
	switch {
	case t.Chains == 0:
		return v
	case t.Impossible > 0:
		return fmt.Sprintf("%s (integrity) — STORY: %d IMPOSSIBLE HISTORY(IES), %d warning(s)", v, t.Impossible, t.Warnings)
	case t.Warnings > 0:
		return fmt.Sprintf("%s (integrity) — story: %d warning(s), no impossible history", v, t.Warnings)
	case t.Failed > 0:
		return fmt.Sprintf("%s (integrity) — story: %d chain(s) could not be replayed", v, t.Failed)
	case t.NotReplayed > 0:
		return fmt.Sprintf("%s (integrity) — story: not evaluated for %d chain(s), not replayed (see below)", v, t.NotReplayed)
	}
	return fmt.Sprintf("%s (integrity) — story: no impossible history, no warning", v)
}

// maxStoryNotes bounds the not-evaluated items a text report lists per chain.
const maxStoryNotes = 20

// writeStory writes the story lines of a text report, under the verdict.
func (r *Report) writeStory(w io.Writer) error {
	if len(r.Story) == 0 {
		return nil
	}
	ew := &errWriter{w: w}
	ew.printf("  %s\n", r.StoryTotals().Headline())
	for _, s := range r.Story {
		if s.Error != "" {
			ew.printf("    chain %s: could not be replayed: %s\n", safe(s.Chain), safe(s.Error))
		}
		if s.NotReplayed != "" {
			ew.printf("    chain %s: story not evaluated: %s\n", safe(s.Chain), safe(s.NotReplayed))
		}
		for i, n := range s.NotEvaluated {
			if i == maxStoryNotes {
				ew.printf("    chain %s: … and %d more not evaluated (evident replay --format json lists them)\n", safe(s.Chain), len(s.NotEvaluated)-i)
				break
			}
			ew.printf("    chain %s: not evaluated at seq %d (%s): %s\n", safe(s.Chain), n.Seq, safe(n.Code), safe(n.Detail))
		}
	}
	if t := r.StoryTotals(); t.Impossible+t.Warnings+t.Info > 0 {
		ew.printf("    the findings, entry by entry: evident replay BUNDLE (or --format html)\n")
	}
	return ew.err
}
