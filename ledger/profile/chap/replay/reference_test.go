package replay

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
)

// ref is one request in the reference Coordinator's wire form: routing fields in params.
type ref struct {
	from, method string
	params       map[string]any
}

const refWS = "wsp_ref"

// refTimeline replays reqs (after a workspace.create and the joins of the cast) as the
// reference Coordinator's audit log records them.
func refTimeline(t *testing.T, task string, reqs []ref) *Timeline {
	t.Helper()
	return refTimelineAt(t, task, reqs, true)
}

// refTimelineAt is refTimeline with (arrivals) or without the entries' arrival times.
func refTimelineAt(t *testing.T, task string, reqs []ref, arrivals bool) *Timeline {
	t.Helper()
	prelude := []ref{
		{"human:owner", "workspace.create", map[string]any{"profiles": []string{"core/1.0", "review/1.0"}}},
		{"human:owner", "participant.join", map[string]any{"type": "human", "role": "admin"}},
		{"human:lead", "participant.join", map[string]any{"type": "human", "role": "participant"}},
		{"agent:drafter", "participant.join", map[string]any{"type": "agent"}},
		{"human:rev", "participant.join", map[string]any{"type": "human", "role": "reviewer"}},
		{"human:rev2", "participant.join", map[string]any{"type": "human", "role": "reviewer"}},
	}
	return Replay(refWS, task, refRecords(t, append(prelude, reqs...), arrivals))
}

