package replay

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile/chap"
)

// Builder reads a chain's records in order and builds its Timeline.
type Builder struct {
	t          Timeline
	only       string // task filter
	roles      map[string]string
	left       map[string]string // role of a member that left (a re-join without a role gets it back)
	lastTS     map[string]time.Time
	mode       string
	tasks      map[string]*Task
	byID       map[string]*artefact // artefact id → latest version
	byLogical  map[string]*artefact // logical id → latest version
	taskLatest map[string]*artefact // task → latest artefact
	delibs     map[string]*Deliberation
	whispers   map[string]*Whisper // whisper id (params.whisper_id, else the ask's envelope id) → whisper
	lastWhisp  map[string]*Whisper // task → last whisper asked about it
	handoffs   []*Handoff
	handoffIDs map[string]*Handoff

	ids         *Bindings       // the Coordinator-assigned ids the log determines
	scan        *Index          // set in an Index's first pass: creations and namings go there
	at, prevAt  int64           // the Coordinator's arrival time (Unix ms) of this record and the one before; -1 unknown
	fromGenesis bool            // the chain starts at the workspace's first record
	noted       map[string]bool // notes already given, by code and object
	noEvents    bool            // FindingsOnly: the timeline keeps no events
	sink        func(Event)     // EachEvent: each event is given to it, not kept
	interned    map[string]string
	lists       map[string][]string // the lists b.appendOnce keeps, by their strings
	key         []byte              // b.appendOnce's key, reused
}

// call is one record being replayed: its seq, the record, its params and the event it makes.
type call struct {
	seq uint64
	r   *chap.Record
	p   *canonical.Object
	ev  *Event
}

// New starts a timeline of chain with the bindings of its first pass (nil: none, so every id
// the Coordinator assigned is reported as not determined); task, when not "", keeps only
// that task's events (the whole chain is still read, so roles, modes and artefacts are known).
func New(chain, task string, ids *Bindings) *Builder {
	if ids == nil {
		ids = &Bindings{}
	}
	return &Builder{t: Timeline{Chain: chain, Task: task, Events: []Event{}, Tasks: []*Task{}, Findings: []Finding{}, NotEvaluated: []Note{}},
		only: task, roles: map[string]string{}, left: map[string]string{}, lastTS: map[string]time.Time{}, tasks: map[string]*Task{},
		byID: map[string]*artefact{}, byLogical: map[string]*artefact{}, taskLatest: map[string]*artefact{},
		delibs: map[string]*Deliberation{}, whispers: map[string]*Whisper{}, lastWhisp: map[string]*Whisper{},
		handoffIDs: map[string]*Handoff{}, ids: ids, at: -1, prevAt: -1, noted: map[string]bool{}, interned: map[string]string{}, lists: map[string][]string{}}
}

// Replay replays recs, the records of chain from its first (seq 0) in order, in both passes.
func Replay(chain, task string, recs []*chap.Record) *Timeline {
	ix := NewIndex()
	for i, r := range recs {
		ix.Add(uint64(i), r)
	}
	b := New(chain, task, ix.Bind())
	for i, r := range recs {
		b.Add(uint64(i), r)
	}
	return b.Timeline()
}

// ReplayRaw is Replay of records given as the bytes the chain holds (each parsed with
// chap.Parse); an error names the first record that does not parse.
func ReplayRaw(chain, task string, raws [][]byte) (*Timeline, error) {
	recs := make([]*chap.Record, len(raws))
	for i, raw := range raws {
		r, err := chap.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		recs[i] = r
	}
	return Replay(chain, task, recs), nil
}

func (b *Builder) find(sev Severity, code string, seq uint64, task, format string, args ...any) {
	b.findOn(sev, code, seq, task, "", format, args...)
}

// findOn records a finding with the records it rests on.
func (b *Builder) findOn(sev Severity, code string, seq uint64, task, basis, format string, args ...any) {
	if b.scan != nil || (b.only != "" && task != b.only && task != "" && !provisionalKey(task)) {
		return
	}
	b.t.Findings = append(b.t.Findings, Finding{Severity: sev, Code: code, Seq: seq, Task: task, Detail: fmt.Sprintf(format, args...), Basis: basis})
}

