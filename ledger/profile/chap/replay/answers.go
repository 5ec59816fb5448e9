package replay

import (
	"fmt"
	"strings"
)

// Questions are the CHAP paper's §9.3 evaluation questions, in its order.
var Questions = [8]string{
	"Who delegated this task, to whom, and under which workspace policy?",
	"Which agent version produced the artefact, and what tools, data sources, or peer agents did it cite?",
	"Was the artefact reviewed, approved, rejected, overridden, abstained from, or escalated?",
	"If overridden, what changed, who changed it, why, and under which policy reference?",
	"Did the task run in shadow, trial, or production mode?",
	"Did any participant abstain, and what category of abstention was declared?",
	"Was there a handoff, deliberation, route decision, pause, rollback, supersession, or mode transition?",
	"Can an authorised third party verify that the evidence chain was not silently altered?",
}

// answers answers §9.3 from what the replay collected. Question 8 is the verifier's: the
// replay says so, and `evident replay` fills it with the verification verdict.
func (b *Builder) answers() []Answer {
	out := make([]Answer, len(Questions))
	for i, q := range Questions {
		out[i] = Answer{N: i + 1, Question: q, Answer: []string{}}
	}
	add := func(n int, format string, args ...any) {
		out[n-1].Answer = append(out[n-1].Answer, fmt.Sprintf(format, args...))
	}
	for _, t := range b.t.Tasks {
		if len(t.AssignedBy) > 0 || t.CreatedBy != "" {
			policy := "no policy reference recorded"
			if len(t.PolicyRefs) > 0 {
				policy = "policy " + strings.Join(t.PolicyRefs, ", ")
			}
			add(1, "%s: created by %s, assigned by %s to %s; %s", t.ID, orDash(t.CreatedBy), orDash(strings.Join(t.AssignedBy, ", ")), orDash(strings.Join(t.Assignees, ", ")), policy)
		}
		if len(t.Producers) > 0 {
			cites := "no citations recorded"
			if len(t.Citations) > 0 {
				cites = "cited " + strings.Join(t.Citations, "; ")
			}
			add(2, "%s: artefact(s) by %s; %s", t.ID, strings.Join(t.Producers, ", "), cites)
		}
		var kinds []string
		if len(t.Reviewers) > 0 {
			kinds = append(kinds, "review requested from "+strings.Join(t.Reviewers, ", "))
		}
		for _, d := range t.Decisions {
			kinds = append(kinds, fmt.Sprintf("%s by %s (seq %d)", d.Kind, d.By, d.Seq))
			if d.Kind == "override" {
				changed := d.Diff
				if d.Result != "" {
					changed += " → result " + d.Result
				}
				add(4, "%s: %s overrode %s at seq %d; changed %s; why: %s; policy %s; intent preserved: %s",
					t.ID, d.By, orDash(firstNonEmpty(d.LogicalID, d.Artefact)), d.Seq, orDash(changed), orDash(d.Rationale), orDash(strings.Join(d.PolicyRefs, ", ")), boolWord(d.IntentPreserved))
			}
		}
		for _, d := range t.Abstentions {
			kinds = append(kinds, fmt.Sprintf("abstained by %s (seq %d)", d.By, d.Seq))
			add(6, "%s: %s abstained at seq %d, category %s", t.ID, d.By, d.Seq, orDash(d.Category))
		}
		for _, d := range t.Escalations {
			kinds = append(kinds, fmt.Sprintf("escalated by %s to %s (seq %d)", d.By, orDash(d.Category), d.Seq))
		}
		if len(kinds) > 0 {
			add(3, "%s: %s", t.ID, strings.Join(kinds, "; "))
		}
		if t.Mode != "" {
			add(5, "%s: created in %s mode", t.ID, t.Mode)
		}
		for _, h := range t.Handoffs {
			add(7, "%s: handoff by %s to %s at seq %d", t.ID, h.From, strings.Join(h.To, ", "), h.Seq)
		}
		for _, c := range t.Controls {
			add(7, "%s: %s", t.ID, c)
		}
		for _, c := range t.Routes {
			add(7, "%s: %s", t.ID, c)
		}
		if t.Supersedes != "" {
			add(7, "%s: successor of %s (escalation or supersession at seq %d)", t.ID, t.Supersedes, derefSeq(t.CreatedSeq))
		}
	}
	for _, c := range b.t.Controls {
		add(7, "%s", c)
	}
	for _, m := range b.t.Modes {
		add(7, "mode %s → %s by %s at seq %d", orDash(m.From), m.To, m.By, m.Seq)
	}
	if len(b.t.Modes) > 0 && len(out[4].Answer) == 0 {
		add(5, "workspace mode: %s", b.t.Modes[len(b.t.Modes)-1].To)
	}
	for _, d := range b.t.Deliberations {
		state := "open"
		if d.Closed {
			state = "closed"
		}
		add(7, "deliberation %s under %s (%s): %d vote(s), %d comment(s), rule gives %s (recorded %s)", d.ID, orDash(d.Rule), state, len(d.Votes), len(d.Comments), d.Outcome, orDash(d.Recorded))
	}
	add(8, "answered by `evident verify` over the bundle: links, signatures with the key valid at each record's time, seals and receipts")
	for i := range out {
		if len(out[i].Answer) == 0 {
			out[i].Answer = append(out[i].Answer, "the chain records nothing on this")
		}
	}
	return out
}

func derefSeq(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

func boolWord(b *bool) string {
	switch {
	case b == nil:
		return "not stated"
	case *b:
		return "yes"
	default:
		return "no"
	}
}
