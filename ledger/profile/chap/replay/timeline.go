// Package replay rebuilds the story a CHAP 0.3 evidence chain tells: the forensic timeline of
// `evident replay`. It reads records already admitted to a chain — it checks no
// link and no signature; that is the verifier's job — and reconstructs, per task, who created,
// assigned, accepted and completed it, review requests, decide.approve / decide.reject /
// decide.override with the RFC 6902 diff applied to the base artefact, rationales, tags and
// policy references, abstentions and escalations, whispers and the defaults that applied,
// handoffs, deliberation votes and the rule's outcome, and mode changes. It answers the eight
// questions of the CHAP paper's §9.3 for the chain (or one task). Every method the reference
// Coordinator records (its wire form: routing fields in params) replays with that
// Coordinator's semantics, ids it assigned in its unrecorded responses bound by inference.
//
// Histories that cannot have happened under the CHAP rules are reported as Findings with a
// stable code (docs/profiles/chap.md, "Replay"): a task completed that was never assigned, an
// approval whose artefact digest differs from what was sent for review, a privileged call by a
// member without the admin role (or a member-only call by a non-member), a diff that does not apply to its base artefact, a decision
// whose stated result differs from its diff applied to the base. Timestamps going backwards
// for one sender are a warning, not an impossibility (clocks drift; the chain order stands).
package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile/chap"
)

// Finding codes: histories the chain records that cannot have happened, and warnings.
const (
	CodeCompletedUnassigned = "completed_unassigned"      // task.complete of a task never assigned (or never created)
	CodeApprovalDigest      = "approval_digest_mismatch"  // decide.approve names a digest other than the reviewed artefact's
	CodeUnprivileged        = "privileged_without_role"   // a privileged call by a member whose role is not admin
	CodeDiffNotApplicable   = "diff_not_applicable"       // a decision's diff does not apply to its base artefact
	CodeResultMismatch      = "decision_result_mismatch"  // a decision's result differs from diff(base)
	CodeArtefactHash        = "artefact_hash_mismatch"    // an artefact whose content_hash is not the digest of its content
	CodeUnknownTask         = "unknown_task"              // a call naming a task never created (warning)
	CodeTSRegression        = "ts_not_monotonic"          // a sender's ts earlier than its previous record's (warning)
	CodeNoBase              = "diff_base_unknown"         // a diff whose base artefact is not in the chain (warning)
	CodeDeliberationOpen    = "deliberation_not_closed"   // a deliberation with votes but no outcome yet (warning)
	CodeWhisperDefaulted    = "whisper_default_applied"   // a whisper answered by nobody: its default applies (info)
	CodeRefusal             = "refused_request"           // a refusal recorded by the Coordinator (info)
	CodeUnknownPrivileged   = "privileged_unknown_member" // a privileged call by a sender that never joined
)

// Severity of a Finding.
type Severity string

// Severities: an impossible history breaks the story; a warning deserves a look.
const (
	Impossible Severity = "impossible"
	Warning    Severity = "warning"
	Info       Severity = "info"
)

// Finding is something the replay noticed, at one entry.
type Finding struct {
	Severity Severity `json:"severity"`
	Code     string   `json:"code"`
	Seq      uint64   `json:"seq"`
	Task     string   `json:"task,omitempty"`
	Detail   string   `json:"detail"`
}

// Event is one entry of the timeline.
type Event struct {
	Seq     uint64 `json:"seq"`
	TS      string `json:"ts,omitempty"`
	Method  string `json:"method"`
	From    string `json:"from,omitempty"`
	Role    string `json:"role,omitempty"` // the sender's role at the time
	Kid     string `json:"kid,omitempty"`  // the key that signed it ("" unsigned)
	Task    string `json:"task,omitempty"`
	Mode    string `json:"mode,omitempty"` // the workspace mode in force
	Refusal bool   `json:"refusal,omitempty"`
	Summary string `json:"summary"`
}

// Decision is a decide.* call with what it did to the artefact.
type Decision struct {
	Seq             uint64   `json:"seq"`
	Kind            string   `json:"kind"` // approve, reject, override
	By              string   `json:"by"`
	Kid             string   `json:"kid,omitempty"`
	TS              string   `json:"ts,omitempty"`
	Artefact        string   `json:"artefact,omitempty"`
	LogicalID       string   `json:"logical_id,omitempty"`
	Digest          string   `json:"digest,omitempty"` // digest the decision names (content_hash), or of its result
	Diff            string   `json:"diff,omitempty"`   // the RFC 6902 diff, canonical JSON
	Base            string   `json:"base,omitempty"`   // the base artefact content, canonical JSON
	Result          string   `json:"result,omitempty"` // diff applied to base, canonical JSON
	IntentPreserved *bool    `json:"intent_preserved,omitempty"`
	Rationale       string   `json:"rationale,omitempty"`
	Tags            []string `json:"tags,omitempty"`
	PolicyRefs      []string `json:"policy_refs,omitempty"`
	Category        string   `json:"category,omitempty"`
	Mode            string   `json:"mode,omitempty"`
}

// Whisper is a whisper.ask and its answer, or the default that applied.
type Whisper struct {
	Seq      uint64   `json:"seq"`
	From     string   `json:"from"`
	Question string   `json:"question"`
	Options  []string `json:"options,omitempty"`
	Default  string   `json:"default,omitempty"`
	Deadline string   `json:"deadline,omitempty"`
	Answer   string   `json:"answer,omitempty"`
	By       string   `json:"by,omitempty"`
	Outcome  string   `json:"outcome"` // answered, default_applied, open
	key      string   // its provisional key while the Coordinator's id for it is not known
}

// Vote is one deliberation vote.
type Vote struct {
	Seq    uint64 `json:"seq"`
	By     string `json:"by"`
	Vote   string `json:"vote"`
	Weight int64  `json:"weight"`
	Veto   bool   `json:"veto,omitempty"`
}

// Deliberation is a multi-party decision and the outcome its rule gives.
type Deliberation struct {
	ID         string   `json:"id"`
	IDInferred bool     `json:"id_inferred,omitempty"` // the Coordinator assigned the id; bound to this open by inference
	Seq        uint64   `json:"seq"`
	Task       string   `json:"task,omitempty"`
	Rule       string   `json:"rule"`
	Quorum     int64    `json:"quorum,omitempty"`
	Voters     int      `json:"voters,omitempty"`
	Votes      []Vote   `json:"votes"`
	Comments   []string `json:"comments,omitempty"`
	Closed     bool     `json:"closed,omitempty"`
	Outcome    string   `json:"outcome"`            // approved, rejected, vetoed, pending
	Recorded   string   `json:"recorded,omitempty"` // the outcome the chain records, if any
	weights    map[string]int64
	vetoRight  map[string]bool
}