// note records, once per code and object, something the log does not determine.
func (b *Builder) note(seq uint64, task, code, object, format string, args ...any) {
	if b.scan != nil || (b.only != "" && task != b.only && task != "") {
		return
	}
	k := code + "\x00" + object
	if b.noted[k] {
		return
	}
	b.noted[k] = true
	b.t.NotEvaluated = append(b.t.NotEvaluated, Note{Seq: seq, Task: task, Code: code, Detail: fmt.Sprintf(format, args...)})
}

// intern returns the one copy of s the builder keeps.
func (b *Builder) intern(s string) string {
	if v, ok := b.interned[s]; ok {
		return v
	}
	s = strings.Clone(s)
	b.interned[s] = s
	return s
}

// maxShared bounds how many strings share (and lists of one string appendOnce) keep: a chain's
// few kinds, statuses, modes and members are kept once each, and a chain whose values never
// repeat costs no more than one entry each up to the bound.
const maxShared = 1 << 14

// share returns the one copy of s the builder keeps, as intern does, while it keeps fewer
// than maxShared; past that, s itself. For values that repeat across tasks (kinds, statuses,
// modes, assignees): a hundred thousand tasks then hold a few strings between them.
func (b *Builder) share(s string) string {
	if v, ok := b.interned[s]; ok {
		return v
	}
	if len(b.interned) >= maxShared {
		return s
	}
	return b.intern(s)
}

// appendOnce is appendOnce, except that the list it returns is one the builder keeps for
// every task with that list (its length and capacity equal, so that an append to it makes a
// new one), while it keeps fewer than maxShared: most tasks have one or two assigners,
// assignees, acceptors or producers, among a chain's few members. Nothing in the replay, nor
// any reader of a Timeline, writes an element of a list in place.
func (b *Builder) appendOnce(l []string, s string) []string {
	if s == "" || slices.Contains(l, s) {
		return l
	}
	// The key: each string, then s, as a uvarint length and its bytes.
	b.key = b.key[:0]
	for _, x := range l {
		b.key = binary.AppendUvarint(b.key, uint64(len(x)))
		b.key = append(b.key, x...)
	}
	b.key = binary.AppendUvarint(b.key, uint64(len(s)))
	b.key = append(b.key, s...)
	if shared, ok := b.lists[string(b.key)]; ok {
		return shared
	}
	if len(b.lists) >= maxShared {
		return append(l, s)
	}
	shared := make([]string, len(l)+1)
	for i, x := range l {
		shared[i] = b.share(x)
	}
	shared[len(l)] = b.share(s)
	b.lists[string(b.key)] = shared
	return shared
}

func (b *Builder) task(id string) *Task {
	t := b.tasks[id]
	if t == nil {
		t = &Task{ID: id, Status: "unknown"}
		b.tasks[id] = t
	}
	return t
}

// Add reads the record at seq. Records must come in chain order. Add may set the record's
// From, Method and key id to equal strings the builder keeps.
func (b *Builder) Add(seq uint64, r *chap.Record) {
	if b.t.Entries == 0 {
		b.fromGenesis = seq == 0 && (r.Seq == nil || *r.Seq == 0)
	}
	b.t.Entries++
	b.prevAt, b.at = b.at, arrivalMs(r.Meta)
	// The few senders, methods and key ids of a chain are kept once each, not as views of
	// every record's buffer (which would keep each record alive with them).
	r.From, r.Method = b.intern(r.From), b.intern(r.Method)
	if r.Sig != nil {
		r.Sig.Kid = b.intern(r.Sig.Kid)
	}
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
	if ev.Task != "" && r.Method != "task.create" {
		b.known(seq, ev.Task, r.Method)
	}
	if PrivilegedMethod(r.Method) || MemberMethod(r.Method) {
		role, member := b.roles[r.From]
		if !member {
			b.findOn(Impossible, CodeUnknownPrivileged, seq, ev.Task, b.membershipBasis(r.From, seq), "%s called %s but is not a member of the workspace (never joined, or left)", r.From, r.Method)
		} else if PrivilegedMethod(r.Method) && role != chap.RoleAdmin {
			b.findOn(Impossible, CodeUnprivileged, seq, ev.Task, b.membershipBasis(r.From, seq), "%s (role %q) called privileged %s, which needs the admin role", r.From, role, r.Method)
		}
	}
	c := &call{seq: seq, r: r, p: p, ev: &ev}
	if h := lookup(r.Method); h != nil {
		ev.Summary = h(b, c)
	} else {
		ev.Summary = fmt.Sprintf("%s called %s", orDash(r.From), r.Method)
	}
	b.event(ev)
}

