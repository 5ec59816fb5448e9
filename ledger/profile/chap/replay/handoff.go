package replay

import (
	"fmt"
	"strings"

	"github.com/evident-log/evident/ledger/canonical"
)

// The handoff family: a transfer of tasks proposed, accepted or declined.

func (b *Builder) handoffPropose(c *call) string {
	p := c.p
	h := &Handoff{ID: str(p, "handoff_id"), Seq: c.seq, From: c.r.From, To: firstList(p, "to"), Tasks: taskRefs(p, "tasks"), Note: firstNonEmpty(str(p, "summary"), str(p, "note"))}
	if h.ID == "" {
		h.ID, _ = b.create("handoff", c.seq)
	}
	b.handoffIDs[h.ID] = h
	b.handoffs = append(b.handoffs, h)
	for _, id := range h.Tasks {
		t := b.known(c.seq, id, c.r.Method)
		t.Handoffs = append(t.Handoffs, h)
	}
	if c.ev.Task != "" && len(h.Tasks) == 0 {
		h.Tasks = []string{c.ev.Task}
		t := b.known(c.seq, c.ev.Task, c.r.Method)
		t.Handoffs = append(t.Handoffs, h)
	}
	return fmt.Sprintf("%s handed off %s to %s", c.r.From, strings.Join(h.Tasks, ", "), strings.Join(h.To, ", "))
}

func (b *Builder) handoffDecline(c *call) string {
	h := b.handoff(c.seq, str(c.p, "handoff_id"), c.ev.Task)
	if h == nil {
		return fmt.Sprintf("%s declined a handoff whose proposal is not determined: %s", c.r.From, orDash(str(c.p, "reason")))
	}
	h.Declined = c.r.From
	return fmt.Sprintf("%s declined the handoff from %s: %s", c.r.From, h.From, orDash(str(c.p, "reason")))
}

func (b *Builder) handoffAccept(c *call) string {
	h := b.handoff(c.seq, str(c.p, "handoff_id"), c.ev.Task)
	accepted := strs(c.p, "accepted_task_ids")
	_, listed := c.p.Get("accepted_task_ids")
	from := "a handoff whose proposal is not determined"
	if h != nil {
		h.Accepted, from = c.r.From, "the handoff from "+h.From
		if !listed {
			accepted = h.Tasks
		}
	}
	for _, id := range accepted {
		t := b.known(c.seq, id, c.r.Method)
		// The handoff makes the acceptor the task's assignee.
		by := "(handoff)"
		if h != nil {
			by = h.From + " (handoff)"
		}
		t.AssignedBy = b.appendOnce(t.AssignedBy, by)
		t.Assignees = b.appendOnce(t.Assignees, c.r.From)
		t.assigned = true
	}
	return fmt.Sprintf("%s accepted %s (%s)", c.r.From, from, strings.Join(accepted, ", "))
}

// handoff finds the handoff an accept or decline at seq names: by its id (one the chain gave it,
// or the one the log binds to its proposal), or — the paper's form, naming none — the last one.
// An id the log does not bind is noted, and nil returned.
func (b *Builder) handoff(seq uint64, id, taskID string) *Handoff {
	if h := b.handoffIDs[id]; id != "" && h != nil {
		return h
	}
	if id != "" {
		b.unresolved(seq, "handoff", id, taskID)
		return nil
	}
	if n := len(b.handoffs); n > 0 {
		return b.handoffs[n-1]
	}
	return nil
}

// taskRefs reads a list of task ids given as strings or as objects {task_id, …}.
func taskRefs(o *canonical.Object, key string) []string {
	return names(o, key, func(x *canonical.Object) string { return str(x, "task_id") })
}
