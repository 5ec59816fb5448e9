package replay

import (
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/ledger/profile/chap"
)

var t0 = time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC)

type cast struct{ co, alice, bot, rev *chapscenario.Participant }

func newCast() cast {
	return cast{
		co:    chapscenario.NewParticipant("service:coordinator", "service", chap.RoleAdmin, "replay"),
		alice: chapscenario.NewParticipant("human:alice", "human", "requester", "replay"),
		bot:   chapscenario.NewParticipant("agent:bot#v1", "agent", "drafter", "replay"),
		rev:   chapscenario.NewParticipant("human:rev", "human", "reviewer", "replay"),
	}
}

type step func(b *chapscenario.Builder, c cast) error

func env(p func(c cast) *chapscenario.Participant, method string, params map[string]any) step {
	return func(b *chapscenario.Builder, c cast) error {
		_, err := b.Envelope(p(c), c.co.URI, method, params)
		return err
	}
}

var (
	co    = func(c cast) *chapscenario.Participant { return c.co }
	alice = func(c cast) *chapscenario.Participant { return c.alice }
	bot   = func(c cast) *chapscenario.Participant { return c.bot }
	rev   = func(c cast) *chapscenario.Participant { return c.rev }
)

var draft = map[string]any{"body": "Refund of 100 EUR issued.", "refund_eur": 100}

func prelude() []step {
	return []step{
		func(b *chapscenario.Builder, c cast) error { return b.Join(c.co, c.co.URI) },
		env(co, "workspace.create", map[string]any{"workspace_id": "wsp_replay", "mode": "trial"}),
		func(b *chapscenario.Builder, c cast) error { return b.Join(c.alice, c.co.URI) },
		func(b *chapscenario.Builder, c cast) error { return b.Join(c.bot, c.co.URI) },
		func(b *chapscenario.Builder, c cast) error { return b.Join(c.rev, c.co.URI) },
		env(alice, "task.create", map[string]any{"task_id": "t1", "kind": "reply"}),
	}
}

func submitDraft() step {
	return env(bot, "artefact.submit", map[string]any{"task_id": "t1", "artefact": map[string]any{"id": "a1", "logical_id": "l1", "content": draft, "content_hash": chapscenario.ContentDigest(draft)}})
}

