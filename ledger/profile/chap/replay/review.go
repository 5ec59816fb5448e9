package replay

import (
	"fmt"
	"strings"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile/chap"
)

// The review family: artefacts, review requests, decisions (approve, reject, override with its
// diff), abstentions and escalations.

func (b *Builder) artefactSubmit(c *call) string {
	a, _ := c.p.Object("artefact")
	if a == nil {
		a = c.p
	}
	b.known(c.seq, c.ev.Task, c.r.Method)
	if b.scan != nil {
		return "" // the first pass wants the naming, not the artefact
	}
	v := b.artefact(c.seq, c.ev.Task, c.r, a)
	return fmt.Sprintf("%s submitted artefact %s (%s)", c.r.From, firstNonEmpty(str(a, "id"), str(a, "logical_id")), v.digest)
}

func (b *Builder) reviewRequest(c *call) string {
	p, taskID := c.p, c.ev.Task
	t := b.known(c.seq, taskID, c.r.Method)
	if b.scan != nil {
		return "" // the first pass wants the naming, not the artefact's digest
	}
	revs := firstList(p, "to")
	if len(revs) == 0 {
		revs = append(firstList(p, "reviewer"), strs(p, "reviewers")...)
	}
	for _, rv := range revs {
		t.Reviewers = b.appendOnce(t.Reviewers, rv)
	}
	if a := b.base(taskID, p); a != nil {
		t.setReview(a.digest, a.seq)
	}
	if av, ok := p.Get("artefact"); ok && str(p, "artefact_id") == "" {
		// The reference Coordinator's form: params.artefact is the content under review.
		v := &artefact{content: av, digest: Digest(av), seq: c.seq}
		if o, ok := av.(*canonical.Object); ok {
			if _, hasContent := o.Get("content"); hasContent {
				v = b.artefact(c.seq, taskID, c.r, o)
			}
		}
		if taskID != "" {
			b.taskLatest[taskID] = v
			t.Producers = b.appendOnce(t.Producers, c.r.From)
		}
		t.setReview(v.digest, c.seq)
	}
	if h := str(p, "content_hash"); h != "" {
		t.setReview(normDigest(h), c.seq)
	}
	t.Status = "in_review"
	return fmt.Sprintf("%s requested review of %s by %s", c.r.From, orDash(firstNonEmpty(str(p, "artefact_id"), taskID)), orDash(strings.Join(revs, ", ")))
}

func (b *Builder) decideApprove(c *call) string  { return b.decide(c, "approve") }
func (b *Builder) decideReject(c *call) string   { return b.decide(c, "reject") }
func (b *Builder) decideOverride(c *call) string { return b.decide(c, "override") }

