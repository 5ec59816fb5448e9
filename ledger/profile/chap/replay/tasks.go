package replay

import (
	"fmt"
	"strings"
)

// The task family: creation, assignment, the Coordinator's routing policies, progress and
// completion.

func (b *Builder) taskCreate(c *call) string {
	p, r, seq := c.p, c.r, c.seq
	id, basis := c.ev.Task, ""
	if id == "" {
		id, basis = b.create("task", seq)
	}
	t := b.task(id)
	if t.CreatedSeq == nil {
		s := seq
		t.CreatedSeq = &s
	}
	if basis != "" {
		t.IDInferred, t.IDBasis = true, basis
	}
	t.Kind, t.CreatedBy, t.Status, t.Mode = b.share(str(p, "kind")), r.From, "created", b.share(firstNonEmpty(str(p, "mode"), b.mode))
	t.PolicyRefs = append(t.PolicyRefs, strs(p, "policy_refs")...)
	// The reference Coordinator assigns at creation: params.assignee, else params.to.
	if who := firstNonEmpty(str(p, "assignee"), str(p, "to")); who != "" && who != "service:coordinator" {
		t.AssignedBy = b.appendOnce(t.AssignedBy, r.From)
		t.Assignees = b.appendOnce(t.Assignees, who)
		t.assigned = true
	}
	if a, ok := p.Object("artefact"); ok && b.scan == nil { // the first pass wants the creation alone
		b.artefact(seq, id, r, a)
	}
	c.ev.Task = id
	return fmt.Sprintf("%s created task %s (%s)%s", r.From, id, orDash(t.Kind), assignedTo(t))
}

func (b *Builder) taskAssign(c *call) string {
	t := b.known(c.seq, c.ev.Task, c.r.Method)
	who := firstNonEmpty(str(c.p, "assignee"), strings.Join(strs(c.p, "assignees"), ", "), str(c.p, "to"))
	t.AssignedBy = b.appendOnce(t.AssignedBy, c.r.From)
	t.Assignees = b.appendOnce(t.Assignees, who)
	t.assigned, t.Status = true, "assigned"
	return fmt.Sprintf("%s assigned %s to %s", c.r.From, c.ev.Task, orDash(who))
}

func (b *Builder) taskRoute(c *call) string {
	// The Coordinator's routing policy picks the assignee among the candidates; the pick is in
	// its response, not in the chain.
	t := b.known(c.seq, c.ev.Task, c.r.Method)
	candidates := orDash(strings.Join(strs(c.p, "candidates"), ", "))
	t.Routes = append(t.Routes, fmt.Sprintf("routed by the Coordinator's policy among %s at seq %d (asked by %s)", candidates, c.seq, c.r.From))
	t.assigned = true
	return fmt.Sprintf("%s asked the Coordinator to route %s among %s", c.r.From, c.ev.Task, candidates)
}

func (b *Builder) reviewDepth(c *call) string {
	t := b.known(c.seq, c.ev.Task, c.r.Method)
	t.Routes = append(t.Routes, fmt.Sprintf("review depth decided by the Coordinator's policy at seq %d (asked by %s)", c.seq, c.r.From))
	return fmt.Sprintf("%s asked the Coordinator's review-depth policy about %s", c.r.From, c.ev.Task)
}

func (b *Builder) escalateAuto(c *call) string {
	t := b.known(c.seq, c.ev.Task, c.r.Method)
	t.Routes = append(t.Routes, fmt.Sprintf("automatic escalation evaluated by the Coordinator's policy at seq %d (asked by %s, default target %s)", c.seq, c.r.From, orDash(str(c.p, "default_escalation_target"))))
	return fmt.Sprintf("%s asked the Coordinator's escalation policy about %s", c.r.From, c.ev.Task)
}

func (b *Builder) taskAccept(c *call) string {
	t := b.known(c.seq, c.ev.Task, c.r.Method)
	t.AcceptedBy = b.appendOnce(t.AcceptedBy, c.r.From)
	t.Status = "in_progress"
	return fmt.Sprintf("%s accepted %s", c.r.From, c.ev.Task)
}

func (b *Builder) taskDecline(c *call) string {
	t := b.known(c.seq, c.ev.Task, c.r.Method)
	t.Status = "declined"
	return fmt.Sprintf("%s declined %s: %s", c.r.From, c.ev.Task, str(c.p, "reason"))
}