func build(t *testing.T, steps []step) *Timeline {
	t.Helper()
	c := newCast()
	b := chapscenario.NewBuilder("wsp_replay", t0)
	for i, s := range append(prelude(), steps...) {
		if err := s(b, c); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	var recs []*chap.Record
	for _, raw := range b.Records() {
		r, err := chap.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	return Replay("wsp_replay", "", recs)
}

func codes(tl *Timeline, sev Severity) map[string]int {
	m := map[string]int{}
	for _, f := range tl.Findings {
		if f.Severity == sev {
			m[f.Code]++
		}
	}
	return m
}

// TestRules gives every replay rule a fixture that passes and one that fails with its code.
func TestRules(t *testing.T) {
	assign := env(alice, "task.assign", map[string]any{"task_id": "t1", "assignee": "agent:bot#v1"})
	review := env(bot, "review.request", map[string]any{"task_id": "t1", "artefact_id": "a1", "reviewer": "human:rev"})
	other := map[string]any{"body": "something else"}
	tests := []struct {
		name  string
		steps []step
		sev   Severity
		code  string // "" = no finding of that severity at all
	}{
		{"completion after assignment", []step{assign, env(bot, "task.complete", map[string]any{"task_id": "t1"})}, Impossible, ""},
		{"completion of a never-assigned task", []step{env(bot, "task.complete", map[string]any{"task_id": "t1"})}, Impossible, CodeCompletedUnassigned},
		{"completion of a task never created", []step{env(bot, "task.complete", map[string]any{"task_id": "ghost"})}, Impossible, CodeCompletedUnassigned},
		{"approval of the reviewed digest", []step{assign, submitDraft(), review, env(rev, "decide.approve", map[string]any{"task_id": "t1", "artefact_id": "a1", "content_hash": chapscenario.ContentDigest(draft)})}, Impossible, ""},
		{"approval of another digest", []step{assign, submitDraft(), review, env(rev, "decide.approve", map[string]any{"task_id": "t1", "artefact_id": "a1", "content_hash": chapscenario.ContentDigest(other)})}, Impossible, CodeApprovalDigest},
		{"approval of the override's result", []step{assign, submitDraft(), review,
			env(rev, "decide.override", map[string]any{"task_id": "t1", "logical_id": "l1", "diff": []any{map[string]any{"op": "remove", "path": "/refund_eur"}}}),
			env(rev, "decide.approve", map[string]any{"task_id": "t1", "logical_id": "l1", "content_hash": chapscenario.ContentDigest(map[string]any{"body": "Refund of 100 EUR issued."})})}, Impossible, ""},
		{"approval of the pre-override draft after an override", []step{assign, submitDraft(), review,
			env(rev, "decide.override", map[string]any{"task_id": "t1", "logical_id": "l1", "diff": []any{map[string]any{"op": "remove", "path": "/refund_eur"}}}),
			env(rev, "decide.approve", map[string]any{"task_id": "t1", "logical_id": "l1", "content_hash": chapscenario.ContentDigest(draft)})}, Impossible, CodeApprovalDigest},
		{"privileged call by the admin", []step{env(co, "mode.set", map[string]any{"mode": "production"})}, Impossible, ""},
		{"privileged call by a member without the role", []step{env(alice, "mode.set", map[string]any{"mode": "production"})}, Impossible, CodeUnprivileged},
		{"control call by a member without the admin role (the membership floor)", []step{env(bot, "control.rollback", map[string]any{"task_id": "t1"})}, Impossible, ""},
		{"control call by a non-member", []step{func(b *chapscenario.Builder, c cast) error {
			_, err := b.Envelope(chapscenario.NewParticipant("agent:stranger", "agent", "", "replay"), c.co.URI, "control.pause", map[string]any{"task_id": "t1"})
			return err
		}}, Impossible, CodeUnknownPrivileged},
		{"workspace.set_profiles by a member without the admin role", []step{env(alice, "workspace.set_profiles", map[string]any{"profiles": []string{"core/1.0"}})}, Impossible, CodeUnprivileged},
		{"diff applies", []step{assign, submitDraft(), env(rev, "decide.override", map[string]any{"task_id": "t1", "logical_id": "l1", "diff": []any{map[string]any{"op": "replace", "path": "/refund_eur", "from": 100, "to": 50}}})}, Impossible, ""},
		{"diff names a path the base lacks", []step{assign, submitDraft(), env(rev, "decide.override", map[string]any{"task_id": "t1", "logical_id": "l1", "diff": []any{map[string]any{"op": "replace", "path": "/subject", "value": "x"}}})}, Impossible, CodeDiffNotApplicable},
		{"diff's from is not the base value", []step{assign, submitDraft(), env(rev, "decide.override", map[string]any{"task_id": "t1", "logical_id": "l1", "diff": []any{map[string]any{"op": "replace", "path": "/refund_eur", "from": 90, "to": 50}}})}, Impossible, CodeDiffNotApplicable},
		{"stated result equals diff(base)", []step{assign, submitDraft(), env(rev, "decide.override", map[string]any{"task_id": "t1", "logical_id": "l1", "diff": []any{map[string]any{"op": "remove", "path": "/refund_eur"}}, "result": map[string]any{"body": "Refund of 100 EUR issued."}})}, Impossible, ""},
		{"stated result differs from diff(base)", []step{assign, submitDraft(), env(rev, "decide.override", map[string]any{"task_id": "t1", "logical_id": "l1", "diff": []any{map[string]any{"op": "remove", "path": "/refund_eur"}}, "result": draft})}, Impossible, CodeResultMismatch},
		{"artefact hash of another content", []step{assign, env(bot, "artefact.submit", map[string]any{"task_id": "t1", "artefact": map[string]any{"id": "a1", "content": draft, "content_hash": chapscenario.ContentDigest(other)}})}, Impossible, CodeArtefactHash},
		{"timestamps non-decreasing", []step{assign}, Warning, ""},
		{"a sender's timestamp goes backwards", []step{assign, func(b *chapscenario.Builder, c cast) error {
			b.Clock = t0
			_, err := b.Envelope(c.alice, c.co.URI, "task.update", map[string]any{"task_id": "t1", "status": "in_progress"})
			return err
		}}, Warning, CodeTSRegression},
		{"deliberation with a recorded outcome matching its rule", []step{
			env(co, "deliberation.open", map[string]any{"deliberation_id": "d1", "rule": "quorum", "quorum": 2, "voters": []string{"human:alice", "human:rev", "agent:bot#v1"}}),
			env(alice, "deliberation.vote", map[string]any{"deliberation_id": "d1", "vote": "approve"}),
			env(rev, "deliberation.vote", map[string]any{"deliberation_id": "d1", "vote": "approve"}),
			env(co, "deliberation.close", map[string]any{"deliberation_id": "d1", "outcome": "approved"})}, Impossible, ""},
		{"deliberation recording an outcome its rule contradicts", []step{
			env(co, "deliberation.open", map[string]any{"deliberation_id": "d1", "rule": "all-approve", "voters": []string{"human:alice", "human:rev"}}),
			env(alice, "deliberation.vote", map[string]any{"deliberation_id": "d1", "vote": "approve"}),
			env(rev, "deliberation.vote", map[string]any{"deliberation_id": "d1", "vote": "reject"}),
			env(co, "deliberation.close", map[string]any{"deliberation_id": "d1", "outcome": "approved"})}, Impossible, "deliberation_outcome_mismatch"},
		{"whisper answered", []step{assign, env(bot, "whisper.ask", map[string]any{"task_id": "t1", "question": "refund?", "default_if_no_answer": "no"}), env(alice, "whisper.answer", map[string]any{"task_id": "t1", "choice": "yes"})}, Info, ""},
		{"whisper unanswered takes its default", []step{assign, env(bot, "whisper.ask", map[string]any{"task_id": "t1", "question": "refund?", "default_if_no_answer": "no"})}, Info, CodeWhisperDefaulted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl := build(t, tc.steps)
			got := codes(tl, tc.sev)
			if tc.code == "" {
				if len(got) != 0 {
					t.Fatalf("unexpected %s findings %v: %+v", tc.sev, got, tl.Findings)
				}
				return
			}
			if got[tc.code] != 1 || len(got) != 1 {
				t.Fatalf("%s findings %v, want exactly one %s: %+v", tc.sev, got, tc.code, tl.Findings)
			}
		})
	}
}

func TestTimelineContent(t *testing.T) {
	tl := build(t, []step{
		env(alice, "task.assign", map[string]any{"task_id": "t1", "assignee": "agent:bot#v1"}),
		env(bot, "task.accept", map[string]any{"task_id": "t1"}),
		submitDraft(),
		env(bot, "review.request", map[string]any{"task_id": "t1", "artefact_id": "a1", "reviewer": "human:rev"}),
		env(rev, "decide.override", map[string]any{"task_id": "t1", "logical_id": "l1", "intent_preserved": false, "rationale": "replacement first",
			"tags": []string{"policy"}, "policy_refs": []string{"refunds.v4"},
			"diff": []any{map[string]any{"op": "replace", "path": "/body", "value": "Replacement sent."}, map[string]any{"op": "remove", "path": "/refund_eur"}}}),
		env(co, "mode.set", map[string]any{"mode": "production"}),
		env(bot, "abstain.declare", map[string]any{"task_id": "t1", "reason_category": "out-of-scope"}),
		env(bot, "task.complete", map[string]any{"task_id": "t1", "outcome": "sent"}),
	})
	if len(tl.Tasks) != 1 {
		t.Fatalf("tasks %+v", tl.Tasks)
	}
	tk := tl.Tasks[0]
	if tk.CreatedBy != "human:alice" || tk.AssignedBy[0] != "human:alice" || tk.Assignees[0] != "agent:bot#v1" || tk.AcceptedBy[0] != "agent:bot#v1" ||
		tk.CompletedBy != "agent:bot#v1" || tk.Status != "completed" || tk.Mode != "trial" {
		t.Fatalf("lifecycle %+v", tk)
	}
	if len(tk.Decisions) != 1 {
		t.Fatalf("decisions %+v", tk.Decisions)
	}
	d := tk.Decisions[0]
	if d.Kind != "override" || d.Result != `{"body":"Replacement sent."}` || d.Base == "" || d.Rationale != "replacement first" || *d.IntentPreserved || d.Kid == "" {
		t.Fatalf("override %+v", d)
	}
	if len(tl.Modes) != 2 || tl.Modes[1].From != "trial" || tl.Modes[1].To != "production" {
		t.Fatalf("modes %+v", tl.Modes)
	}
	if len(tk.Abstentions) != 1 || tk.Abstentions[0].Category != "out-of-scope" {
		t.Fatalf("abstentions %+v", tk.Abstentions)
	}
	if tl.Answers[3].Answer[0] == "the chain records nothing on this" || tl.Answers[5].Answer[0] == "the chain records nothing on this" {
		t.Fatalf("§9.3 answers %+v", tl.Answers)
	}
	// A task filter keeps the task's events and the context-free ones out.
	c := newCast()
	b := chapscenario.NewBuilder("wsp_replay", t0)
	for _, s := range append(prelude(), env(alice, "task.create", map[string]any{"task_id": "t2"}), env(alice, "task.update", map[string]any{"task_id": "t2", "status": "x"})) {
		if err := s(b, c); err != nil {
			t.Fatal(err)
		}
	}
	var recs []*chap.Record
	for _, raw := range b.Records() {
		r, _ := chap.Parse(raw)
		recs = append(recs, r)
	}
	ft := Replay("wsp_replay", "t2", recs)
	if len(ft.Events) != 2 || len(ft.Tasks) != 1 || ft.Tasks[0].ID != "t2" {
		t.Fatalf("filtered timeline: %d events, tasks %+v", len(ft.Events), ft.Tasks)
	}
}

func TestRefusalRecord(t *testing.T) {
	rec, err := chap.Parse([]byte(`{"outcome":{"code":"forbidden","message":"not a member"},"request":{"jsonrpc":"2.0","id":"x1","method":"task.complete","from":"agent:mallory","params":{"task_id":"t9"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tl := Replay("w", "", []*chap.Record{rec})
	if len(tl.Events) != 1 || !tl.Events[0].Refusal || tl.Impossible() != 0 || len(tl.Findings) != 1 || tl.Findings[0].Code != CodeRefusal {
		t.Fatalf("refusal timeline %+v", tl)
	}
}
