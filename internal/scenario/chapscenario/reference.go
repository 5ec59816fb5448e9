package chapscenario

import (
	"fmt"
	"time"
)

// SupportTriageReference writes the support triage as the CHAP reference Coordinator records
// it (Form Reference): Alice creates the workspace, signing with the key her following join
// introduces; Alice, Bob and the agent join with their JWK Sets; Alice creates a task
// assigned to the agent (the Coordinator answers with its id, tsk_48910, which the later
// calls name), the agent works on it and asks Bob to review its draft, Bob overrides the
// draft with a diff and rationale, Alice approves, the agent completes: ten signed calls.
func SupportTriageReference(workspace string, start time.Time) (*Builder, []*Participant, error) {
	c := NewCast()
	b := NewBuilder(workspace, start)
	b.Form = Reference
	const task = "tsk_48910"
	draft := map[string]any{"body": "We are sorry your order arrived damaged. A refund of 100 EUR has been issued.", "refund_eur": 100}
	call := func(p *Participant, method string, params map[string]any) func() error {
		return func() error {
			_, err := b.Envelope(p, "", method, params)
			return err
		}
	}
	steps := []func() error{
		call(c.Alice, "workspace.create", map[string]any{"profiles": []string{"core/1.0", "review/1.0", "security-signed/1.0", "audit-scitt/1.0"}, "mode": "trial"}),
		func() error { return b.Join(c.Alice, "") },
		func() error { return b.Join(c.Bob, "") },
		func() error { return b.Join(c.Bot, "") },
		call(c.Alice, "task.create", map[string]any{"assignee": c.Bot.URI, "kind": "draft_customer_response",
			"input":           map[string]any{"ticket_id": "INC-48910", "customer_message": "Order arrived broken; please refund."},
			"routing_hints":   map[string]any{"criticality": "medium", "deadline": "2026-05-17T10:00:00Z"},
			"idempotency_key": "INC-48910"}),
		call(c.Bot, "task.update", map[string]any{"task_id": task, "state": "in_progress", "progress_note": "checked order history and carrier report"}),
		call(c.Bot, "review.request", map[string]any{"to": []string{c.Bob.URI}, "task_id": task, "artefact": draft, "rule": "any_one_approves"}),
		call(c.Bob, "decide.override", map[string]any{"task_id": task, "intent_preserved": true,
			"diff":      []map[string]any{{"op": "replace", "path": "/body", "value": "We are sorry your order arrived damaged. We will send a replacement today; a refund is available if you prefer."}, {"op": "remove", "path": "/refund_eur"}},
			"rationale": "Policy: replacement first for damaged goods under 200 EUR; refunds on request.",
			"tags":      []string{"policy-refund-order", "tone-ok"}}),
		call(c.Alice, "decide.approve", map[string]any{"task_id": task, "comment": "approved as overridden"}),
		call(c.Bot, "task.complete", map[string]any{"task_id": task, "output": map[string]any{"outcome": "sent"}}),
	}
	for i, s := range steps {
		if err := s(); err != nil {
			return nil, nil, fmt.Errorf("support triage (reference form) step %d: %w", i+1, err)
		}
	}
	return b, []*Participant{c.Alice, c.Bob, c.Bot}, nil
}