// membershipBasis says what a membership finding rests on.
func (b *Builder) membershipBasis(who string, seq uint64) string {
	if !b.fromGenesis {
		return fmt.Sprintf("the joins and leaves in this chain up to seq %d (it does not start at the workspace's first record)", seq)
	}
	return fmt.Sprintf("every participant.join and participant.leave from seq 0 to seq %d; %s's role is the one its first join gave", seq, who)
}

// provisionalKey reports whether a task key is one of a task whose id is not known: its events
// are kept until the end of the replay, when the filter is applied again.
func provisionalKey(task string) bool { return strings.HasPrefix(task, "(") }

// FindingsOnly makes the timeline keep no events (Timeline.Events stays empty): what the chain
// says of its tasks, findings and what was not evaluated, in memory that grows with the tasks
// and findings, not with the entries (evident verify's story of a long chain).
func (b *Builder) FindingsOnly() { b.noEvents = true }

// EachEvent makes the builder give each event of the timeline to f as it is made, in chain
// order, instead of keeping it (Timeline.Events stays empty): a report that writes every entry
// of a long chain needs no more memory than FindingsOnly. Without a task filter only (New with
// task ""): a filtered timeline drops events of tasks whose id never became known at the end.
func (b *Builder) EachEvent(f func(Event)) { b.sink = f }

func (b *Builder) event(ev Event) {
	if b.scan != nil || b.noEvents {
		return
	}
	if b.sink != nil && b.only == "" {
		b.sink(ev)
		return
	}
	if b.only != "" && ev.Task != b.only && !provisionalKey(ev.Task) && !b.touches(ev) {
		return
	}
	b.t.Events = append(b.t.Events, ev)
}

// touches reports whether a task-less event concerns the filtered task (a handoff listing it).
func (b *Builder) touches(ev Event) bool {
	if n := len(b.handoffs); n > 0 {
		h := b.handoffs[n-1]
		if h.Seq == ev.Seq && slices.Contains(h.Tasks, b.only) {
			return true
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

// Timeline finishes the replay: whispers nobody answered take their default, deliberations
// are checked against their recorded outcome, and the §9.3 questions are answered. The
// timeline it returns does not keep the builder alive.
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
		switch {
		case d.Recorded == "" && len(d.Votes) > 0 && !d.Closed:
			b.find(Warning, CodeDeliberationOpen, d.Seq, "", "deliberation %s has %d vote(s) and no recorded outcome; the rule gives %s", d.ID, len(d.Votes), d.Outcome)
		case d.Recorded != "" && d.Recorded != d.Outcome && d.Outcome != "pending":
			b.findOn(Impossible, CodeOutcomeMismatch, d.Seq, "", d.basis(), "deliberation %s records %s but its rule %s over the votes gives %s", d.ID, d.Recorded, d.Rule, d.Outcome)
		}
	}
	if b.only != "" {
		// Events and findings of tasks whose id never became known are not the filtered task's.
		b.t.Events = slices.DeleteFunc(b.t.Events, func(ev Event) bool { return provisionalKey(ev.Task) })
		b.t.Findings = slices.DeleteFunc(b.t.Findings, func(f Finding) bool { return provisionalKey(f.Task) })
	}
	sort.SliceStable(b.t.Findings, func(i, j int) bool { return b.t.Findings[i].Seq < b.t.Findings[j].Seq })
	sort.SliceStable(b.t.NotEvaluated, func(i, j int) bool { return b.t.NotEvaluated[i].Seq < b.t.NotEvaluated[j].Seq })
	b.t.Answers = b.answers()
	// A copy: a pointer into b would keep the whole builder (its maps of tasks, artefacts,
	// whispers, interned strings) alive as long as the timeline is.
	tl := b.t
	return &tl
}
