// Package replay rebuilds the story a CHAP 0.3 evidence chain tells: the forensic timeline of
// `evident replay`. It reads records already admitted to a chain — it checks no
// link and no signature; that is the verifier's job — and reconstructs, per task, who created,
// assigned, accepted and completed it, review requests, decide.approve / decide.reject /
// decide.override with the RFC 6902 diff applied to the base artefact, rationales, tags and
// policy references, abstentions and escalations, whispers and the defaults that applied,
// handoffs, deliberation votes and the rule's outcome, and mode changes. It answers the eight
// questions of the CHAP paper's §9.3 for the chain (or one task).
//
// Histories that cannot have happened under the CHAP rules are reported as Findings with a
// stable code (docs/profiles/chap.md, "Replay"): a task completed that was never assigned, an
// approval whose artefact digest differs from what was sent for review, a privileged call by a
// member without the admin role, a diff that does not apply to its base artefact, a decision
// whose stated result differs from its diff applied to the base. Timestamps going backwards
// for one sender are a warning, not an impossibility (clocks drift; the chain order stands).
package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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
	ID       string `json:"id"`
	Seq      uint64 `json:"seq"`
	Rule     string `json:"rule"`
	Quorum   int64  `json:"quorum,omitempty"`
	Voters   int    `json:"voters,omitempty"`
	Votes    []Vote `json:"votes"`
	Outcome  string `json:"outcome"`            // approved, rejected, vetoed, pending
	Recorded string `json:"recorded,omitempty"` // the outcome the chain records, if any
}

// Handoff is a transfer of work.
type Handoff struct {
	Seq      uint64   `json:"seq"`
	From     string   `json:"from"`
	To       []string `json:"to"`
	Tasks    []string `json:"tasks,omitempty"`
	Note     string   `json:"note,omitempty"`
	Accepted string   `json:"accepted_by,omitempty"`
}

// Task is one task's lifecycle.
type Task struct {
	ID            string     `json:"id"`
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
	whispers   map[string]*Whisper // whisper id (the ask's envelope id) → whisper
	lastWhisp  map[string]*Whisper // task → last open whisper
	handoffs   []*Handoff
}

// New starts a timeline of chain; task, when not "", keeps only that task's events (the
// whole chain is still read, so roles, modes and artefacts are known).
func New(chain, task string) *Builder {
	return &Builder{t: Timeline{Chain: chain, Task: task, Events: []Event{}, Tasks: []*Task{}, Findings: []Finding{}},
		only: task, roles: map[string]string{}, lastTS: map[string]time.Time{}, tasks: map[string]*Task{},
		byID: map[string]*artefact{}, byLogical: map[string]*artefact{}, taskLatest: map[string]*artefact{},
		delibs: map[string]*Deliberation{}, whispers: map[string]*Whisper{}, lastWhisp: map[string]*Whisper{}}
}

// PrivilegedMethod reports whether a CHAP method is privileged (the paper's §6.8 Control
// commands and the mode, policy and workspace-configuration changes of §8.2): only a member
// whose role is admin may call it (docs/profiles/chap.md, "Replay").
func PrivilegedMethod(m string) bool {
	switch {
	case strings.HasPrefix(m, "control."), strings.HasPrefix(m, "mode."), strings.HasPrefix(m, "modes."),
		strings.HasPrefix(m, "policy."):
		return true
	}
	switch m {
	case "workspace.mode", "workspace.set_mode", "workspace.update", "workspace.policy":
		return true
	}
	return false
}