func (b *Builder) decide(c *call, kind string) string {
	p, r, seq := c.p, c.r, c.seq
	taskID := str(p, "task_id")
	t := b.known(seq, taskID, r.Method)
	if b.scan != nil {
		return "" // the first pass wants the naming, not the diff applied and digested
	}
	d := Decision{Seq: seq, Kind: kind, By: r.From, Artefact: firstNonEmpty(str(p, "artefact_id"), str(p, "based_on_artefact_id")),
		LogicalID: str(p, "logical_id"), Rationale: firstNonEmpty(str(p, "rationale"), str(p, "note")), Tags: strs(p, "tags"),
		PolicyRefs: strs(p, "policy_refs"), Category: firstNonEmpty(str(p, "category"), str(p, "reason_category"), str(p, "signature_meaning")), Mode: b.mode}
	if r.Sig != nil {
		d.Kid = r.Sig.Kid
	}
	if !r.TS.IsZero() {
		d.TS = ledger.Timestamp(r.TS)
	}
	if v, ok := p.Get("intent_preserved"); ok {
		if bv, ok := v.(bool); ok {
			d.IntentPreserved = &bv
		}
	}
	base := b.base(taskID, p)
	if base != nil && base.content != nil {
		d.Base = show2(base.content)
	}
	if diff, ok := p.Get("diff"); ok {
		d.Diff = show2(diff)
		switch {
		case (base == nil || base.content == nil) && t.CreatedSeq == nil && !t.never && taskID != "":
			b.note(seq, taskID, NoteCheck, fmt.Sprintf("base/%d", seq), "decide.%s at seq %d carries a diff whose base may be the artefact task %s's creation carried, which is not determined (%s); the result is not reconstructed", kind, seq, taskID, t.openWhy())
		case base == nil || base.content == nil:
			b.find(Warning, CodeNoBase, seq, taskID, "decide.%s carries a diff but its base artefact's content is not in the chain; the result is not reconstructed", kind)
		default:
			res, err := Apply(base.content, diff)
			if err != nil {
				b.findOn(Impossible, CodeDiffNotApplicable, seq, taskID, base.basis(), "decide.%s by %s: %v", kind, r.From, err)
				break
			}
			d.Result = show2(res)
			if stated, ok := p.Get("result"); ok && !equal(stated, res) {
				b.findOn(Impossible, CodeResultMismatch, seq, taskID, base.basis()+"; the diff and the stated result are in the record at seq "+fmt.Sprint(seq), "decide.%s states a result that is not its diff applied to the base artefact", kind)
			}
			// The override's result is the new version of the logical artefact: what is approved next.
			nv := &artefact{content: res, digest: Digest(res), seq: seq}
			d.Digest = nv.digest
			if d.LogicalID != "" {
				b.byLogical[d.LogicalID] = nv
			}
			if d.Artefact != "" {
				b.byID[d.Artefact] = nv
			}
			if taskID != "" {
				b.taskLatest[taskID] = nv
			}
			if d, _ := t.review(); d != "" {
				t.setReview(nv.digest, seq)
			}
		}
	}
	switch kind {
	case "approve":
		// approved_artefact_digest: the reference Coordinator's name (hex SHA-256 of the JCS of
		// the artefact under review, which it checks before recording).
		named := normDigest(firstNonEmpty(str(p, "content_hash"), str(p, "approved_artefact_digest")))
		if named != "" {
			d.Digest = named
			want, from := t.review()
			if want == "" && base != nil {
				want, from = base.digest, base.seq
			}
			if want != "" && named != want {
				b.findOn(Impossible, CodeApprovalDigest, seq, taskID, fmt.Sprintf("what was sent for review is in the record at seq %d (digest %s, overrides applied); the approval at seq %d names %s", from, want, seq, named), "%s approved artefact digest %s, but what was reviewed digests to %s", r.From, named, want)
			}
		} else if base != nil {
			d.Digest = base.digest
		}
		t.Status = "approved"
	case "reject":
		t.Status = "rejected"
		if bv, _ := p.Get("request_revision"); bv == true {
			t.Status = "in_progress" // the reference Coordinator sends the task back for revision
		}
	default:
		t.Status = "overridden"
	}
	t.Decisions = append(t.Decisions, d)
	s := fmt.Sprintf("%s decided %s on %s", r.From, strings.ToUpper(kind), orDash(firstNonEmpty(d.LogicalID, d.Artefact, taskID)))
	if d.Rationale != "" {
		s += ": " + d.Rationale
	}
	return s
}

func (b *Builder) abstain(c *call) string {
	t := b.known(c.seq, c.ev.Task, c.r.Method)
	d := Decision{Seq: c.seq, Kind: "abstain", By: c.r.From, TS: c.ev.TS, Category: firstNonEmpty(str(c.p, "reason_category"), str(c.p, "category")), Rationale: firstNonEmpty(str(c.p, "rationale"), str(c.p, "reason"))}
	t.Abstentions = append(t.Abstentions, d)
	t.Status = "abstained"
	return fmt.Sprintf("%s abstained (%s)", c.r.From, orDash(d.Category))
}