// refRecords makes reqs the records of a reference Coordinator's audit log, with (arrivals) or
// without the entries' arrival times.
func refRecords(tb testing.TB, reqs []ref, arrivals bool) []*chap.Record {
	tb.Helper()
	recs := make([]*chap.Record, 0, len(reqs))
	for i, q := range reqs {
		p := map[string]any{"workspace": refWS, "from": q.from, "ts": ledger.Timestamp(t0.Add(time.Duration(i) * time.Second))}
		for k, v := range q.params {
			p[k] = v
		}
		env := map[string]any{"jsonrpc": "2.0", "id": fmt.Sprintf("01REF%03d", i), "method": q.method, "params": p}
		// The reference Coordinator's audit entry: its arrival time is one second per entry.
		entry := map[string]any{"seq": i, "arrived": msTime(arrivedAt(i)), "envelope": env}
		if !arrivals {
			entry = env
		}
		b, err := json.Marshal(entry)
		if err != nil {
			tb.Fatal(err)
		}
		r, err := chap.Parse(b)
		if err != nil {
			tb.Fatalf("%s: %v", q.method, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// arrivedAt is the Coordinator's arrival time (Unix ms) of the entry at seq in refTimeline.
func arrivedAt(seq int) int64 { return t0.UnixMilli() + 1000*int64(seq) }

// idAt is an id of the reference Coordinator's form (prefix + ULID) drawn n ms into the handling
// of the call recorded at seq in refTimeline, as its IdFactory draws them.
func idAt(prefix string, seq, n int) string {
	ms := arrivedAt(seq) - 500 + int64(n)
	var b [26]byte
	for i := 9; i >= 0; i-- {
		b[i] = crockford[ms&31]
		ms >>= 5
	}
	for i := 10; i < 26; i++ {
		b[i] = crockford[(seq*7+n*13+i)%32]
	}
	return prefix + string(b[:])
}

// coordinatorHash is the reference Coordinator's contentHash: bare hex SHA-256 of the JCS.
func coordinatorHash(v any) string {
	return strings.TrimPrefix(chapscenario.ContentDigest(v), "sha256:")
}

var refDraft = map[string]any{"body": "Refund of 100 EUR issued.", "refund_eur": 100}

func create(from, assignee string) ref {
	return ref{from, "task.create", map[string]any{"kind": "reply", "input": map[string]any{"ticket": 7}, "assignee": assignee}}
}

func findingCodes(tl *Timeline) []string {
	var out []string
	for _, f := range tl.Findings {
		if f.Severity != Info {
			out = append(out, f.Code)
		}
	}
	return out
}

// TestReferenceWireForm: every method the reference Coordinator records replays with its own
// semantics and no false finding; the impossible histories still are found.
func TestReferenceWireForm(t *testing.T) {
	// T1 is the id the Coordinator drew for the first task.create (seq 6), T2 one drawn later.
	T1, T2 := idAt("tsk_", 6, 0), idAt("tsk_", 7, 0)
	review := ref{"agent:drafter", "review.request", map[string]any{"task_id": T1, "artefact": refDraft, "to": []string{"human:rev", "human:rev2"}, "rule": "any_one_approves"}}
	tests := []struct {
		name  string
		reqs  []ref
		codes []string // non-info finding codes, in order
		check func(t *testing.T, tl *Timeline)
	}{
		{"create with assignee, update, complete by the assignee", []ref{
			create("human:lead", "agent:drafter"),
			{"agent:drafter", "task.update", map[string]any{"task_id": T1, "state": "in_progress", "progress_note": "drafting"}},
			{"agent:drafter", "task.complete", map[string]any{"task_id": T1, "output": map[string]any{"text": "done"}}},
		}, nil, func(t *testing.T, tl *Timeline) {
			tk := tl.Tasks[0]
			if tk.ID != T1 || !tk.IDInferred || tk.CreatedBy != "human:lead" || tk.Assignees[0] != "agent:drafter" || tk.AcceptedBy[0] != "agent:drafter" || tk.CompletedBy != "agent:drafter" || tk.Mode != "trial" {
				t.Fatalf("task %+v", tk)
			}
			if !strings.Contains(tl.Answers[0].Answer[0], "assigned by human:lead to agent:drafter") {
				t.Fatalf("§9.3 Q1 %q", tl.Answers[0].Answer)
			}
		}},
		{"completion of a task created without assignee (to = the Coordinator)", []ref{
			{"human:lead", "task.create", map[string]any{"kind": "reply", "to": "service:coordinator"}},
			{"agent:drafter", "task.complete", map[string]any{"task_id": T1}},
		}, []string{CodeCompletedUnassigned}, nil},
		{"two tasks: ids bound to the creates their senders made", []ref{
			create("human:lead", "agent:drafter"),
			create("human:owner", "human:rev"),
			{"human:rev", "task.update", map[string]any{"task_id": T2, "state": "in_progress"}},
			{"agent:drafter", "task.update", map[string]any{"task_id": T1, "state": "in_progress"}},
		}, nil, func(t *testing.T, tl *Timeline) {
			if tl.Tasks[0].ID != T1 || tl.Tasks[0].CreatedBy != "human:lead" || tl.Tasks[1].ID != T2 || tl.Tasks[1].CreatedBy != "human:owner" {
				t.Fatalf("tasks %+v %+v", tl.Tasks[0], tl.Tasks[1])
			}
		}},
		{"review, approval naming the reviewed digest", []ref{
			create("human:lead", "agent:drafter"), review,
			{"human:rev", "review.depth", map[string]any{"task_id": T1, "artefact_routing_hints": map[string]any{"model_id": "m1"}}},
			{"human:rev", "decide.approve", map[string]any{"task_id": T1, "approved_artefact_digest": coordinatorHash(refDraft), "comment": "ok", "tags": []string{"refund"}}},
		}, nil, func(t *testing.T, tl *Timeline) {
			tk := tl.Tasks[0]
			if len(tk.Reviewers) != 2 || tk.Status != "approved" || len(tk.Decisions) != 1 || tk.Decisions[0].Digest != chapscenario.ContentDigest(refDraft) || len(tk.Routes) != 1 {
				t.Fatalf("task %+v", tk)
			}
		}},
		{"approval naming another digest", []ref{
			create("human:lead", "agent:drafter"), review,
			{"human:rev", "decide.approve", map[string]any{"task_id": T1, "approved_artefact_digest": coordinatorHash(map[string]any{"body": "other"})}},
		}, []string{CodeApprovalDigest}, nil},
		{"reject with a revision request, then override of the pending artefact", []ref{
			create("human:lead", "agent:drafter"), review,
			{"human:rev", "decide.reject", map[string]any{"task_id": T1, "comment": "too generous", "request_revision": true}},
			{"agent:drafter", "review.request", map[string]any{"task_id": T1, "artefact": refDraft, "to": "human:rev"}},
			{"human:rev", "decide.override", map[string]any{"task_id": T1, "rationale": "replacement first", "policy_refs": []string{"refunds.v4"}, "intent_preserved": false,
				"diff": []any{map[string]any{"op": "replace", "path": "/body", "value": "Replacement sent."}, map[string]any{"op": "remove", "path": "/refund_eur"}}}},
		}, nil, func(t *testing.T, tl *Timeline) {
			tk := tl.Tasks[0]
			if len(tk.Decisions) != 2 || tk.Decisions[0].Kind != "reject" || tk.Decisions[1].Result != `{"body":"Replacement sent."}` || tk.Status != "overridden" {
				t.Fatalf("task %+v", tk)
			}
			if tl.Answers[3].Answer[0] == "the chain records nothing on this" {
				t.Fatalf("§9.3 Q4 %q", tl.Answers[3].Answer)
			}
		}},
		{"override whose diff does not apply", []ref{
			create("human:lead", "agent:drafter"), review,
			{"human:rev", "decide.override", map[string]any{"task_id": T1, "rationale": "r", "diff": []any{map[string]any{"op": "replace", "path": "/subject", "value": "x"}}}},
		}, []string{CodeDiffNotApplicable}, nil},
		{"abstain and escalate.raise to a new task", []ref{
			create("human:lead", "agent:drafter"), review,
			{"human:rev", "abstain.declare", map[string]any{"task_id": T1, "reason": "conflict of interest", "category": "conflict"}},
			{"human:lead", "escalate.raise", map[string]any{"original_task_id": T1, "reason": "needs a senior", "new_task": map[string]any{"assignee": "human:rev2", "kind": "senior-review", "input": map[string]any{}}}},
			{"human:rev2", "task.update", map[string]any{"task_id": T2, "state": "in_progress"}},
			{"human:rev2", "task.complete", map[string]any{"task_id": T2}},
		}, nil, func(t *testing.T, tl *Timeline) {
			if len(tl.Tasks) != 2 || tl.Tasks[0].Status != "escalated" || len(tl.Tasks[0].Abstentions) != 1 || tl.Tasks[0].Abstentions[0].Category != "conflict" ||
				tl.Tasks[1].ID != T2 || tl.Tasks[1].Supersedes != T1 || tl.Tasks[1].CompletedBy != "human:rev2" {
				t.Fatalf("tasks %+v %+v", tl.Tasks[0], tl.Tasks[1])
			}
			if tl.Answers[5].Answer[0] == "the chain records nothing on this" {
				t.Fatalf("§9.3 Q6 %q", tl.Answers[5].Answer)
			}
		}},
		{"whisper answered by option", []ref{
			create("human:lead", "agent:drafter"),
			{"agent:drafter", "whisper.ask", map[string]any{"to": "human:lead", "task_id": T1, "question": "Refund or replace?", "options": []any{map[string]any{"id": "refund"}, map[string]any{"id": "replace"}}, "deadline_ms": 60000, "default_if_lapsed": "refund"}},
			{"human:lead", "whisper.answer", map[string]any{"whisper_id": "art_01WHISPER", "answer_option": "replace"}},
		}, nil, func(t *testing.T, tl *Timeline) {
			w := tl.Tasks[0].Whispers[0]
			if w.Outcome != "answered" || w.Answer != "replace" || w.By != "human:lead" || len(w.Options) != 2 || w.Default != "refund" {
				t.Fatalf("whisper %+v", w)
			}
		}},
		{"whisper lapsed: the Coordinator's notification", []ref{
			create("human:lead", "agent:drafter"),
			{"agent:drafter", "whisper.ask", map[string]any{"to": []string{"human:lead"}, "task_id": T1, "question": "Refund?", "deadline_ms": 1000, "default_if_lapsed": "no"}},
			{"service:coordinator", "notify.message", map[string]any{"to": []string{"agent:drafter", "human:lead"}, "kind": "whisper_lapsed", "whisper_id": "art_01W", "task_id": T1, "default_applied": "no"}},
		}, nil, func(t *testing.T, tl *Timeline) {
			w := tl.Tasks[0].Whispers[0]
			if w.Outcome != "default_applied" || w.Answer != "no" || len(tl.Findings) != 1 || tl.Findings[0].Code != CodeWhisperDefaulted {
				t.Fatalf("whisper %+v, findings %+v", w, tl.Findings)
			}
		}},
		{"deliberation: open, comment, votes, close (the Coordinator computes the outcome)", []ref{
			create("human:lead", "agent:drafter"),
			{"human:owner", "deliberate.open", map[string]any{"task_id": T1, "rule": "quorum:2", "to": []string{"human:rev", "human:rev2", "human:lead"}, "question": "Ship it?"}},
			{"human:rev", "deliberate.comment", map[string]any{"deliberation_id": "dlb_01X", "comment": "fine by me"}},
			{"human:rev", "deliberate.vote", map[string]any{"deliberation_id": "dlb_01X", "vote": "yea"}},
			{"human:rev2", "deliberate.vote", map[string]any{"deliberation_id": "dlb_01X", "vote": "yea"}},
			{"human:lead", "deliberate.vote", map[string]any{"deliberation_id": "dlb_01X", "vote": "nay"}},
			{"human:owner", "deliberate.close", map[string]any{"deliberation_id": "dlb_01X"}},
		}, nil, func(t *testing.T, tl *Timeline) {
			d := tl.Deliberations[0]
			if d.ID != "dlb_01X" || !d.IDInferred || !d.Closed || d.Outcome != "approved" || len(d.Votes) != 3 || len(d.Comments) != 1 || d.Task != T1 {
				t.Fatalf("deliberation %+v", d)
			}
		}},
		{"deliberation with a veto", []ref{
			{"human:owner", "deliberate.open", map[string]any{"deliberation_id": "dlb_V", "rule": "weighted_vote_with_veto:1", "to": []string{"human:rev", "human:rev2"}, "veto": map[string]any{"human:rev2": true}}},
			{"human:rev", "deliberate.vote", map[string]any{"deliberation_id": "dlb_V", "vote": "yea"}},
			{"human:rev2", "deliberate.vote", map[string]any{"deliberation_id": "dlb_V", "vote": "nay", "veto_invoked": true}},
			{"human:owner", "deliberate.close", map[string]any{"deliberation_id": "dlb_V"}},
		}, nil, func(t *testing.T, tl *Timeline) {
			if d := tl.Deliberations[0]; d.Outcome != "rejected" {
				t.Fatalf("deliberation %+v", d)
			}
		}},
		{"deliberation vote by a non-member", []ref{
			{"human:owner", "deliberate.open", map[string]any{"deliberation_id": "dlb_N", "rule": "any_one_approves", "to": []string{"human:rev"}}},
			{"human:stranger", "deliberate.vote", map[string]any{"deliberation_id": "dlb_N", "vote": "yea"}},
			{"human:owner", "deliberate.close", map[string]any{"deliberation_id": "dlb_N"}},
		}, []string{CodeUnknownPrivileged}, nil},
		{"handoff proposed and accepted: the acceptor completes", []ref{
			create("human:lead", "agent:drafter"),
			{"agent:drafter", "handoff.propose", map[string]any{"to": "human:rev", "tasks": []any{map[string]any{"task_id": T1, "status_summary": "half done"}}, "summary": "shift change"}},
			{"human:rev", "handoff.accept", map[string]any{"handoff_id": "hnd_01H"}},
			{"human:rev", "task.complete", map[string]any{"task_id": T1}},
		}, nil, func(t *testing.T, tl *Timeline) {
			tk := tl.Tasks[0]
			if len(tk.Handoffs) != 1 || tk.Handoffs[0].Accepted != "human:rev" || tk.Handoffs[0].ID != "hnd_01H" || tk.Assignees[1] != "human:rev" {
				t.Fatalf("task %+v", tk)
			}
		}},
		{"handoff declined", []ref{
			create("human:lead", "agent:drafter"),
			{"agent:drafter", "handoff.propose", map[string]any{"handoff_id": "hnd_X", "to": "human:rev", "tasks": []any{map[string]any{"task_id": T1}}}},
			{"human:rev", "handoff.decline", map[string]any{"handoff_id": "hnd_X", "reason": "busy"}},
		}, nil, func(t *testing.T, tl *Timeline) {
			if h := tl.Tasks[0].Handoffs[0]; h.Declined != "human:rev" || h.Accepted != "" {
				t.Fatalf("handoff %+v", h)
			}
		}},
		{"control by a member: pause, resume, snapshot, rollback, set_mode_ceiling, workspace pause", []ref{
			create("human:lead", "agent:drafter"),
			{"human:lead", "control.pause", map[string]any{"scope": "task", "task_id": T1}},
			{"human:lead", "control.resume", map[string]any{"scope": "task", "task_id": T1}},
			{"human:lead", "control.pause", map[string]any{"scope": "participant", "participant_uri": "agent:drafter", "in_flight_policy": "allow_to_complete"}},
			{"human:owner", "control.snapshot", map[string]any{"label": "before-change"}},
			{"human:owner", "control.rollback", map[string]any{"to_snapshot_artefact_id": "art_01S", "reason": "bad config"}},
			{"human:owner", "control.set_mode_ceiling", map[string]any{"new_ceiling": "trial", "reason": "incident"}},
			{"human:owner", "control.pause", map[string]any{"scope": "workspace"}},
			{"human:owner", "control.resume", map[string]any{"scope": "workspace"}},
			{"agent:drafter", "task.complete", map[string]any{"task_id": T1}},
		}, nil, func(t *testing.T, tl *Timeline) {
			if len(tl.Tasks[0].Controls) != 2 || len(tl.Controls) != 6 || tl.Tasks[0].Mode != "trial" {
				t.Fatalf("task controls %q, workspace controls %q", tl.Tasks[0].Controls, tl.Controls)
			}
			if !strings.Contains(strings.Join(tl.Answers[6].Answer, "\n"), "mode ceiling → trial") {
				t.Fatalf("§9.3 Q7 %q", tl.Answers[6].Answer)
			}
		}},
		{"control.supersede creates the successor; control.cancel", []ref{
			create("human:lead", "agent:drafter"),
			{"human:lead", "control.supersede", map[string]any{"task_id": T1, "reason": "scope changed", "successor_task": map[string]any{"kind": "reply-v2", "input": map[string]any{}}}},
			{"human:lead", "control.cancel", map[string]any{"task_id": T2, "reason": "not needed"}},
		}, nil, func(t *testing.T, tl *Timeline) {
			if len(tl.Tasks) != 2 || tl.Tasks[0].Status != "superseded" || tl.Tasks[1].ID != T2 || tl.Tasks[1].Status != "cancelled" || tl.Tasks[1].Assignees[0] != "agent:drafter" {
				t.Fatalf("tasks %+v %+v", tl.Tasks[0], tl.Tasks[1])
			}
		}},
		{"routing: task.route and escalate.auto", []ref{
			create("human:lead", "agent:drafter"),
			{"human:lead", "task.route", map[string]any{"task_id": T1, "candidates": []string{"agent:drafter", "human:rev"}}},
			{"human:lead", "escalate.auto", map[string]any{"task_id": T1, "default_escalation_target": "human:rev2"}},
		}, nil, func(t *testing.T, tl *Timeline) {
			if len(tl.Tasks[0].Routes) != 2 || tl.Tasks[0].Status != "created" {
				t.Fatalf("task %+v", tl.Tasks[0])
			}
		}},
		{"profiles by the admin, audit submission, key rotation and revocation, leave", []ref{
			{"human:owner", "workspace.set_profiles", map[string]any{"profiles": []string{"core/1.0", "audit-scitt/1.0"}}},
			{"human:owner", "audit.submit_to_scitt", map[string]any{"range": map[string]any{"from_seq": 0, "to_seq": 6}}},
			{"human:rev", "participant.rotate_key", map[string]any{"old_kid": "rev-1", "new_jwk": map[string]any{"kty": "OKP", "crv": "Ed25519", "kid": "rev-2", "x": "AA"}, "reason": "scheduled"}},
			{"human:owner", "participant.revoke_key", map[string]any{"target_uri": "human:rev", "kid": "rev-2", "reason": "compromised"}},
			{"human:rev2", "participant.leave", nil},
		}, nil, func(t *testing.T, tl *Timeline) {
			if len(tl.Controls) != 2 {
				t.Fatalf("controls %q", tl.Controls)
			}
		}},
		{"override with a diff on a task whose artefact is not in the chain", []ref{
			create("human:lead", "agent:drafter"),
			{"human:rev", "decide.override", map[string]any{"task_id": T1, "rationale": "r", "diff": []any{map[string]any{"op": "replace", "path": "/body", "value": "x"}}}},
		}, []string{CodeNoBase}, nil},
		{"override stating a result its diff does not give", []ref{
			create("human:lead", "agent:drafter"), review,
			{"human:rev", "decide.override", map[string]any{"task_id": T1, "rationale": "r", "diff": []any{map[string]any{"op": "replace", "path": "/body", "value": "x"}},
				"result": map[string]any{"body": "y", "refund_eur": 100}}},
		}, []string{CodeResultMismatch}, nil},
		{"artefact whose content_hash is not its content's", []ref{
			create("human:lead", "agent:drafter"),
			{"agent:drafter", "review.request", map[string]any{"task_id": T1, "to": "human:rev", "artefact": map[string]any{"id": "art_1", "content": refDraft, "content_hash": chapscenario.ContentDigest(map[string]any{"body": "other"})}}},
		}, []string{CodeArtefactHash}, nil},
		{"deliberation with votes and no close", []ref{
			{"human:owner", "deliberate.open", map[string]any{"deliberation_id": "dlb_O", "rule": "any_one_approves", "to": []string{"human:rev"}}},
			{"human:rev", "deliberate.vote", map[string]any{"deliberation_id": "dlb_O", "vote": "yea"}},
		}, []string{CodeDeliberationOpen}, nil},
		{"a sender's clock going backwards", []ref{
			create("human:lead", "agent:drafter"),
			{"agent:drafter", "task.update", map[string]any{"task_id": T1, "state": "in_progress", "ts": "2020-01-01T00:00:00Z"}},
		}, []string{CodeTSRegression}, nil},
		{"workspace.set_profiles by a non-admin", []ref{
			{"human:lead", "workspace.set_profiles", map[string]any{"profiles": []string{"core/1.0"}}},
		}, []string{CodeUnprivileged}, nil},
		{"control by a member who left", []ref{
			create("human:lead", "agent:drafter"),
			{"human:lead", "participant.leave", nil},
			{"human:lead", "control.pause", map[string]any{"task_id": T1}},
		}, []string{CodeUnknownPrivileged}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl := refTimeline(t, "", tc.reqs)
			if got := findingCodes(tl); strings.Join(got, ",") != strings.Join(tc.codes, ",") {
				t.Fatalf("findings %q, want %q: %+v", got, tc.codes, tl.Findings)
			}
			for _, a := range tl.Answers {
				if len(a.Answer) == 0 {
					t.Fatalf("§9.3 Q%d has no answer", a.N)
				}
			}
			if tc.check != nil {
				tc.check(t, tl)
			}
		})
	}
}

// TestReferenceTaskFilter: --task keeps the events of a task whose id the chain learnt only
// after its create.
func TestReferenceTaskFilter(t *testing.T) {
	id := idAt("tsk_", 6, 0)
	tl := refTimeline(t, id, []ref{
		create("human:lead", "agent:drafter"),
		create("human:lead", "human:rev"),
		{"agent:drafter", "task.update", map[string]any{"task_id": id, "state": "in_progress"}},
		{"agent:drafter", "task.complete", map[string]any{"task_id": id}},
	})
	if len(tl.Tasks) != 1 || len(tl.Events) != 3 || tl.Events[0].Method != "task.create" || tl.Impossible() != 0 {
		t.Fatalf("filtered: tasks %+v events %+v findings %+v", tl.Tasks, tl.Events, tl.Findings)
	}
}

// TestBindingFromEvidence: an id the Coordinator assigned is bound to a creation only when the
// log determines it — by the Coordinator's clock (arrival times) or by the order of its ids —
// and otherwise reported as not evaluated, never as a finding about the wrong task.
func TestBindingFromEvidence(t *testing.T) {
	unassigned := ref{"human:lead", "task.create", map[string]any{"kind": "reply", "to": "service:coordinator"}}
	tests := []struct {
		name string
		reqs []ref
		// with arrival times, and without: the seq each named id is bound to (0: not bound),
		// the finding codes, and the codes of what was not evaluated
		bound, boundNoClock map[string]uint64
		codes, codesNoClock []string
		notes, notesNoClock []string
	}{
		{
			name: "burst named out of order (t1, t4, t2; t3 never)",
			reqs: []ref{
				create("human:lead", "agent:drafter"), // seq 6
				create("human:owner", "human:rev"),    // 7
				create("human:lead", "human:rev2"),    // 8
				create("human:lead", "agent:drafter"), // 9
				{"agent:drafter", "task.update", map[string]any{"task_id": idAt("tsk_", 6, 0), "state": "in_progress"}},
				{"agent:drafter", "task.update", map[string]any{"task_id": idAt("tsk_", 9, 0), "state": "in_progress"}},
				{"human:rev2", "review.depth", map[string]any{"task_id": idAt("tsk_", 8, 0)}},
				{"agent:drafter", "task.complete", map[string]any{"task_id": idAt("tsk_", 9, 0)}},
				{"agent:drafter", "task.complete", map[string]any{"task_id": idAt("tsk_", 6, 0)}},
			},
			bound: map[string]uint64{idAt("tsk_", 6, 0): 6, idAt("tsk_", 8, 0): 8, idAt("tsk_", 9, 0): 9},
			// By order alone each may come from either of two creations (t1 from seq 6 or 7,
			// t2 from 7 or 8, t4 from 8 or 9): nothing is bound, and the completions' checks are
			// not evaluated rather than made against the wrong creation.
			boundNoClock: map[string]uint64{},
			notesNoClock: []string{NoteIDOpen, NoteIDOpen, NoteIDOpen, NoteCheck, NoteCheck},
		},
		{
			name: "the later of two creates completed: the earlier had no assignee",
			reqs: []ref{
				unassigned,                            // seq 6
				create("human:lead", "agent:drafter"), // 7
				{"agent:drafter", "task.complete", map[string]any{"task_id": idAt("tsk_", 7, 0)}},
			},
			bound:        map[string]uint64{idAt("tsk_", 7, 0): 7},
			boundNoClock: map[string]uint64{},
			notesNoClock: []string{NoteIDOpen, NoteCheck},
		},
		{
			name: "the unassigned create completed: found, with the clock's binding as its basis",
			reqs: []ref{
				create("human:lead", "agent:drafter"), // seq 6
				unassigned,                            // 7
				{"agent:drafter", "task.complete", map[string]any{"task_id": idAt("tsk_", 7, 0)}},
			},
			bound:        map[string]uint64{idAt("tsk_", 7, 0): 7},
			boundNoClock: map[string]uint64{},
			codes:        []string{CodeCompletedUnassigned},
			notesNoClock: []string{NoteIDOpen, NoteCheck},
		},
		{
			name: "ids named in the order they were drawn bind by order alone",
			reqs: []ref{
				create("human:lead", "agent:drafter"), // seq 6
				create("human:lead", "human:rev"),     // 7
				{"agent:drafter", "task.complete", map[string]any{"task_id": idAt("tsk_", 6, 0)}},
				{"human:rev", "task.complete", map[string]any{"task_id": idAt("tsk_", 7, 0)}},
			},
			bound:        map[string]uint64{idAt("tsk_", 6, 0): 6, idAt("tsk_", 7, 0): 7},
			boundNoClock: map[string]uint64{idAt("tsk_", 6, 0): 6, idAt("tsk_", 7, 0): 7},
		},
		{
			name: "a task never created is completed",
			reqs: []ref{
				{"agent:drafter", "task.complete", map[string]any{"task_id": idAt("tsk_", 6, 0)}},
			},
			bound: map[string]uint64{}, boundNoClock: map[string]uint64{},
			codes:        []string{CodeUnknownTask, CodeCompletedUnassigned},
			codesNoClock: []string{CodeUnknownTask, CodeCompletedUnassigned},
		},
	}
	for _, tc := range tests {
		for _, clock := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/clock=%v", tc.name, clock), func(t *testing.T) {
				tl := refTimelineAt(t, "", tc.reqs, clock)
				bound, codes, notes := tc.bound, tc.codes, tc.notes
				if !clock {
					bound, codes, notes = tc.boundNoClock, tc.codesNoClock, tc.notesNoClock
				}
				if got := findingCodes(tl); strings.Join(got, ",") != strings.Join(codes, ",") {
					t.Fatalf("findings %q, want %q: %+v", got, codes, tl.Findings)
				}
				var gotNotes []string
				for _, n := range tl.NotEvaluated {
					gotNotes = append(gotNotes, n.Code)
				}
				if strings.Join(gotNotes, ",") != strings.Join(notes, ",") {
					t.Fatalf("not evaluated %q, want %q: %+v", gotNotes, notes, tl.NotEvaluated)
				}
				for _, f := range tl.Findings {
					if f.Severity == Impossible && f.Basis == "" {
						t.Errorf("impossible finding without its basis: %+v", f)
					}
				}
				got := map[string]uint64{}
				for _, tk := range tl.Tasks {
					if tk.CreatedSeq != nil && !provisionalKey(tk.ID) {
						got[tk.ID] = *tk.CreatedSeq
						if !tk.IDInferred || tk.IDBasis == "" {
							t.Errorf("task %s bound without its basis", tk.ID)
						}
					}
					if tk.CreatedSeq == nil && len(tk.CreatedAtOneOf) == 0 && bound[tk.ID] != 0 {
						t.Errorf("task %s not bound", tk.ID)
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(bound) {
					t.Fatalf("bound %v, want %v", got, bound)
				}
			})
		}
	}
}

// TestFindingsOnly: a replay that keeps no events finds what the full replay finds, notes
// what it notes and knows the same tasks.
func TestFindingsOnly(t *testing.T) {
	recs := refRecords(t, []ref{
		{"human:owner", "workspace.create", map[string]any{"profiles": []string{"core/1.0"}}},
		{"human:owner", "participant.join", map[string]any{"type": "human", "role": "admin"}},
		{"human:lead", "participant.join", map[string]any{"type": "human", "role": "participant"}},
		{"human:lead", "task.create", map[string]any{"kind": "reply", "to": "service:coordinator"}},
		{"human:lead", "task.create", map[string]any{"kind": "reply", "assignee": "human:lead"}},
		{"human:lead", "task.complete", map[string]any{"task_id": idAt("tsk_", 3, 0)}},
		{"human:lead", "workspace.set_profiles", map[string]any{"profiles": []string{"core/1.0"}}},
	}, false)
	full := Replay(refWS, "", recs)
	ix := NewIndex()
	for i, r := range recs {
		ix.Add(uint64(i), r)
	}
	b := New(refWS, "", ix.Bind())
	b.FindingsOnly()
	for i, r := range recs {
		b.Add(uint64(i), r)
	}
	lean := b.Timeline()
	if len(full.Events) != len(recs) || len(lean.Events) != 0 {
		t.Fatalf("events: full %d, findings only %d", len(full.Events), len(lean.Events))
	}
	if fmt.Sprint(full.Findings) != fmt.Sprint(lean.Findings) || fmt.Sprint(full.NotEvaluated) != fmt.Sprint(lean.NotEvaluated) || len(full.Tasks) != len(lean.Tasks) {
		t.Fatalf("full %+v %+v\nfindings only %+v %+v", full.Findings, full.NotEvaluated, lean.Findings, lean.NotEvaluated)
	}
	if len(lean.Findings) == 0 || len(lean.NotEvaluated) == 0 {
		t.Fatalf("the chain should have a finding (privileged_without_role) and notes: %+v %+v", lean.Findings, lean.NotEvaluated)
	}
}
