package replay

import (
	"fmt"
	"strings"
)

// The deliberation family: a multi-party decision opened under a rule, commented on, voted
// on and closed; its outcome is what the rule gives over the votes.

func (b *Builder) deliberation(c *call) string {
	p, r, seq := c.p, c.r, c.seq
	verb := strings.TrimPrefix(strings.TrimPrefix(r.Method, "deliberation."), "deliberate.")
	id := str(p, "deliberation_id")
	if strings.HasPrefix(r.Method, "deliberation.") && id == "" {
		id = str(p, "task_id") // the paper's examples name a deliberation by its task
	}
	open := verb == "open" || verb == "start" || verb == "propose"
	basis := ""
	if open && id == "" {
		id, basis = b.create("deliberation", seq) // the reference Coordinator names it in its response
	}
	d := b.delibs[id]
	if d == nil {
		if !open && id != "" && !strings.HasPrefix(r.Method, "deliberation.") {
			b.unresolved(seq, "deliberation", id, "")
		}
		d = &Deliberation{ID: id, Seq: seq, Votes: []Vote{}, Outcome: "pending"}
		b.delibs[id] = d
		b.t.Deliberations = append(b.t.Deliberations, d)
	}
	switch verb {
	case "open", "start", "propose":
		d.Seq = seq
		d.Rule = str(p, "rule")
		d.Task = str(p, "task_id")
		if d.Task != "" {
			b.known(seq, d.Task, r.Method)
		}
		if basis != "" {
			d.IDInferred, d.IDBasis = true, basis
		}
		d.Quorum = num(p, "quorum")
		if k, n, ok := strings.Cut(d.Rule, ":"); ok && k == "quorum" {
			fmt.Sscan(n, &d.Quorum)
		}
		voters := strs(p, "voters")
		if len(voters) == 0 {
			voters = firstList(p, "to")
		}
		if len(voters) == 0 {
			voters = strs(p, "participants")
		}
		d.Voters = len(voters)
		if w, ok := p.Object("weights"); ok {
			d.weights = map[string]int64{}
			for _, m := range w.Members {
				d.weights[m.Key] = num(w, m.Key)
			}
		}
		if v, ok := p.Object("veto"); ok {
			d.vetoRight = map[string]bool{}
			for _, m := range v.Members {
				d.vetoRight[m.Key], _ = m.Value.(bool)
			}
		}
		return fmt.Sprintf("%s opened deliberation %s under rule %s", r.From, id, orDash(d.Rule))
	case "comment":
		d.Comments = append(d.Comments, fmt.Sprintf("%s at seq %d: %s", r.From, seq, firstNonEmpty(str(p, "comment"), str(p, "text"))))
		return fmt.Sprintf("%s commented on deliberation %s", r.From, d.ID)
	case "vote":
		v := Vote{Seq: seq, By: r.From, Vote: str(p, "vote"), Weight: num(p, "weight")}
		if v.Weight == 0 {
			v.Weight = 1
			if w, ok := d.weights[r.From]; ok && w > 0 {
				v.Weight = w
			}
		}
		for _, k := range []string{"veto", "veto_invoked"} {
			if bv, ok := p.Get(k); ok {
				if x, _ := bv.(bool); x {
					v.Veto = true
				}
			}
		}
		if d.vetoRight != nil && !d.vetoRight[r.From] {
			v.Veto = false // the reference Coordinator honours a veto only from a voter the open gave one
		}
		replaced := false
		for i := range d.Votes {
			if d.Votes[i].By == v.By {
				d.Votes[i], replaced = v, true
			}
		}
		if !replaced {
			d.Votes = append(d.Votes, v)
		}
		d.Outcome = outcome(d)
		return fmt.Sprintf("%s voted %s (weight %d) in %s", r.From, v.Vote, v.Weight, d.ID)
	case "close", "outcome", "decide", "resolve":
		d.Closed, d.closedSeq = true, seq
		d.Outcome = outcome(d)
		d.Recorded = firstNonEmpty(str(p, "outcome"), str(p, "result"))
		return fmt.Sprintf("%s closed deliberation %s: recorded %s, rule gives %s", r.From, d.ID, orDash(d.Recorded), d.Outcome)
	}
	return fmt.Sprintf("%s: deliberation.%s", r.From, verb)
}