// escalateRaise is the reference Coordinator's escalate.raise: the original task is escalated
// to a new task it creates for new_task.assignee (its id is in the response).
func (b *Builder) escalateRaise(c *call) string {
	p, r := c.p, c.r
	orig := firstNonEmpty(str(p, "original_task_id"), c.ev.Task)
	nt, _ := p.Object("new_task")
	to := str(nt, "assignee")
	ot := b.known(c.seq, orig, r.Method)
	ot.Escalations = append(ot.Escalations, Decision{Seq: c.seq, Kind: "escalate", By: r.From, TS: c.ev.TS, Rationale: firstNonEmpty(str(p, "reason"), str(p, "rationale")), Category: to})
	ot.Status = "escalated"
	id, t := b.successor(c.seq, r.From, firstNonEmpty(str(nt, "kind"), ot.Kind), ot.Mode, orig)
	if to != "" {
		t.AssignedBy, t.Assignees, t.assigned = []string{r.From}, []string{to}, true
	}
	c.ev.Task = orig
	return fmt.Sprintf("%s escalated %s to %s (new task %s)", r.From, orig, orDash(to), id)
}

// escalate is the paper's escalation of a task to someone (any other method naming one).
func (b *Builder) escalate(c *call) string {
	t := b.known(c.seq, c.ev.Task, c.r.Method)
	d := Decision{Seq: c.seq, Kind: "escalate", By: c.r.From, TS: c.ev.TS, Rationale: firstNonEmpty(str(c.p, "reason"), str(c.p, "rationale")), Category: firstNonEmpty(str(c.p, "to"), strings.Join(strs(c.p, "to"), ", "))}
	t.Escalations = append(t.Escalations, d)
	t.Status = "escalated"
	return fmt.Sprintf("%s escalated %s to %s", c.r.From, c.ev.Task, orDash(d.Category))
}

// artefact records a version of an artefact and returns it.
func (b *Builder) artefact(seq uint64, taskID string, r *chap.Record, a *canonical.Object) *artefact {
	v := &artefact{seq: seq}
	if c, ok := a.Get("content"); ok {
		v.content = c
		v.digest = Digest(c)
	}
	if h := str(a, "content_hash"); h != "" {
		if v.digest != "" && h != v.digest {
			b.findOn(Impossible, CodeArtefactHash, seq, taskID, fmt.Sprintf("the artefact's content and its content_hash are both in the record at seq %d", seq), "artefact %s states content_hash %s but its content digests to %s", firstNonEmpty(str(a, "id"), str(a, "logical_id")), h, v.digest)
		}
		if v.digest == "" {
			v.digest = h
		}
	}
	if id := str(a, "id"); id != "" {
		b.byID[id] = v
	}
	if id := str(a, "logical_id"); id != "" {
		b.byLogical[id] = v
	}
	if taskID != "" {
		b.taskLatest[taskID] = v
		t := b.task(taskID)
		by := r.From
		if mv := firstNonEmpty(str(a, "model_id"), str(a, "agent_version")); mv != "" {
			by += " (" + mv + ")"
		}
		t.Producers = b.appendOnce(t.Producers, by)
		for _, k := range []string{"citations", "tools", "sources", "peers"} {
			for _, c := range strs(a, k) {
				t.Citations = b.appendOnce(t.Citations, k+": "+c)
			}
		}
	}
	return v
}

// base finds the artefact a call refers to: by artefact id, then logical id, then the task's latest.
func (b *Builder) base(taskID string, p *canonical.Object) *artefact {
	for _, k := range []string{"artefact_id", "based_on_artefact_id"} {
		if a := b.byID[str(p, k)]; a != nil {
			return a
		}
	}
	if a := b.byLogical[str(p, "logical_id")]; a != nil {
		return a
	}
	return b.taskLatest[taskID]
}

// basis says where a version of an artefact comes from.
func (a *artefact) basis() string {
	return fmt.Sprintf("the base artefact is the version in the record at seq %d (digest %s)", a.seq, a.digest)
}
