package replay

import "github.com/evident-log/evident/ledger/canonical"

// Finding codes: histories the chain records that cannot have happened, and warnings.
const (
	CodeCompletedUnassigned = "completed_unassigned"          // task.complete of a task never assigned (or never created)
	CodeApprovalDigest      = "approval_digest_mismatch"      // decide.approve names a digest other than the reviewed artefact's
	CodeUnprivileged        = "privileged_without_role"       // a privileged call by a member whose role is not admin
	CodeDiffNotApplicable   = "diff_not_applicable"           // a decision's diff does not apply to its base artefact
	CodeResultMismatch      = "decision_result_mismatch"      // a decision's result differs from diff(base)
	CodeArtefactHash        = "artefact_hash_mismatch"        // an artefact whose content_hash is not the digest of its content
	CodeUnknownTask         = "unknown_task"                  // a call naming a task never created (warning)
	CodeTSRegression        = "ts_not_monotonic"              // a sender's ts earlier than its previous record's (warning)
	CodeNoBase              = "diff_base_unknown"             // a diff whose base artefact is not in the chain (warning)
	CodeDeliberationOpen    = "deliberation_not_closed"       // a deliberation with votes but no outcome yet (warning)
	CodeWhisperDefaulted    = "whisper_default_applied"       // a whisper answered by nobody: its default applies (info)
	CodeRefusal             = "refused_request"               // a refusal recorded by the Coordinator (info)
	CodeUnknownPrivileged   = "privileged_unknown_member"     // a privileged call by a sender that never joined
	CodeOutcomeMismatch     = "deliberation_outcome_mismatch" // a recorded outcome the rule contradicts over the votes
)

// Not-evaluated codes: what the log alone does not determine, so the replay says nothing on it.
const (
	// NoteIDOpen: a Coordinator-assigned id is named, but which of several creations made it
	// the log does not determine.
	NoteIDOpen = "id_not_determined"
	// NoteIDScheme: the ids of one kind do not fit the Coordinator's id scheme (ULIDs in
	// creation order, no later than their creation's arrival); none of that kind is bound.
	NoteIDScheme = "id_scheme_not_followed"
	// NoteCheck: a check that needs what the creation recorded (its assignee, its artefact, its
	// rule) of an object whose creation is not determined.
	NoteCheck = "check_not_evaluated"
	// NoteNotFromGenesis: the chain does not start at the workspace's first record, so an id
	// it never creates may have been created before it.
	NoteNotFromGenesis = "not_from_genesis"
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
	// Basis names the records an impossible finding rests on, and how the ids in it were bound.
	Basis string `json:"basis,omitempty"`
}

// Note is something the replay did not evaluate because the log alone does not determine it,
// and why. It is never a finding.
type Note struct {
	Seq    uint64 `json:"seq"`
	Task   string `json:"task,omitempty"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
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
	ID         string   `json:"id"`
	IDInferred bool     `json:"id_inferred,omitempty"` // the Coordinator assigned the id; the log binds it to this open
	IDBasis    string   `json:"id_basis,omitempty"`    // what in the log binds it
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
	closedSeq  uint64
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
	ID         string `json:"id"`
	IDInferred bool   `json:"id_inferred,omitempty"` // the Coordinator assigned the id; the log binds it to its create
	// The replay's own flags sit in IDInferred's padding (a Task of at most 512 bytes takes one
	// size class less: a million-entry chain has a hundred thousand of them).
	assigned bool
	checked  bool   // its naming was looked up (known)
	never    bool   // the chain, from its first record, cannot have created it
	IDBasis  string `json:"id_basis,omitempty"` // what in the log binds it
	// CreatedAtOneOf lists the seqs of the creations that may have made this task when the log
	// does not determine which (its id is named, its creation not bound); its status is unknown.
	CreatedAtOneOf []uint64   `json:"created_at_one_of,omitempty"`
	Kind           string     `json:"kind,omitempty"`
	CreatedBy      string     `json:"created_by,omitempty"`
	CreatedSeq     *uint64    `json:"created_seq,omitempty"`
	AssignedBy     []string   `json:"assigned_by,omitempty"`
	Assignees      []string   `json:"assignees,omitempty"`
	AcceptedBy     []string   `json:"accepted_by,omitempty"`
	CompletedBy    string     `json:"completed_by,omitempty"`
	Status         string     `json:"status"`
	Mode           string     `json:"mode,omitempty"` // mode at creation
	PolicyRefs     []string   `json:"policy_refs,omitempty"`
	Producers      []string   `json:"producers,omitempty"` // who submitted artefacts (agent URI with version)
	Citations      []string   `json:"citations,omitempty"` // tools, sources, peers the artefacts cite
	Reviewers      []string   `json:"reviewers,omitempty"`
	Decisions      []Decision `json:"decisions,omitempty"`
	Abstentions    []Decision `json:"abstentions,omitempty"`
	Escalations    []Decision `json:"escalations,omitempty"`
	Whispers       []*Whisper `json:"whispers,omitempty"`
	Handoffs       []*Handoff `json:"handoffs,omitempty"`
	Controls       []string   `json:"controls,omitempty"` // pause, rollback, supersede … with who
	Routes         []string   `json:"routes,omitempty"`   // task.route, review.depth, escalate.auto: decisions the Coordinator's policy took
	Supersedes     string     `json:"supersedes,omitempty"`
	more           *taskMore  // what only some tasks have; nil for the rest
}

// taskMore is what the replay keeps of a task only when it has it: a digest sent for review,
// or why its creation is not known.
type taskMore struct {
	reviewDigest string
	reviewSeq    uint64 // the record what reviewDigest digests comes from
	openWhy      string // why its creation is not known, when it is not
}

// x returns t's taskMore, made on first use.
func (t *Task) x() *taskMore {
	if t.more == nil {
		t.more = &taskMore{}
	}
	return t.more
}

// review returns the digest sent for review of t and the record it comes from ("" none).
func (t *Task) review() (string, uint64) {
	if t.more == nil {
		return "", 0
	}
	return t.more.reviewDigest, t.more.reviewSeq
}

// setReview records the digest sent for review of t and the record it comes from.
func (t *Task) setReview(digest string, seq uint64) {
	t.x().reviewDigest, t.x().reviewSeq = digest, seq
}

// openWhy says why t's creation is not known ("" when it is).
func (t *Task) openWhy() string {
	if t.more == nil {
		return ""
	}
	return t.more.openWhy
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
	NotEvaluated  []Note          `json:"not_evaluated"`
	Answers       []Answer        `json:"answers"`
}

// Impossible counts the findings of severity Impossible.
func (t *Timeline) Impossible() int { return t.Count(Impossible) }

// Count counts the findings of severity sev.
func (t *Timeline) Count(sev Severity) int {
	n := 0
	for _, f := range t.Findings {
		if f.Severity == sev {
			n++
		}
	}
	return n
}

// artefact is one version of an artefact's content.
type artefact struct {
	content canonical.Value // nil when the chain carries only a hash
	digest  string
	seq     uint64 // the record it comes from
}