// basis says what a deliberation's outcome rests on.
func (d *Deliberation) basis() string {
	seqs := make([]string, len(d.Votes))
	for i, v := range d.Votes {
		seqs[i] = fmt.Sprint(v.Seq)
	}
	s := fmt.Sprintf("the open at seq %d (rule %s, %d voter(s), its weights and veto rights) and the votes at seqs %s", d.Seq, orDash(d.Rule), d.Voters, orDash(strings.Join(seqs, ", ")))
	if d.Closed {
		s += fmt.Sprintf("; the close at seq %d", d.closedSeq)
	}
	if d.IDBasis != "" {
		s += "; its id is bound to the open because " + d.IDBasis
	}
	return s
}

// outcome evaluates a deliberation rule (CHAP §6.7): any-one-approves, all-approve, quorum,
// weighted vote, weighted vote with veto — in the paper's spelling (votes approve/reject) and
// the reference Coordinator's (any_one_approves, all_approve, quorum:N, weighted_vote:T,
// weighted_vote_with_veto:T; votes yea/nay/abstain), whose close decides on the votes cast.
func outcome(d *Deliberation) string {
	var yes, no, wy, wn int64
	veto := false
	for _, v := range d.Votes {
		switch v.Vote {
		case "approve", "yes", "yea":
			yes++
			wy += v.Weight
		case "reject", "no", "nay":
			no++
			wn += v.Weight
		}
		if v.Veto && v.Vote != "approve" && v.Vote != "yes" && v.Vote != "yea" {
			veto = true
		}
	}
	voters := int64(d.Voters)
	kind, arg, _ := strings.Cut(d.Rule, ":")
	switch kind {
	case "any_one_approves", "all_approve", "quorum", "weighted_vote", "weighted_vote_with_veto":
		return coordinatorOutcome(d, kind, arg, yes, no, wy, veto)
	}
	switch d.Rule {
	case "any-one-approves":
		if yes > 0 {
			return "approved"
		}
		if voters > 0 && no >= voters {
			return "rejected"
		}
	case "all-approve":
		if no > 0 {
			return "rejected"
		}
		if voters > 0 && yes >= voters {
			return "approved"
		}
	case "quorum":
		if d.Quorum > 0 && yes >= d.Quorum {
			return "approved"
		}
		if d.Quorum > 0 && voters > 0 && voters-no < d.Quorum {
			return "rejected"
		}
	case "weighted-vote", "weighted-vote-with-veto":
		if d.Rule == "weighted-vote-with-veto" && veto {
			return "vetoed"
		}
		if voters > 0 && int64(len(d.Votes)) < voters {
			return "pending"
		}
		if wy > wn {
			return "approved"
		}
		return "rejected"
	}
	return "pending"
}

// coordinatorOutcome is the reference Coordinator's computeOutcome: pending until the close,
// then approved or rejected on the votes cast.
func coordinatorOutcome(d *Deliberation, kind, arg string, yes, no, wy int64, veto bool) string {
	if !d.Closed {
		return "pending"
	}
	var threshold float64
	fmt.Sscan(arg, &threshold)
	ok := false
	switch kind {
	case "any_one_approves":
		ok = yes >= 1
	case "all_approve":
		ok = yes == int64(d.Voters) && no == 0
	case "quorum":
		ok = yes+no >= d.Quorum && yes > no
	case "weighted_vote":
		ok = float64(wy) >= threshold
	case "weighted_vote_with_veto":
		ok = !veto && float64(wy) >= threshold
	}
	if ok {
		return "approved"
	}
	return "rejected"
}
