package replay

import "strings"

// handler replays one method: it records the call's effect and returns the event's summary.
// Params are read where the reference Coordinator reads them (its handlers), and where the
// paper's examples put them.
type handler func(b *Builder, c *call) string

// methods maps each CHAP method to its handler. A new profile's methods go here, with their
// handlers in a file of the family's own.
var methods = map[string]handler{
	"workspace.create":       (*Builder).workspaceCreate,
	"workspace.set_profiles": (*Builder).setProfiles,
	"workspace.mode":         (*Builder).modeChange,
	"workspace.set_mode":     (*Builder).modeChange,
	"participant.join":       (*Builder).join,
	"participant.leave":      (*Builder).leave,
	"participant.rotate_key": (*Builder).rotateKey,
	"participant.revoke_key": (*Builder).revokeKey,
	"audit.submit_to_scitt":  (*Builder).submitToSCITT,

	"task.create":   (*Builder).taskCreate,
	"task.assign":   (*Builder).taskAssign,
	"task.route":    (*Builder).taskRoute,
	"review.depth":  (*Builder).reviewDepth,
	"escalate.auto": (*Builder).escalateAuto,
	"task.accept":   (*Builder).taskAccept,
	"task.start":    (*Builder).taskAccept,
	"task.decline":  (*Builder).taskDecline,
	"task.update":   (*Builder).taskUpdate,
	"task.progress": (*Builder).taskUpdate,
	"task.complete": (*Builder).taskComplete,

	"artefact.submit": (*Builder).artefactSubmit,
	"task.result":     (*Builder).artefactSubmit,
	"review.request":  (*Builder).reviewRequest,
	"decide.approve":  (*Builder).decideApprove,
	"decide.reject":   (*Builder).decideReject,
	"decide.override": (*Builder).decideOverride,
	"abstain.declare": (*Builder).abstain,
	"decide.abstain":  (*Builder).abstain,
	"escalate.raise":  (*Builder).escalateRaise,

	"whisper.ask":    (*Builder).whisperAsk,
	"whisper.answer": (*Builder).whisperAnswer,
	"notify.message": (*Builder).notifyMessage,

	"handoff.propose": (*Builder).handoffPropose,
	"handoff.accept":  (*Builder).handoffAccept,
	"handoff.decline": (*Builder).handoffDecline,
}

// families are the method prefixes one handler replays, tried in order when methods has no
// entry for the method.
var families = []struct {
	prefix string
	h      handler
}{
	{"deliberation.", (*Builder).deliberation},
	{"deliberate.", (*Builder).deliberation},
	{"control.", (*Builder).control},
	{"mode.", (*Builder).modeChange},
	{"modes.", (*Builder).modeChange},
}

// lookup returns the handler of method m, nil when the replay knows nothing of it (the event
// then says only who called what).
func lookup(m string) handler {
	if h, ok := methods[m]; ok {
		return h
	}
	for _, f := range families {
		if strings.HasPrefix(m, f.prefix) {
			return f.h
		}
	}
	if strings.Contains(m, "escalat") {
		return (*Builder).escalate // the paper's escalation methods
	}
	return nil
}

// PrivilegedMethod reports whether a CHAP method needs the admin role: workspace.set_profiles
// (the reference Coordinator's rule) and the mode, policy and workspace-configuration changes
// of the paper's §8.2 (docs/profiles/chap.md, "Replay").
func PrivilegedMethod(m string) bool {
	switch {
	case strings.HasPrefix(m, "mode."), strings.HasPrefix(m, "modes."), strings.HasPrefix(m, "policy."):
		return true
	}
	switch m {
	case "workspace.mode", "workspace.set_mode", "workspace.update", "workspace.policy", "workspace.set_profiles":
		return true
	}
	return false
}

// MemberMethod reports whether a CHAP method may be called only by a member of the workspace
// whatever its role: the reference Coordinator's floor for control.* (the paper's §6.8),
// deliberate.* and handoff.*.
func MemberMethod(m string) bool {
	for _, prefix := range []string{"control.", "deliberate.", "deliberation.", "handoff."} {
		if strings.HasPrefix(m, prefix) {
			return true
		}
	}
	return false
}