// Handoff is a transfer of work.
type Handoff struct {
	ID       string   `json:"id,omitempty"`
	Seq      uint64   `json:"seq"`
	From     string   `json:"from"`
	To       []string `json:"to"`
	Tasks    []string `json:"tasks,omitempty"`
	Note     string   `json:"note,omitempty"`
	Accepted string   `json:"accepted_by,omitempty"`
	Declined string   `json:"declined_by,omitempty"`
}

// Task is one task's lifecycle.
type Task struct {
	ID            string     `json:"id"`
	IDInferred    bool       `json:"id_inferred,omitempty"` // the Coordinator assigned the id; bound to its create by inference
	Kind          string     `json:"kind,omitempty"`
	CreatedBy     string     `json:"created_by,omitempty"`
	CreatedSeq    *uint64    `json:"created_seq,omitempty"`
	AssignedBy    []string   `json:"assigned_by,omitempty"`
	Assignees     []string   `json:"assignees,omitempty"`
	AcceptedBy    []string   `json:"accepted_by,omitempty"`
	CompletedBy   string     `json:"completed_by,omitempty"`
	Status        string     `json:"status"`
	Mode          string     `json:"mode,omitempty"` // mode at creation
	PolicyRefs    []string   `json:"policy_refs,omitempty"`
	Producers     []string   `json:"producers,omitempty"` // who submitted artefacts (agent URI with version)
	Citations     []string   `json:"citations,omitempty"` // tools, sources, peers the artefacts cite
	Reviewers     []string   `json:"reviewers,omitempty"`
	Decisions     []Decision `json:"decisions,omitempty"`
	Abstentions   []Decision `json:"abstentions,omitempty"`
	Escalations   []Decision `json:"escalations,omitempty"`
	Whispers      []*Whisper `json:"whispers,omitempty"`
	Handoffs      []*Handoff `json:"handoffs,omitempty"`
	Controls      []string   `json:"controls,omitempty"` // pause, rollback, supersede … with who
	Routes        []string   `json:"routes,omitempty"`   // task.route, review.depth, escalate.auto: decisions the Coordinator's policy took
	Supersedes    string     `json:"supersedes,omitempty"`
	reviewDigest  string
	assigned      bool
	warnedUnknown bool
}

// ModeChange is a workspace (or agent) mode transition.
type ModeChange struct {
	Seq  uint64 `json:"seq"`
	By   string `json:"by"`
	From string `json:"from,omitempty"`
	To   string `json:"to"`
	TS   string `json:"ts,omitempty"`
}

// Answer is one of the CHAP paper's §9.3 questions and what the chain says.
type Answer struct {
	N        int      `json:"n"`
	Question string   `json:"question"`
	Answer   []string `json:"answer"`
}

// Timeline is the replayed story of one chain (or one task of it).
type Timeline struct {
	Chain         string          `json:"chain"`
	Task          string          `json:"task,omitempty"` // the task the timeline is cut to, "" for all
	Entries       uint64          `json:"entries"`        // records read
	Events        []Event         `json:"events"`
	Tasks         []*Task         `json:"tasks"`
	Modes         []ModeChange    `json:"modes,omitempty"`
	Deliberations []*Deliberation `json:"deliberations,omitempty"`
	Controls      []string        `json:"controls,omitempty"` // workspace-wide control, profile and audit calls, with who
	Findings      []Finding       `json:"findings"`
	Answers       []Answer        `json:"answers"`
}

// Impossible counts the findings of severity Impossible.
func (t *Timeline) Impossible() int {
	n := 0
	for _, f := range t.Findings {
		if f.Severity == Impossible {
			n++
		}
	}
	return n
}

// artefact is one version of an artefact's content.
type artefact struct {
	content canonical.Value // nil when the chain carries only a hash
	digest  string
}

// Builder reads a chain's records in order and builds its Timeline.
type Builder struct {
	t          Timeline
	only       string // task filter
	roles      map[string]string
	lastTS     map[string]time.Time
	mode       string
	tasks      map[string]*Task
	byID       map[string]*artefact // artefact id → latest version
	byLogical  map[string]*artefact // logical id → latest version
	taskLatest map[string]*artefact // task → latest artefact
	delibs     map[string]*Deliberation
	whispers   map[string]*Whisper // whisper id (params.whisper_id, else the ask's envelope id) → whisper
	lastWhisp  map[string]*Whisper // task → last open whisper
	handoffs   []*Handoff
	handoffIDs map[string]*Handoff
	// unbound are the objects created by a request that does not carry the id the Coordinator
	// gave them (the reference Coordinator returns task, deliberation, whisper and handoff ids
	// in its response, which the audit log does not record), by kind, oldest first.
	unbound map[string][]string
	provSeq map[string]uint64 // provisional key → seq of the record that created it
	bound   map[string]string // provisional key → the id it was bound to (events and findings are renamed in Timeline)
	anchors []anchor          // Coordinator ids bound so far, with the seq that created them
	left    map[string]string // role of a member that left (a re-join without a role gets it back)
}