func (b *Builder) find(sev Severity, code string, seq uint64, task, format string, args ...any) {
	if b.only != "" && task != b.only && task != "" {
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
	if PrivilegedMethod(r.Method) {
		role, member := b.roles[r.From]
		if !member {
			b.find(Impossible, CodeUnknownPrivileged, seq, ev.Task, "%s called privileged %s but never joined the workspace", r.From, r.Method)
		} else if role != chap.RoleAdmin {
			b.find(Impossible, CodeUnprivileged, seq, ev.Task, "%s (role %q) called privileged %s, which needs the admin role", r.From, role, r.Method)
		}
	}
	ev.Summary = b.apply(seq, r, p, &ev)
	b.event(ev)
}

func (b *Builder) event(ev Event) {
	if b.only != "" && ev.Task != b.only && !b.touches(ev) {
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

// apply records a method's effect and returns the event's summary.
func (b *Builder) apply(seq uint64, r *chap.Record, p *canonical.Object, ev *Event) string {
	taskID := ev.Task
	switch m := r.Method; {
	case m == "participant.join":
		uri := firstNonEmpty(str(p, "uri"), str(p, "participant"), r.From)
		if _, known := b.roles[uri]; !known {
			b.roles[uri] = str(p, "role")
		}
		if uri != r.From {
			return fmt.Sprintf("%s admitted %s as %s", r.From, uri, orDash(b.roles[uri]))
		}
		return fmt.Sprintf("%s joined as %s", uri, orDash(b.roles[uri]))
	case m == "participant.rotate_key":
		return fmt.Sprintf("%s rotated key %s", r.From, str(p, "old_kid"))
	case m == "participant.revoke_key":
		return fmt.Sprintf("%s revoked key %s of %s", r.From, str(p, "kid"), firstNonEmpty(str(p, "participant"), r.From))
	case m == "participant.leave":
		return r.From + " left"
	case m == "workspace.create":
		if md := str(p, "mode"); md != "" {
			b.setMode(seq, r, md)
		}
		return fmt.Sprintf("%s created workspace %s (profiles %s, mode %s)", r.From, firstNonEmpty(str(p, "workspace_id"), r.Workspace), strings.Join(strs(p, "profiles"), ", "), orDash(b.mode))
	case m == "workspace.mode" || m == "workspace.set_mode" || strings.HasPrefix(m, "mode.") || strings.HasPrefix(m, "modes.") || m == "control.set_mode_ceiling":
		md := firstNonEmpty(str(p, "mode"), str(p, "to"), str(p, "ceiling"))
		prev := b.mode
		b.setMode(seq, r, md)
		return fmt.Sprintf("%s changed mode %s → %s", r.From, orDash(prev), orDash(md))
	case m == "task.create":
		t := b.task(taskID)
		if t.CreatedSeq == nil {
			s := seq
			t.CreatedSeq = &s
		}
		t.Kind, t.CreatedBy, t.Status, t.Mode = str(p, "kind"), r.From, "created", b.mode
		t.PolicyRefs = append(t.PolicyRefs, strs(p, "policy_refs")...)
		if a, ok := p.Object("artefact"); ok {
			b.artefact(seq, taskID, r, a)
		}
		return fmt.Sprintf("%s created task %s (%s)", r.From, taskID, orDash(t.Kind))
	case m == "task.assign":
		t := b.known(seq, taskID, m)
		who := firstNonEmpty(str(p, "assignee"), strings.Join(strs(p, "assignees"), ", "), str(p, "to"))
		t.AssignedBy = appendOnce(t.AssignedBy, r.From)
		t.Assignees = appendOnce(t.Assignees, who)
		t.assigned, t.Status = true, "assigned"
		return fmt.Sprintf("%s assigned %s to %s", r.From, taskID, orDash(who))
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
		if s := str(p, "status"); s != "" {
			t.Status = s
			if s == "in_progress" && t.assigned {
				t.AcceptedBy = appendOnce(t.AcceptedBy, r.From)
			}
		}
		return fmt.Sprintf("%s updated %s: %s", r.From, taskID, orDash(str(p, "status")))
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
		rev := firstNonEmpty(str(p, "reviewer"), strings.Join(strs(p, "reviewers"), ", "))
		t.Reviewers = appendOnce(t.Reviewers, rev)
		if a := b.base(taskID, p); a != nil {
			t.reviewDigest = a.digest
		}
		if h := str(p, "content_hash"); h != "" {
			t.reviewDigest = h
		}
		t.Status = "in_review"
		return fmt.Sprintf("%s requested review of %s by %s", r.From, orDash(str(p, "artefact_id")), orDash(rev))
	case m == "decide.approve" || m == "decide.reject" || m == "decide.override":
		return b.decide(seq, r, p, strings.TrimPrefix(m, "decide."))
	case m == "abstain.declare" || m == "decide.abstain":
		t := b.known(seq, taskID, m)
		d := Decision{Seq: seq, Kind: "abstain", By: r.From, TS: ev.TS, Category: firstNonEmpty(str(p, "reason_category"), str(p, "category")), Rationale: firstNonEmpty(str(p, "rationale"), str(p, "reason"))}
		t.Abstentions = append(t.Abstentions, d)
		return fmt.Sprintf("%s abstained (%s)", r.From, orDash(d.Category))
	case strings.Contains(m, "escalat"):
		t := b.known(seq, taskID, m)
		d := Decision{Seq: seq, Kind: "escalate", By: r.From, TS: ev.TS, Rationale: firstNonEmpty(str(p, "reason"), str(p, "rationale")), Category: firstNonEmpty(str(p, "to"), strings.Join(strs(p, "to"), ", "))}
		t.Escalations = append(t.Escalations, d)
		t.Status = "escalated"
		return fmt.Sprintf("%s escalated %s to %s", r.From, taskID, orDash(d.Category))
	case m == "whisper.ask":
		w := &Whisper{Seq: seq, From: r.From, Question: str(p, "question"), Options: strs(p, "options"), Default: str(p, "default_if_no_answer"), Deadline: str(p, "deadline"), Outcome: "open"}
		b.whispers[r.ID] = w
		b.lastWhisp[taskID] = w
		if taskID != "" {
			t := b.known(seq, taskID, m)
			t.Whispers = append(t.Whispers, w)
		}
		return fmt.Sprintf("%s whispered to %s: %s", r.From, strings.Join(strs(p, "to"), ", "), w.Question)
	case m == "whisper.answer":
		w := b.whispers[firstNonEmpty(str(p, "whisper_id"), str(p, "in_reply_to"))]
		if w == nil {
			w = b.lastWhisp[taskID]
		}
		if w != nil {
			w.Answer, w.By = firstNonEmpty(str(p, "choice"), str(p, "answer")), r.From
			w.Outcome = "answered"
			if str(p, "status") == "defaulted" {
				w.Answer, w.Outcome = w.Default, "default_applied"
			}
		}
		return fmt.Sprintf("%s answered the whisper: %s", r.From, firstNonEmpty(str(p, "choice"), str(p, "answer")))
	case m == "handoff.propose":
		h := &Handoff{Seq: seq, From: r.From, To: firstList(p, "to"), Tasks: strs(p, "tasks"), Note: str(p, "note")}
		b.handoffs = append(b.handoffs, h)
		for _, id := range h.Tasks {
			t := b.known(seq, id, m)
			t.Handoffs = append(t.Handoffs, h)
		}
		if taskID != "" && len(h.Tasks) == 0 {
			h.Tasks = []string{taskID}
			t := b.known(seq, taskID, m)
			t.Handoffs = append(t.Handoffs, h)
		}
		return fmt.Sprintf("%s handed off %s to %s", r.From, strings.Join(h.Tasks, ", "), strings.Join(h.To, ", "))
	case m == "handoff.accept":
		if n := len(b.handoffs); n > 0 {
			b.handoffs[n-1].Accepted = r.From
		}
		return r.From + " accepted the handoff"
	case strings.HasPrefix(m, "deliberation."):
		return b.deliberate(seq, r, p, strings.TrimPrefix(m, "deliberation."))
	case strings.HasPrefix(m, "control."):
		t := ""
		if taskID != "" {
			tk := b.known(seq, taskID, m)
			tk.Controls = append(tk.Controls, fmt.Sprintf("%s by %s at seq %d", strings.TrimPrefix(m, "control."), r.From, seq))
			t = taskID
			if m == "control.supersede" {
				tk.Status = "superseded"
			}
		}
		return fmt.Sprintf("%s: %s %s %s", r.From, strings.TrimPrefix(m, "control."), t, str(p, "reason"))
	}
	return fmt.Sprintf("%s called %s", orDash(r.From), r.Method)
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
	taskID := str(p, "task_id")
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
		named := str(p, "content_hash")
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
	id := firstNonEmpty(str(p, "deliberation_id"), str(p, "task_id"))
	d := b.delibs[id]
	if d == nil {
		d = &Deliberation{ID: id, Seq: seq, Votes: []Vote{}, Outcome: "pending"}
		b.delibs[id] = d
		b.t.Deliberations = append(b.t.Deliberations, d)
	}
	switch verb {
	case "open", "start", "propose":
		d.Rule = str(p, "rule")
		d.Quorum = num(p, "quorum")
		d.Voters = len(strs(p, "voters"))
		return fmt.Sprintf("%s opened deliberation %s under rule %s", r.From, id, orDash(d.Rule))
	case "vote":
		v := Vote{Seq: seq, By: r.From, Vote: str(p, "vote"), Weight: num(p, "weight")}
		if v.Weight == 0 {
			v.Weight = 1
		}
		if bv, ok := p.Get("veto"); ok {
			v.Veto, _ = bv.(bool)
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
		return fmt.Sprintf("%s voted %s (weight %d)", r.From, v.Vote, v.Weight)
	case "close", "outcome", "decide", "resolve":
		d.Outcome = outcome(d)
		d.Recorded = firstNonEmpty(str(p, "outcome"), str(p, "result"))
		return fmt.Sprintf("%s closed deliberation %s: recorded %s, rule gives %s", r.From, id, orDash(d.Recorded), d.Outcome)
	}
	return fmt.Sprintf("%s: deliberation.%s", r.From, verb)
}

// outcome evaluates a deliberation rule (CHAP §6.7): any-one-approves, all-approve, quorum,
// weighted vote, weighted vote with veto.
func outcome(d *Deliberation) string {
	var yes, no, wy, wn int64
	veto := false
	for _, v := range d.Votes {
		switch v.Vote {
		case "approve", "yes":
			yes++
			wy += v.Weight
		case "reject", "no":
			no++
			wn += v.Weight
			if v.Veto {
				veto = true
			}
		}
	}
	voters := int64(d.Voters)
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

// Timeline finishes the replay: whispers nobody answered take their default, deliberations
// are checked against their recorded outcome, and the §9.3 questions are answered.
func (b *Builder) Timeline() *Timeline {
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
		if d.Recorded == "" && len(d.Votes) > 0 {
			b.find(Warning, CodeDeliberationOpen, d.Seq, "", "deliberation %s has %d vote(s) and no recorded outcome; the rule gives %s", d.ID, len(d.Votes), d.Outcome)
		} else if d.Recorded != "" && d.Recorded != d.Outcome && d.Outcome != "pending" {
			b.find(Impossible, "deliberation_outcome_mismatch", d.Seq, "", "deliberation %s records %s but its rule %s over the votes gives %s", d.ID, d.Recorded, d.Rule, d.Outcome)
		}
	}
	sort.SliceStable(b.t.Findings, func(i, j int) bool { return b.t.Findings[i].Seq < b.t.Findings[j].Seq })
	b.t.Answers = b.answers()
	return &b.t
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