func (b *Builder) taskUpdate(c *call) string {
	t := b.known(c.seq, c.ev.Task, c.r.Method)
	st := firstNonEmpty(str(c.p, "state"), str(c.p, "status")) // state: the reference Coordinator's name
	if st != "" {
		t.Status = b.share(st)
		if st == "in_progress" && t.assigned {
			t.AcceptedBy = b.appendOnce(t.AcceptedBy, c.r.From)
		}
	}
	return fmt.Sprintf("%s updated %s: %s", c.r.From, c.ev.Task, orDash(firstNonEmpty(st, str(c.p, "progress_note"))))
}

func (b *Builder) taskComplete(c *call) string {
	id := c.ev.Task
	t := b.known(c.seq, id, c.r.Method)
	if !t.assigned {
		switch {
		case t.CreatedSeq != nil:
			b.findOn(Impossible, CodeCompletedUnassigned, c.seq, id, unassignedBasis(t, c.seq), "%s completed task %s, which was never assigned", c.r.From, id)
		case t.never:
			b.findOn(Impossible, CodeCompletedUnassigned, c.seq, id, t.openWhy(), "%s completed task %s, which this chain never created, so never assigned", c.r.From, id)
		default:
			b.note(c.seq, id, NoteCheck, "assigned/"+id, "whether task %s was assigned before its completion at seq %d is not evaluated: %s", id, c.seq, t.openWhy())
		}
	}
	t.CompletedBy, t.Status = c.r.From, "completed"
	return fmt.Sprintf("%s completed %s (%s)", c.r.From, id, orDash(firstNonEmpty(str(c.p, "outcome"), str(c.p, "status"))))
}

// unassignedBasis says what a completed_unassigned finding rests on.
func unassignedBasis(t *Task, seq uint64) string {
	s := fmt.Sprintf("task %s was created at seq %d with no assignee (params.assignee, params.to), and no record from there to seq %d assigns it (task.assign, task.route, handoff.accept, a successor's assignee)", t.ID, *t.CreatedSeq, seq)
	if t.IDBasis != "" {
		s += "; its id is bound to that creation because " + t.IDBasis
	}
	return s
}

// successor creates the task the record at seq, sent by by, makes to follow task supersedes
// (escalate.raise, control.supersede). The Coordinator's id for it is in the response, not in
// the chain: it is the id the log binds to this record, else a provisional key.
func (b *Builder) successor(seq uint64, by, kind, mode, supersedes string) (string, *Task) {
	id, basis := b.create("task", seq)
	t := b.task(id)
	s := seq
	t.CreatedSeq, t.CreatedBy, t.Status, t.Kind, t.Mode, t.Supersedes = &s, by, "created", kind, mode, supersedes
	if basis != "" {
		t.IDInferred, t.IDBasis = true, basis
	}
	return id, t
}

// known returns the task a record at seq names by id. An id the chain created, or whose
// creation the log determines, is that task; any other is kept under its id with what the
// records naming it say, and the replay says once why its creation is not known: a warning
// when the chain (from its first record) cannot have created it, a note when it may have.
func (b *Builder) known(seq uint64, id, method string) *Task {
	t := b.task(id)
	if id == "" || t.checked || t.CreatedSeq != nil {
		return t
	}
	t.checked = true
	if b.scan != nil {
		b.scan.named("task", id, seq)
		return t
	}
	st := b.ids.lookup("task", id)
	switch {
	case st.open:
		t.CreatedAtOneOf, t.x().openWhy = st.cands, st.why
		b.note(seq, id, st.code, "task/"+id, "task %s, first named by %s at seq %d: %s", id, method, seq, st.why)
	case !b.fromGenesis:
		t.x().openWhy = "the chain does not start at the workspace's first record, so the task may have been created before it"
		b.note(seq, id, NoteNotFromGenesis, "task/"+id, "task %s, first named by %s at seq %d, is not created in this chain: %s", id, method, seq, t.openWhy())
	default:
		t.never, t.x().openWhy = true, st.why
		b.findOn(Warning, CodeUnknownTask, seq, id, st.why, "%s names task %s, which this chain never created", method, id)
	}
	return t
}