// New starts a timeline of chain; task, when not "", keeps only that task's events (the
// whole chain is still read, so roles, modes and artefacts are known).
func New(chain, task string) *Builder {
	return &Builder{t: Timeline{Chain: chain, Task: task, Events: []Event{}, Tasks: []*Task{}, Findings: []Finding{}},
		only: task, roles: map[string]string{}, lastTS: map[string]time.Time{}, tasks: map[string]*Task{},
		byID: map[string]*artefact{}, byLogical: map[string]*artefact{}, taskLatest: map[string]*artefact{},
		delibs: map[string]*Deliberation{}, whispers: map[string]*Whisper{}, lastWhisp: map[string]*Whisper{},
		handoffIDs: map[string]*Handoff{}, unbound: map[string][]string{}, provSeq: map[string]uint64{}, bound: map[string]string{}, left: map[string]string{}}
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

func (b *Builder) find(sev Severity, code string, seq uint64, task, format string, args ...any) {
	if b.only != "" && task != b.only && task != "" && !provisionalKey(task) {
		return
	}
	b.t.Findings = append(b.t.Findings, Finding{Severity: sev, Code: code, Seq: seq, Task: task, Detail: fmt.Sprintf(format, args...)})
}

func (b *Builder) task(id string) *Task {
	t := b.tasks[id]
	if t == nil {
		t = &Task{ID: id, Status: "unknown"}
		b.tasks[id] = t
	}
	return t
}

// Add reads the record at seq. Records must come in chain order.
func (b *Builder) Add(seq uint64, r *chap.Record) {
	b.t.Entries++
	if r.Refusal {
		b.refusal(seq, r)
		return
	}
	p := r.Params()
	ev := Event{Seq: seq, Method: r.Method, From: r.From, Role: b.roles[r.From], Mode: b.mode}
	if !r.TS.IsZero() {
		ev.TS = ledger.Timestamp(r.TS)
		if last, ok := b.lastTS[r.From]; ok && r.From != "" && r.TS.Before(last) {
			b.find(Warning, CodeTSRegression, seq, str(p, "task_id"), "%s stamped %s, earlier than its previous record (%s): the chain order stands, the sender's clock does not", r.From, ev.TS, ledger.Timestamp(last))
		}
		if r.From != "" && (b.lastTS[r.From].IsZero() || r.TS.After(b.lastTS[r.From])) {
			b.lastTS[r.From] = r.TS
		}
	}
	if r.Sig != nil {
		ev.Kid = r.Sig.Kid
	}
	ev.Task = str(p, "task_id")
	if r.Method == "" {
		ev.Method = "(response)"
		ev.Summary = "response to " + r.ID
		b.event(ev)
		return
	}
	if ev.Task != "" {
		ev.Task = b.bindTask(ev.Task, r.From)
	}
	if PrivilegedMethod(r.Method) || MemberMethod(r.Method) {
		role, member := b.roles[r.From]
		if !member {
			b.find(Impossible, CodeUnknownPrivileged, seq, ev.Task, "%s called %s but is not a member of the workspace (never joined, or left)", r.From, r.Method)
		} else if PrivilegedMethod(r.Method) && role != chap.RoleAdmin {
			b.find(Impossible, CodeUnprivileged, seq, ev.Task, "%s (role %q) called privileged %s, which needs the admin role", r.From, role, r.Method)
		}
	}
	ev.Summary = b.apply(seq, r, p, &ev)
	b.event(ev)
}

// provisionalKey reports whether a task key is one of a task whose id is not known (yet): its
// events are kept until the end of the replay, when the filter is applied again.
func provisionalKey(task string) bool { return strings.HasPrefix(task, "(") }

func (b *Builder) event(ev Event) {
	if b.only != "" && ev.Task != b.only && !provisionalKey(ev.Task) && !b.touches(ev) {
		return
	}
	b.t.Events = append(b.t.Events, ev)
}

// touches reports whether a task-less event concerns the filtered task (a handoff listing it).
func (b *Builder) touches(ev Event) bool {
	if len(b.handoffs) > 0 {
		h := b.handoffs[len(b.handoffs)-1]
		if h.Seq == ev.Seq {
			for _, t := range h.Tasks {
				if t == b.only {
					return true
				}
			}
		}
	}
	return false
}

func (b *Builder) refusal(seq uint64, r *chap.Record) {
	req, _ := r.Object.Object("request")
	params, _ := req.Object("params")
	task := str(params, "task_id")
	reason := ""
	if o, ok := r.Object.Object("outcome"); ok {
		reason = firstNonEmpty(str(o, "code"), str(o, "reason"), str(o, "message"), str(o, "status"))
	}
	b.event(Event{Seq: seq, Method: r.Method, From: r.From, Task: task, Refusal: true, Mode: b.mode,
		Summary: fmt.Sprintf("REFUSED by the Coordinator: %s from %s (%s)", orDash(r.Method), orDash(r.From), orDash(reason))})
	b.find(Info, CodeRefusal, seq, task, "the Coordinator refused %s from %s: %s", orDash(r.Method), orDash(r.From), orDash(reason))
}

// apply records a method's effect and returns the event's summary. Params are read where the
// reference Coordinator reads them (its handlers), and where the paper's examples put them.
func (b *Builder) apply(seq uint64, r *chap.Record, p *canonical.Object, ev *Event) string {
	taskID := ev.Task
	switch m := r.Method; {
	case m == "participant.join":
		uri := firstNonEmpty(str(p, "uri"), str(p, "participant"), r.From)
		if _, known := b.roles[uri]; !known {
			b.roles[uri] = firstNonEmpty(str(p, "role"), b.left[uri])
		}
		if uri != r.From {
			return fmt.Sprintf("%s admitted %s as %s", r.From, uri, orDash(b.roles[uri]))
		}
		return fmt.Sprintf("%s joined as %s", uri, orDash(b.roles[uri]))
	case m == "participant.rotate_key":
		return fmt.Sprintf("%s rotated key %s", r.From, str(p, "old_kid"))
	case m == "participant.revoke_key":
		return fmt.Sprintf("%s revoked key %s of %s", r.From, str(p, "kid"), firstNonEmpty(str(p, "target_uri"), str(p, "participant"), r.From))
	case m == "participant.leave":
		// The reference Coordinator deletes the member: it is no member from here on.
		if role, ok := b.roles[r.From]; ok {
			b.left[r.From] = role
			delete(b.roles, r.From)
		}
		return r.From + " left"
	case m == "workspace.create":
		// The reference Coordinator starts a workspace in trial mode unless told otherwise.
		b.setMode(seq, r, firstNonEmpty(str(p, "mode"), "trial"))
		return fmt.Sprintf("%s created workspace %s (profiles %s, mode %s)", orDash(r.From), firstNonEmpty(str(p, "workspace_id"), r.Workspace), strings.Join(strs(p, "profiles"), ", "), orDash(b.mode))
	case m == "workspace.set_profiles":
		c := fmt.Sprintf("profiles set to %s by %s at seq %d", strings.Join(strs(p, "profiles"), ", "), r.From, seq)
		b.t.Controls = append(b.t.Controls, c)
		return fmt.Sprintf("%s set the workspace's profiles: %s", r.From, strings.Join(strs(p, "profiles"), ", "))
	case m == "workspace.mode" || m == "workspace.set_mode" || strings.HasPrefix(m, "mode.") || strings.HasPrefix(m, "modes."):
		md := firstNonEmpty(str(p, "mode"), str(p, "to"))
		prev := b.mode
		b.setMode(seq, r, md)
		return fmt.Sprintf("%s changed mode %s → %s", r.From, orDash(prev), orDash(md))
	case m == "task.create":
		id := taskID
		if id == "" {
			id = b.provisional("task", seq)
		}
		t := b.task(id)
		if t.CreatedSeq == nil {
			s := seq
			t.CreatedSeq = &s
		}
		t.Kind, t.CreatedBy, t.Status, t.Mode = str(p, "kind"), r.From, "created", firstNonEmpty(str(p, "mode"), b.mode)
		t.PolicyRefs = append(t.PolicyRefs, strs(p, "policy_refs")...)
		// The reference Coordinator assigns at creation: params.assignee, else params.to.
		if who := firstNonEmpty(str(p, "assignee"), str(p, "to")); who != "" && who != "service:coordinator" {
			t.AssignedBy = appendOnce(t.AssignedBy, r.From)
			t.Assignees = appendOnce(t.Assignees, who)
			t.assigned = true
		}
		if a, ok := p.Object("artefact"); ok {
			b.artefact(seq, id, r, a)
		}
		ev.Task = id
		return fmt.Sprintf("%s created task %s (%s)%s", r.From, id, orDash(t.Kind), assignedTo(t))
	case m == "task.assign":
		t := b.known(seq, taskID, m)
		who := firstNonEmpty(str(p, "assignee"), strings.Join(strs(p, "assignees"), ", "), str(p, "to"))
		t.AssignedBy = appendOnce(t.AssignedBy, r.From)
		t.Assignees = appendOnce(t.Assignees, who)
		t.assigned, t.Status = true, "assigned"
		return fmt.Sprintf("%s assigned %s to %s", r.From, taskID, orDash(who))
	case m == "task.route":
		// The Coordinator's routing policy picks the assignee among the candidates; the pick is
		// in its response, not in the chain.
		t := b.known(seq, taskID, m)
		c := fmt.Sprintf("routed by the Coordinator's policy among %s at seq %d (asked by %s)", orDash(strings.Join(strs(p, "candidates"), ", ")), seq, r.From)
		t.Routes = append(t.Routes, c)
		t.assigned = true
		return fmt.Sprintf("%s asked the Coordinator to route %s among %s", r.From, taskID, orDash(strings.Join(strs(p, "candidates"), ", ")))
	case m == "review.depth":
		t := b.known(seq, taskID, m)
		t.Routes = append(t.Routes, fmt.Sprintf("review depth decided by the Coordinator's policy at seq %d (asked by %s)", seq, r.From))
		return fmt.Sprintf("%s asked the Coordinator's review-depth policy about %s", r.From, taskID)
	case m == "escalate.auto":
		t := b.known(seq, taskID, m)
		t.Routes = append(t.Routes, fmt.Sprintf("automatic escalation evaluated by the Coordinator's policy at seq %d (asked by %s, default target %s)", seq, r.From, orDash(str(p, "default_escalation_target"))))
		return fmt.Sprintf("%s asked the Coordinator's escalation policy about %s", r.From, taskID)
	case m == "task.accept" || m == "task.start":
		t := b.known(seq, taskID, m)
		t.AcceptedBy = appendOnce(t.AcceptedBy, r.From)
		t.Status = "in_progress"
		return fmt.Sprintf("%s accepted %s", r.From, taskID)
	case m == "task.decline":
		t := b.known(seq, taskID, m)
		t.Status = "declined"
		return fmt.Sprintf("%s declined %s: %s", r.From, taskID, str(p, "reason"))
	case m == "task.update" || m == "task.progress":
		t := b.known(seq, taskID, m)
		st := firstNonEmpty(str(p, "state"), str(p, "status")) // state: the reference Coordinator's name
		if st != "" {
			t.Status = st
			if st == "in_progress" && t.assigned {
				t.AcceptedBy = appendOnce(t.AcceptedBy, r.From)
			}
		}
		return fmt.Sprintf("%s updated %s: %s", r.From, taskID, orDash(firstNonEmpty(st, str(p, "progress_note"))))
	case m == "task.complete":
		t := b.known(seq, taskID, m)
		if !t.assigned {
			b.find(Impossible, CodeCompletedUnassigned, seq, taskID, "%s completed task %s, which was never assigned", r.From, taskID)
		}
		t.CompletedBy, t.Status = r.From, "completed"
		return fmt.Sprintf("%s completed %s (%s)", r.From, taskID, orDash(firstNonEmpty(str(p, "outcome"), str(p, "status"))))
	case m == "artefact.submit" || m == "task.result":
		a, _ := p.Object("artefact")
		if a == nil {
			a = p
		}
		b.known(seq, taskID, m)
		v := b.artefact(seq, taskID, r, a)
		return fmt.Sprintf("%s submitted artefact %s (%s)", r.From, firstNonEmpty(str(a, "id"), str(a, "logical_id")), v.digest)
	case m == "review.request":
		t := b.known(seq, taskID, m)
		revs := firstList(p, "to")
		if len(revs) == 0 {
			revs = append(firstList(p, "reviewer"), strs(p, "reviewers")...)
		}
		for _, rv := range revs {
			t.Reviewers = appendOnce(t.Reviewers, rv)
		}
		if a := b.base(taskID, p); a != nil {
			t.reviewDigest = a.digest
		}
		if av, ok := p.Get("artefact"); ok && str(p, "artefact_id") == "" {
			// The reference Coordinator's form: params.artefact is the content under review.
			v := &artefact{content: av, digest: Digest(av)}
			if o, ok := av.(*canonical.Object); ok {
				if _, hasContent := o.Get("content"); hasContent {
					v = b.artefact(seq, taskID, r, o)
				}
			}
			if taskID != "" {
				b.taskLatest[taskID] = v
				t.Producers = appendOnce(t.Producers, r.From)
			}
			t.reviewDigest = v.digest
		}
		if h := str(p, "content_hash"); h != "" {
			t.reviewDigest = normDigest(h)
		}
		t.Status = "in_review"
		return fmt.Sprintf("%s requested review of %s by %s", r.From, orDash(firstNonEmpty(str(p, "artefact_id"), taskID)), orDash(strings.Join(revs, ", ")))
	case m == "decide.approve" || m == "decide.reject" || m == "decide.override":
		return b.decide(seq, r, p, strings.TrimPrefix(m, "decide."))
	case m == "abstain.declare" || m == "decide.abstain":
		t := b.known(seq, taskID, m)
		d := Decision{Seq: seq, Kind: "abstain", By: r.From, TS: ev.TS, Category: firstNonEmpty(str(p, "reason_category"), str(p, "category")), Rationale: firstNonEmpty(str(p, "rationale"), str(p, "reason"))}
		t.Abstentions = append(t.Abstentions, d)
		t.Status = "abstained"
		return fmt.Sprintf("%s abstained (%s)", r.From, orDash(d.Category))
	case m == "escalate.raise":
		// The reference Coordinator: the original task is escalated to a new task it creates
		// for new_task.assignee (its id is in the response).
		orig := b.bindTask(str(p, "original_task_id"), r.From)
		if orig == "" {
			orig = taskID
		}
		nt, _ := p.Object("new_task")
		to := str(nt, "assignee")
		ot := b.known(seq, orig, m)
		ot.Escalations = append(ot.Escalations, Decision{Seq: seq, Kind: "escalate", By: r.From, TS: ev.TS, Rationale: firstNonEmpty(str(p, "reason"), str(p, "rationale")), Category: to})
		ot.Status = "escalated"
		id, t := b.successor(seq, r.From, firstNonEmpty(str(nt, "kind"), ot.Kind), ot.Mode, orig)
		if to != "" {
			t.AssignedBy, t.Assignees, t.assigned = []string{r.From}, []string{to}, true
		}
		ev.Task = orig
		return fmt.Sprintf("%s escalated %s to %s (new task %s)", r.From, orig, orDash(to), id)
	case strings.Contains(m, "escalat"):
		t := b.known(seq, taskID, m)
		d := Decision{Seq: seq, Kind: "escalate", By: r.From, TS: ev.TS, Rationale: firstNonEmpty(str(p, "reason"), str(p, "rationale")), Category: firstNonEmpty(str(p, "to"), strings.Join(strs(p, "to"), ", "))}
		t.Escalations = append(t.Escalations, d)
		t.Status = "escalated"
		return fmt.Sprintf("%s escalated %s to %s", r.From, taskID, orDash(d.Category))
	case m == "whisper.ask":
		w := &Whisper{Seq: seq, From: r.From, Question: str(p, "question"), Options: options(p), Default: firstNonEmpty(str(p, "default_if_no_answer"), value(p, "default_if_lapsed")), Deadline: firstNonEmpty(str(p, "deadline"), msWord(str(p, "deadline_ms"))), Outcome: "open"}
		id := str(p, "whisper_id")
		if id == "" {
			// The reference Coordinator names the whisper in its response; the paper's answer
			// names the ask's envelope id.
			id = b.provisional("whisper", seq)
			w.key = id
			if r.ID != "" {
				b.whispers[r.ID] = w
			}
		}
		b.whispers[id] = w
		b.lastWhisp[taskID] = w
		if taskID != "" {
			t := b.known(seq, taskID, m)
			t.Whispers = append(t.Whispers, w)
		}
		return fmt.Sprintf("%s whispered to %s: %s", r.From, strings.Join(firstList(p, "to"), ", "), w.Question)
	case m == "whisper.answer":
		w := b.whisper(str(p, "whisper_id"), str(p, "in_reply_to"), taskID)
		ans := firstNonEmpty(str(p, "answer_option"), str(p, "choice"), str(p, "answer"), str(p, "answer_text"))
		if w != nil {
			w.Answer, w.By = ans, r.From
			w.Outcome = "answered"
			if str(p, "status") == "defaulted" {
				w.Answer, w.Outcome = w.Default, "default_applied"
			}
		}
		return fmt.Sprintf("%s answered the whisper: %s", r.From, ans)
	case m == "notify.message" && str(p, "kind") == "whisper_lapsed":
		// Recorded by the reference Coordinator when a whisper's deadline passed unanswered.
		w := b.whisper(str(p, "whisper_id"), "", taskID)
		def := value(p, "default_applied")
		if w != nil {
			w.Outcome, w.Answer = "default_applied", firstNonEmpty(def, w.Default)
			b.find(Info, CodeWhisperDefaulted, seq, taskID, "whisper %q lapsed unanswered: the Coordinator applied its default %q", w.Question, w.Answer)
		}
		return fmt.Sprintf("the whisper %s lapsed: default %s applied", orDash(str(p, "whisper_id")), orDash(def))
	case m == "handoff.propose":
		h := &Handoff{ID: str(p, "handoff_id"), Seq: seq, From: r.From, To: firstList(p, "to"), Tasks: taskRefs(p, "tasks"), Note: firstNonEmpty(str(p, "summary"), str(p, "note"))}
		if h.ID == "" {
			h.ID = b.provisional("handoff", seq)
		}
		b.handoffIDs[h.ID] = h
		b.handoffs = append(b.handoffs, h)
		for i, id := range h.Tasks {
			h.Tasks[i] = b.bindTask(id, r.From)
			t := b.known(seq, h.Tasks[i], m)
			t.Handoffs = append(t.Handoffs, h)
		}
		if taskID != "" && len(h.Tasks) == 0 {
			h.Tasks = []string{taskID}
			t := b.known(seq, taskID, m)
			t.Handoffs = append(t.Handoffs, h)
		}
		return fmt.Sprintf("%s handed off %s to %s", r.From, strings.Join(h.Tasks, ", "), strings.Join(h.To, ", "))
	case m == "handoff.accept" || m == "handoff.decline":
		h := b.handoff(str(p, "handoff_id"))
		if h == nil {
			return fmt.Sprintf("%s: %s of an unknown handoff", r.From, m)
		}
		if m == "handoff.decline" {
			h.Declined = r.From
			return fmt.Sprintf("%s declined the handoff from %s: %s", r.From, h.From, orDash(str(p, "reason")))
		}
		h.Accepted = r.From
		accepted := strs(p, "accepted_task_ids")
		if _, ok := p.Get("accepted_task_ids"); !ok {
			accepted = h.Tasks
		}
		for _, id := range accepted {
			id = b.bindTask(id, r.From)
			t := b.known(seq, id, m)
			// The handoff makes the acceptor the task's assignee.
			t.AssignedBy = appendOnce(t.AssignedBy, h.From+" (handoff)")
			t.Assignees = appendOnce(t.Assignees, r.From)
			t.assigned = true
		}
		return fmt.Sprintf("%s accepted the handoff from %s (%s)", r.From, h.From, strings.Join(accepted, ", "))
	case strings.HasPrefix(m, "deliberation."):
		return b.deliberate(seq, r, p, strings.TrimPrefix(m, "deliberation."))
	case strings.HasPrefix(m, "deliberate."):
		return b.deliberate(seq, r, p, strings.TrimPrefix(m, "deliberate."))
	case strings.HasPrefix(m, "control."):
		return b.control(seq, r, p, ev)
	case m == "audit.submit_to_scitt":
		rng, _ := p.Object("range")
		c := fmt.Sprintf("audit entries %s..%s submitted to a SCITT log by %s at seq %d", orDash(str(rng, "from_seq")), orDash(str(rng, "to_seq")), r.From, seq)
		b.t.Controls = append(b.t.Controls, c)
		return c
	}
	return fmt.Sprintf("%s called %s", orDash(r.From), r.Method)
}

// control applies control.* (the paper's §6.8; the reference Coordinator's control/1.0):
// pause and resume of a task, a participant or the workspace, cancel, snapshot, rollback,
// supersede (which creates the successor task) and the mode ceiling.
func (b *Builder) control(seq uint64, r *chap.Record, p *canonical.Object, ev *Event) string {
	verb := strings.TrimPrefix(r.Method, "control.")
	taskID := ev.Task
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
		c := note
		if id := firstNonEmpty(str(p, "to_snapshot_artefact_id"), str(p, "snapshot_artefact_id"), str(p, "snapshot_id"), str(p, "label")); id != "" {
			c += " (" + id + ")"
		}
		if taskID == "" {
			b.t.Controls = append(b.t.Controls, "workspace: "+c)
			return fmt.Sprintf("%s: %s", r.From, c)
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

// successor creates the task the record at seq, sent by by, makes to follow task supersedes
// (escalate.raise, control.supersede). The Coordinator's id for it is in the response, not in
// the chain: it is kept under a provisional key until a later record names it.
func (b *Builder) successor(seq uint64, by, kind, mode, supersedes string) (string, *Task) {
	id := b.provisional("task", seq)
	t := b.task(id)
	s := seq
	t.CreatedSeq, t.CreatedBy, t.Status, t.Kind, t.Mode, t.Supersedes = &s, by, "created", kind, mode, supersedes
	return id, t
}

func (b *Builder) setMode(seq uint64, r *chap.Record, md string) {
	mc := ModeChange{Seq: seq, By: r.From, From: b.mode, To: md}
	if !r.TS.IsZero() {
		mc.TS = ledger.Timestamp(r.TS)
	}
	b.t.Modes = append(b.t.Modes, mc)
	b.mode = md
}

// known returns a task, warning when the chain never created it.
func (b *Builder) known(seq uint64, id, method string) *Task {
	t := b.task(id)
	if t.CreatedSeq == nil && id != "" && !t.warnedUnknown {
		b.find(Warning, CodeUnknownTask, seq, id, "%s names task %s, which this chain never created", method, id)
		t.warnedUnknown = true
	}
	return t
}

// artefact records a version of an artefact and returns it.
func (b *Builder) artefact(seq uint64, taskID string, r *chap.Record, a *canonical.Object) *artefact {
	v := &artefact{}
	if c, ok := a.Get("content"); ok {
		v.content = c
		v.digest = Digest(c)
	}
	if h := str(a, "content_hash"); h != "" {
		if v.digest != "" && h != v.digest {
			b.find(Impossible, CodeArtefactHash, seq, taskID, "artefact %s states content_hash %s but its content digests to %s", firstNonEmpty(str(a, "id"), str(a, "logical_id")), h, v.digest)
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
		t.Producers = appendOnce(t.Producers, by)
		for _, k := range []string{"citations", "tools", "sources", "peers"} {
			for _, c := range strs(a, k) {
				t.Citations = appendOnce(t.Citations, k+": "+c)
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

func (b *Builder) decide(seq uint64, r *chap.Record, p *canonical.Object, kind string) string {
	taskID := b.bindTask(str(p, "task_id"), r.From)
	t := b.known(seq, taskID, r.Method)
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
		case base == nil || base.content == nil:
			b.find(Warning, CodeNoBase, seq, taskID, "decide.%s carries a diff but its base artefact's content is not in the chain; the result is not reconstructed", kind)
		default:
			res, err := Apply(base.content, diff)
			if err != nil {
				b.find(Impossible, CodeDiffNotApplicable, seq, taskID, "decide.%s by %s: %v", kind, r.From, err)
				break
			}
			d.Result = show2(res)
			if stated, ok := p.Get("result"); ok && !equal(stated, res) {
				b.find(Impossible, CodeResultMismatch, seq, taskID, "decide.%s states a result that is not its diff applied to the base artefact", kind)
			}
			// The override's result is the new version of the logical artefact: what is approved next.
			nv := &artefact{content: res, digest: Digest(res)}
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
			if t.reviewDigest != "" {
				t.reviewDigest = nv.digest
			}
		}
	}
	if kind == "approve" {
		// approved_artefact_digest: the reference Coordinator's name (hex SHA-256 of the JCS of
		// the artefact under review, which it checks before recording).
		named := normDigest(firstNonEmpty(str(p, "content_hash"), str(p, "approved_artefact_digest")))
		if named != "" {
			d.Digest = named
			want := t.reviewDigest
			if want == "" && base != nil {
				want = base.digest
			}
			if want != "" && named != want {
				b.find(Impossible, CodeApprovalDigest, seq, taskID, "%s approved artefact digest %s, but what was reviewed digests to %s", r.From, named, want)
			}
		} else if base != nil {
			d.Digest = base.digest
		}
		t.Status = "approved"
	} else if kind == "reject" {
		t.Status = "rejected"
		if bv, _ := p.Get("request_revision"); bv == true {
			t.Status = "in_progress" // the reference Coordinator sends the task back for revision
		}
	} else {
		t.Status = "overridden"
	}
	t.Decisions = append(t.Decisions, d)
	s := fmt.Sprintf("%s decided %s on %s", r.From, strings.ToUpper(kind), orDash(firstNonEmpty(d.LogicalID, d.Artefact, taskID)))
	if d.Rationale != "" {
		s += ": " + d.Rationale
	}
	return s
}

func (b *Builder) deliberate(seq uint64, r *chap.Record, p *canonical.Object, verb string) string {
	id := str(p, "deliberation_id")
	if strings.HasPrefix(r.Method, "deliberation.") && id == "" {
		id = str(p, "task_id") // the paper's examples name a deliberation by its task
	}
	open := verb == "open" || verb == "start" || verb == "propose"
	if open && id == "" {
		id = b.provisional("deliberation", seq) // the reference Coordinator names it in its response
	}
	d := b.delibs[id]
	if d == nil && !open {
		d = b.bindDeliberation(id)
	}
	if d == nil {
		d = &Deliberation{ID: id, Seq: seq, Votes: []Vote{}, Outcome: "pending"}
		b.delibs[id] = d
		b.t.Deliberations = append(b.t.Deliberations, d)
	}
	switch verb {
	case "open", "start", "propose":
		d.Rule = str(p, "rule")
		d.Task = b.bindTask(str(p, "task_id"), r.From)
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
		d.Closed = true
		d.Outcome = outcome(d)
		d.Recorded = firstNonEmpty(str(p, "outcome"), str(p, "result"))
		return fmt.Sprintf("%s closed deliberation %s: recorded %s, rule gives %s", r.From, d.ID, orDash(d.Recorded), d.Outcome)
	}
	return fmt.Sprintf("%s: deliberation.%s", r.From, verb)
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

// Timeline finishes the replay: whispers nobody answered take their default, deliberations
// are checked against their recorded outcome, and the §9.3 questions are answered.
func (b *Builder) Timeline() *Timeline {
	if len(b.bound) > 0 {
		// Events and findings recorded under a provisional key take the id it was bound to.
		for i := range b.t.Events {
			if id, ok := b.bound[b.t.Events[i].Task]; ok {
				b.t.Events[i].Task = id
			}
		}
		for i := range b.t.Findings {
			if id, ok := b.bound[b.t.Findings[i].Task]; ok {
				b.t.Findings[i].Task = id
			}
		}
	}
	ids := make([]string, 0, len(b.tasks))
	for id := range b.tasks {
		if id != "" && (b.only == "" || id == b.only) {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		a, c := b.tasks[ids[i]], b.tasks[ids[j]]
		if (a.CreatedSeq == nil) != (c.CreatedSeq == nil) {
			return a.CreatedSeq != nil
		}
		if a.CreatedSeq != nil && *a.CreatedSeq != *c.CreatedSeq {
			return *a.CreatedSeq < *c.CreatedSeq
		}
		return ids[i] < ids[j]
	})
	b.t.Tasks = b.t.Tasks[:0]
	for _, id := range ids {
		t := b.tasks[id]
		for _, w := range t.Whispers {
			if w.Outcome == "open" && w.Default != "" {
				w.Outcome, w.Answer = "default_applied", w.Default
				b.find(Info, CodeWhisperDefaulted, w.Seq, id, "whisper %q was not answered in the chain: its default %q applies", w.Question, w.Default)
			}
		}
		b.t.Tasks = append(b.t.Tasks, t)
	}
	for _, d := range b.t.Deliberations {
		if d.Recorded == "" && len(d.Votes) > 0 && !d.Closed {
			b.find(Warning, CodeDeliberationOpen, d.Seq, "", "deliberation %s has %d vote(s) and no recorded outcome; the rule gives %s", d.ID, len(d.Votes), d.Outcome)
		} else if d.Recorded != "" && d.Recorded != d.Outcome && d.Outcome != "pending" {
			b.find(Impossible, "deliberation_outcome_mismatch", d.Seq, "", "deliberation %s records %s but its rule %s over the votes gives %s", d.ID, d.Recorded, d.Rule, d.Outcome)
		}
	}
	if b.only != "" {
		// Events and findings of tasks whose id never became known are not the filtered task's.
		b.t.Events = slices.DeleteFunc(b.t.Events, func(ev Event) bool { return provisionalKey(ev.Task) })
		b.t.Findings = slices.DeleteFunc(b.t.Findings, func(f Finding) bool { return provisionalKey(f.Task) })
	}
	sort.SliceStable(b.t.Findings, func(i, j int) bool { return b.t.Findings[i].Seq < b.t.Findings[j].Seq })
	b.t.Answers = b.answers()
	return &b.t
}

// provisional returns the key of an object the record creates without carrying the id the
// Coordinator gave it, and queues it for binding.
func (b *Builder) provisional(kind string, seq uint64) string {
	key := fmt.Sprintf("(%s of seq %d)", kind, seq)
	b.unbound[kind] = append(b.unbound[kind], key)
	b.provSeq[key] = seq
	return key
}

// anchor is a Coordinator-assigned id the replay has bound, by its ULID, and the seq of the
// record that created it.
type anchor struct {
	seq  uint64
	ulid string
}

// ulidOf returns the ULID of a Coordinator id ("tsk_01HF…", "dlb_…", "art_…", "hnd_…"), ""
// when it is not one. The reference Coordinator draws every kind of id from one ULID factory,
// so its ids sort in the order it created them (a ULID leads with its time).
func ulidOf(id string) string {
	_, u, ok := strings.Cut(id, "_")
	if !ok || len(u) != 26 {
		return ""
	}
	for _, c := range u {
		if !strings.ContainsRune("0123456789ABCDEFGHJKMNPQRSTVWXYZ", c) {
			return ""
		}
	}
	return u
}

// pick chooses the unbound object of kind that id names: one whose creation fits id's place
// among the Coordinator ids already bound (ids created before it sort before it, those created
// after it sort after it), preferring one prefer accepts, else the oldest. "" when none fits.
func (b *Builder) pick(kind, id string, prefer func(key string) bool) string {
	u := ulidOf(id)
	// The window of creation seqs id's place allows: no later than any bound id that sorts at
	// or after it was created, no earlier than any that sorts at or before it.
	lo, hi := uint64(0), uint64(math.MaxUint64)
	if u != "" {
		for _, a := range b.anchors {
			if a.ulid <= u {
				lo = max(lo, a.seq)
			}
			if a.ulid >= u {
				hi = min(hi, a.seq)
			}
		}
	}
	var fits []string
	for _, key := range b.unbound[kind] {
		if s := b.provSeq[key]; lo <= s && s <= hi {
			fits = append(fits, key)
		}
	}
	if len(fits) == 0 {
		return ""
	}
	choice := fits[0]
	if prefer != nil {
		for _, key := range fits {
			if prefer(key) {
				choice = key
				break
			}
		}
	}
	b.takeUnbound(kind, choice)
	if u != "" {
		b.anchors = append(b.anchors, anchor{seq: b.provSeq[choice], ulid: u})
	}
	return choice
}

// takeUnbound removes key from the unbound queue of kind.
func (b *Builder) takeUnbound(kind, key string) {
	q := b.unbound[kind]
	for i, k := range q {
		if k == key {
			b.unbound[kind] = append(q[:i:i], q[i+1:]...)
			return
		}
	}
}

// bindTask returns the task id a record names, first binding an id the chain never created to
// a task created without one (the reference Coordinator's task.create, escalate.raise and
// control.supersede: the id is in the response, not in the chain). The oldest unbound task the
// sender created or is assigned is taken, else the oldest unbound task; the task is marked
// id_inferred.
func (b *Builder) bindTask(id, from string) string {
	if id == "" || b.tasks[id] != nil {
		return id
	}
	pick := b.pick("task", id, func(k string) bool {
		t := b.tasks[k]
		return t != nil && (t.CreatedBy == from || slices.Contains(t.Assignees, from))
	})
	if pick == "" {
		return id
	}
	t := b.tasks[pick]
	t.ID, t.IDInferred = id, true
	rekey(b.tasks, pick, id)
	rekey(b.taskLatest, pick, id)
	rekey(b.lastWhisp, pick, id)
	b.bound[pick] = id // events and findings: renamed once, in Timeline
	for _, d := range b.t.Deliberations {
		if d.Task == pick {
			d.Task = id
		}
	}
	for _, h := range b.handoffs {
		for i := range h.Tasks {
			if h.Tasks[i] == pick {
				h.Tasks[i] = id
			}
		}
	}
	return id
}

// pickIf is pick for a non-empty id.
func (b *Builder) pickIf(kind, id string) string {
	if id == "" {
		return ""
	}
	return b.pick(kind, id, nil)
}

// bindDeliberation binds a deliberation id the chain never opened to the oldest open without one.
func (b *Builder) bindDeliberation(id string) *Deliberation {
	if id == "" {
		return nil
	}
	key := b.pick("deliberation", id, nil)
	if key == "" {
		return nil
	}
	d := b.delibs[key]
	d.ID, d.IDInferred = id, true
	rekey(b.delibs, key, id)
	return d
}

// rekey moves the value m holds under from to to, when it holds one.
func rekey[V any](m map[string]V, from, to string) {
	if v, ok := m[from]; ok {
		delete(m, from)
		m[to] = v
	}
}

// whisper finds the whisper an answer or a lapse names: by its id, by the ask's envelope id,
// by binding an unknown id to the oldest ask without one, else the task's last whisper.
func (b *Builder) whisper(id, replyTo, taskID string) *Whisper {
	for _, k := range []string{id, replyTo} {
		if w := b.whispers[k]; k != "" && w != nil {
			if w.key != "" {
				b.takeUnbound("whisper", w.key)
			}
			return w
		}
	}
	if key := b.pickIf("whisper", id); key != "" {
		w := b.whispers[key]
		w.key = ""
		rekey(b.whispers, key, id)
		return w
	}
	return b.lastWhisp[taskID]
}

// handoff finds the handoff an accept or decline names (binding an unknown id to the oldest
// proposal without one), else the last one.
func (b *Builder) handoff(id string) *Handoff {
	if h := b.handoffIDs[id]; id != "" && h != nil {
		return h
	}
	if key := b.pickIf("handoff", id); key != "" {
		h := b.handoffIDs[key]
		h.ID = id
		rekey(b.handoffIDs, key, id)
		return h
	}
	if n := len(b.handoffs); n > 0 {
		return b.handoffs[n-1]
	}
	return nil
}

// taskRefs reads a list of task ids given as strings or as objects {task_id, …}.
func taskRefs(o *canonical.Object, key string) []string {
	if o == nil {
		return nil
	}
	v, _ := o.Get(key)
	arr, _ := v.([]canonical.Value)
	var out []string
	for _, e := range arr {
		switch x := e.(type) {
		case string:
			out = append(out, x)
		case *canonical.Object:
			if id := str(x, "task_id"); id != "" {
				out = append(out, id)
			}
		}
	}
	return out
}

// options reads a whisper's options: strings, or the reference Coordinator's {id, label} objects.
func options(p *canonical.Object) []string {
	v, _ := p.Get("options")
	arr, _ := v.([]canonical.Value)
	var out []string
	for _, e := range arr {
		switch x := e.(type) {
		case string:
			out = append(out, x)
		case *canonical.Object:
			out = append(out, firstNonEmpty(str(x, "id"), str(x, "label")))
		}
	}
	return out
}

// value renders a member as text: a string as is, anything else as canonical JSON.
func value(o *canonical.Object, key string) string {
	if o == nil {
		return ""
	}
	v, ok := o.Get(key)
	if !ok || v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return show2(v)
}

func msWord(ms string) string {
	if ms == "" {
		return ""
	}
	return ms + " ms after the ask"
}

// normDigest writes a bare hex SHA-256 (the reference Coordinator's contentHash) as Evident's
// "sha256:<hex>".
func normDigest(h string) string {
	if len(h) == 64 && !strings.Contains(h, ":") {
		return "sha256:" + strings.ToLower(h)
	}
	return h
}

func assignedTo(t *Task) string {
	if len(t.Assignees) == 0 {
		return ""
	}
	return " for " + strings.Join(t.Assignees, ", ")
}

// Digest is the digest Evident gives an artefact's content: "sha256:" + hex(SHA-256(JCS(content))).
func Digest(v canonical.Value) string {
	c, err := canonical.Encode(v)
	if err != nil {
		return ""
	}
	h := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(h[:])
}

func show2(v canonical.Value) string {
	c, err := canonical.Encode(v)
	if err != nil {
		return ""
	}
	return string(c)
}

func str(o *canonical.Object, key string) string {
	if o == nil {
		return ""
	}
	v, ok := o.Get(key)
	if !ok {
		return ""
	}
	switch x := v.(type) {
	case string:
		return x
	case canonical.Number:
		return string(x)
	}
	return ""
}

func num(o *canonical.Object, key string) int64 {
	if o == nil {
		return 0
	}
	v, _ := o.Get(key)
	if n, ok := v.(canonical.Number); ok {
		i, _ := n.Int64()
		return i
	}
	return 0
}

func strs(o *canonical.Object, key string) []string {
	if o == nil {
		return nil
	}
	v, _ := o.Get(key)
	arr, ok := v.([]canonical.Value)
	if !ok {
		return nil
	}
	var out []string
	for _, e := range arr {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func firstList(o *canonical.Object, key string) []string {
	if l := strs(o, key); len(l) > 0 {
		return l
	}
	if s := str(o, key); s != "" {
		return []string{s}
	}
	return nil
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func appendOnce(l []string, s string) []string {
	if s == "" {
		return l
	}
	for _, x := range l {
		if x == s {
			return l
		}
	}
	return append(l, s)
}
