package replay

import (
	"fmt"
	"strings"
)

// control replays control.* (the paper's §6.8; the reference Coordinator's control/1.0): pause
// and resume of a task, a participant or the workspace, cancel, snapshot, rollback, supersede
// (which creates the successor task) and the mode ceiling.
func (b *Builder) control(c *call) string {
	p, r, seq, taskID := c.p, c.r, c.seq, c.ev.Task
	verb := strings.TrimPrefix(r.Method, "control.")
	scope := firstNonEmpty(str(p, "scope"), "task")
	note := fmt.Sprintf("%s by %s at seq %d", verb, r.From, seq)
	if rs := str(p, "reason"); rs != "" {
		note += ": " + rs
	}
	switch verb {
	case "pause", "resume":
		switch scope {
		case "participant":
			who := firstNonEmpty(str(p, "participant_uri"), str(p, "uri"))
			b.t.Controls = append(b.t.Controls, fmt.Sprintf("participant %s: %s", orDash(who), note))
			return fmt.Sprintf("%s: %s participant %s", r.From, verb, orDash(who))
		case "workspace":
			b.t.Controls = append(b.t.Controls, "workspace: "+note)
			return fmt.Sprintf("%s: %s the workspace", r.From, verb)
		}
	case "snapshot", "rollback":
		s := note
		if id := firstNonEmpty(str(p, "to_snapshot_artefact_id"), str(p, "snapshot_artefact_id"), str(p, "snapshot_id"), str(p, "label")); id != "" {
			s += " (" + id + ")"
		}
		if taskID == "" {
			b.t.Controls = append(b.t.Controls, "workspace: "+s)
			return fmt.Sprintf("%s: %s", r.From, s)
		}
	case "set_mode_ceiling", "set_mode":
		md := firstNonEmpty(str(p, "new_ceiling"), str(p, "mode_ceiling"), str(p, "ceiling"), str(p, "mode"))
		b.t.Controls = append(b.t.Controls, fmt.Sprintf("mode ceiling → %s: %s", orDash(md), note))
		return fmt.Sprintf("%s set the mode ceiling to %s", r.From, orDash(md))
	}
	if taskID == "" {
		b.t.Controls = append(b.t.Controls, note)
		return fmt.Sprintf("%s: %s %s", r.From, verb, str(p, "reason"))
	}
	tk := b.known(seq, taskID, r.Method)
	tk.Controls = append(tk.Controls, note)
	switch verb {
	case "pause":
		tk.Status = "paused"
	case "resume":
		tk.Status = "in_progress"
	case "cancel":
		tk.Status = "cancelled"
	case "supersede":
		tk.Status = "superseded"
		if spec, ok := p.Object("successor_task"); ok {
			id, t := b.successor(seq, r.From, str(spec, "kind"), firstNonEmpty(str(spec, "mode"), tk.Mode), taskID)
			who := firstNonEmpty(str(spec, "assignee"), strings.Join(tk.Assignees, ", "))
			t.AssignedBy, t.assigned = []string{r.From}, true
			if who != "" {
				t.Assignees = []string{who}
			}
			return fmt.Sprintf("%s superseded %s by a new task %s", r.From, taskID, id)
		}
	}
	return fmt.Sprintf("%s: %s %s %s", r.From, verb, taskID, str(p, "reason"))
}
