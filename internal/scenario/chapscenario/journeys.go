package chapscenario

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile/chap"
)

// Journey is one of the CHAP paper's appendix D user journeys as a signed workspace chain.
type Journey struct {
	ID        string // "D.1" … "D.12"
	Title     string
	Workspace string
	Task      string // the task the journey's question is about
	Build     func(b *Builder) error
}

// ContentDigest is "sha256:" + hex(SHA-256(JCS(content))): the artefact digest the journeys
// put in content_hash (and the one `evident replay` recomputes).
func ContentDigest(content any) string {
	raw, err := json.Marshal(content)
	if err != nil {
		panic(err)
	}
	c, err := canonical.Canonicalize(raw, canonical.CHAP)
	if err != nil {
		panic(err)
	}
	h := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(h[:])
}

// call is one step of a journey.
type call struct {
	p      *Participant
	method string
	params map[string]any
}

func (b *Builder) run(to string, calls []call) error {
	for i, c := range calls {
		var err error
		if c.method == "participant.join" {
			err = b.Join(c.p, to)
		} else {
			_, err = b.Envelope(c.p, to, c.method, c.params)
		}
		if err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, c.method, err)
		}
	}
	return nil
}

func join(p *Participant) call { return call{p: p, method: "participant.join"} }

func artefact(id, logical, kind string, content map[string]any, extra map[string]any) map[string]any {
	a := map[string]any{"id": id, "logical_id": logical, "kind": kind, "content": content, "content_hash": ContentDigest(content)}
	for k, v := range extra {
		a[k] = v
	}
	return a
}

func person(uri, role, ws string) *Participant { return NewParticipant(uri, "human", role, ws) }
func agent(uri, role, ws string) *Participant  { return NewParticipant(uri, "agent", role, ws) }
func coordinator(ws string) *Participant {
	return NewParticipant("service:coordinator@"+ws, "service", chap.RoleAdmin, ws)
}

// Journeys returns D.1–D.12 in order.
func Journeys() []Journey {
	return []Journey{
		{ID: "D.1", Title: "The solo developer who can't remember what they overrode", Workspace: "wsp_my_reviews", Task: "tsk_pr_482", Build: journeyD1},
		{ID: "D.2", Title: "Marketing copy with one drafter and one editor", Workspace: "wsp_marketing", Task: "tsk_brief_acme_q3_2026", Build: journeyD2},
		{ID: "D.3", Title: "The indie founder, the inbox, and the angry customer", Workspace: "wsp_support", Task: "tsk_ticket_chargeback_8821", Build: journeyD3},
		{ID: "D.4", Title: "Support operations at 03:00", Workspace: "wsp_support_ops", Task: "tsk_ticket_8903", Build: journeyD4},
		{ID: "D.5", Title: "Sixty engineers and a code-review bot they don't trust the same way", Workspace: "wsp_eng_reviews", Task: "tsk_pr_review_12482", Build: journeyD5},
		{ID: "D.6", Title: "A junior, a partner, and a contract that ships tonight", Workspace: "wsp_legal", Task: "tsk_msa_acme_corp", Build: journeyD6},
		{ID: "D.7", Title: "Trust and Safety, three auditors, one queue", Workspace: "wsp_trust_safety", Task: "tsk_report_19204821", Build: journeyD7},
		{ID: "D.8", Title: "The creative shop and the client who never approved that", Workspace: "wsp_agency_acme_q4", Task: "tsk_campaign_q4_launch", Build: journeyD8},
		{ID: "D.9", Title: "The internal Q&A bot that keeps getting the same thing wrong", Workspace: "wsp_hr_qa", Task: "tsk_employee_q_8821", Build: journeyD9},
		{ID: "D.10", Title: "A pressure drop on the fill-finish line", Workspace: "wsp_site_fill_finish_b3", Task: "tsk_qp_release_BX_48219", Build: journeyD10},
		{ID: "D.11", Title: "Motor claims and the bereavement that changes everything", Workspace: "wsp_motor_claims_uk", Task: "tsk_settlement_MTR-2026-198421", Build: journeyD11},
		{ID: "D.12", Title: "Five years on, the regulator asks", Workspace: "wsp_wealth_advice", Task: "tsk_rebalance_advice_client_4821", Build: journeyD12},
	}
}

// JourneyStart is the clock every journey starts from.
var JourneyStart = time.Date(2026, 5, 17, 3, 0, 0, 0, time.UTC)

// BuildJourney writes journey j into a new builder.
func BuildJourney(j Journey) (*Builder, error) {
	b := NewBuilder(j.Workspace, JourneyStart)
	if err := j.Build(b); err != nil {
		return nil, fmt.Errorf("journey %s: %w", j.ID, err)
	}
	return b, nil
}

func journeyD1(b *Builder) error {
	ws := b.Workspace
	co, me, bot := coordinator(ws), person("human:me@local", "owner", ws), agent("agent:cursor-review#2026.05", "reviewer-bot", ws)
	review := map[string]any{"comments": []any{map[string]any{"line": 47, "severity": "warning", "text": "Unused parameter ctx in onClick handler"}}}
	return b.run(co.URI, []call{
		join(co),
		{co, "workspace.create", map[string]any{"workspace_id": ws, "profiles": []string{"core/1.0", "review/1.0"}, "mode": "production"}},
		join(me), join(bot),
		{me, "task.create", map[string]any{"task_id": "tsk_pr_482", "kind": "code_review", "input": map[string]any{"pr": 482, "repo": "me/side-project"}}},
		{me, "task.assign", map[string]any{"task_id": "tsk_pr_482", "assignee": bot.URI}},
		{bot, "task.accept", map[string]any{"task_id": "tsk_pr_482"}},
		{bot, "artefact.submit", map[string]any{"task_id": "tsk_pr_482", "artefact": artefact("art_pr_482_r1", "lgl_pr_482_review", "review", review, map[string]any{"model_id": "cursor-review-2026.05", "tools": []string{"git-diff", "eslint"}})}},
		{bot, "review.request", map[string]any{"task_id": "tsk_pr_482", "artefact_id": "art_pr_482_r1", "reviewer": me.URI}},
		{me, "decide.override", map[string]any{"task_id": "tsk_pr_482", "logical_id": "lgl_pr_482_review", "intent_preserved": true,
			"diff":      []any{map[string]any{"op": "replace", "path": "/comments/0/severity", "from": "warning", "to": "info"}},
			"rationale": "Bot flags unused parameter on every event handler. False positive in this codebase: handlers conform to a framework signature.",
			"tags":      []string{"false-positive", "framework-pattern-misread"}}},
		{me, "task.complete", map[string]any{"task_id": "tsk_pr_482", "outcome": "merged"}},
	})
}

func journeyD2(b *Builder) error {
	ws := b.Workspace
	co, writer, editor, bot := coordinator(ws), person("human:writer@studio.com", "drafter", ws), person("human:editor@studio.com", "editor", ws), agent("agent:copy-drafter#v1.8", "drafter", ws)
	draft := map[string]any{"sections": []any{map[string]any{"text": "Industry-leading solutions for forward-thinking teams."}, map[string]any{"text": "Acme ships the Q3 release with offline sync."}}}
	return b.run(co.URI, []call{
		join(co),
		{co, "workspace.create", map[string]any{"workspace_id": ws, "profiles": []string{"core/1.0", "review/1.0", "modes/1.0"}, "mode": "trial"}},
		join(writer), join(editor), join(bot),
		{writer, "task.create", map[string]any{"task_id": "tsk_brief_acme_q3_2026", "kind": "marketing_copy", "input": map[string]any{"brief": "Acme Q3 launch email"}}},
		{writer, "task.assign", map[string]any{"task_id": "tsk_brief_acme_q3_2026", "assignee": bot.URI}},
		{bot, "artefact.submit", map[string]any{"task_id": "tsk_brief_acme_q3_2026", "artefact": artefact("art_brief_q3_v1", "lgl_brief_acme_q3_2026", "draft", draft, nil)}},
		{bot, "review.request", map[string]any{"task_id": "tsk_brief_acme_q3_2026", "artefact_id": "art_brief_q3_v1", "reviewer": editor.URI}},
		{editor, "decide.override", map[string]any{"task_id": "tsk_brief_acme_q3_2026", "logical_id": "lgl_brief_acme_q3_2026", "intent_preserved": true,
			"diff":      []any{map[string]any{"op": "replace", "path": "/sections/0/text", "from": "Industry-leading solutions for forward-thinking teams.", "to": "We help teams ship faster. Here's how."}},
			"rationale": "Opener was generic corporate boilerplate.", "tags": []string{"opener-rewritten", "tone-corporate-to-warm"}}},
		{editor, "decide.approve", map[string]any{"task_id": "tsk_brief_acme_q3_2026", "logical_id": "lgl_brief_acme_q3_2026", "note": "ship it"}},
		{bot, "task.complete", map[string]any{"task_id": "tsk_brief_acme_q3_2026", "outcome": "published"}},
	})
}

func journeyD3(b *Builder) error {
	ws := b.Workspace
	co, founder, bot := coordinator(ws), person("human:founder@tinysaas.io", "owner", ws), agent("agent:triage-bot#v1.3", "drafter", ws)
	reply := map[string]any{"body": "Refunds are available within 60 days of purchase.", "policy_quoted": "refunds-60-days"}
	fixed := map[string]any{"body": "Refunds are available within 30 days of purchase; we have made an exception for you.", "policy_quoted": "refunds-30-days"}
	task := "tsk_ticket_chargeback_8821"
	return b.run(co.URI, []call{
		join(co),
		{co, "workspace.create", map[string]any{"workspace_id": ws, "profiles": []string{"core/1.0", "review/1.0"}, "mode": "trial"}},
		join(founder), join(bot),
		{co, "task.create", map[string]any{"task_id": task, "kind": "support_reply", "input": map[string]any{"ticket": "LIN-8821", "customer_message": "I want my money back."}}},
		{co, "task.assign", map[string]any{"task_id": task, "assignee": bot.URI}},
		{bot, "task.accept", map[string]any{"task_id": task}},
		{bot, "artefact.submit", map[string]any{"task_id": task, "artefact": artefact("art_8821_v1", "lgl_reply_8821", "draft", reply, map[string]any{"model_id": "gpt-4.1-2026-04", "sources": []string{"kb:refund-policy@2025-11"}})}},
		{bot, "review.request", map[string]any{"task_id": task, "artefact_id": "art_8821_v1", "reviewer": founder.URI}},
		{founder, "decide.approve", map[string]any{"task_id": task, "artefact_id": "art_8821_v1", "content_hash": ContentDigest(reply), "note": "looks right"}},
		{bot, "task.complete", map[string]any{"task_id": task, "outcome": "sent"}},
		{founder, "task.create", map[string]any{"task_id": "tsk_ticket_8829", "kind": "support_reply", "policy_refs": []string{"kb:refund-policy@2026-05"}}},
		{founder, "task.assign", map[string]any{"task_id": "tsk_ticket_8829", "assignee": bot.URI}},
		{bot, "artefact.submit", map[string]any{"task_id": "tsk_ticket_8829", "artefact": artefact("art_8829_v1", "lgl_reply_8829", "draft", fixed, map[string]any{"model_id": "gpt-4.1-2026-04", "sources": []string{"kb:refund-policy@2026-05"}})}},
		{founder, "decide.approve", map[string]any{"task_id": "tsk_ticket_8829", "artefact_id": "art_8829_v1", "content_hash": ContentDigest(fixed)}},
		{bot, "task.complete", map[string]any{"task_id": "tsk_ticket_8829", "outcome": "sent"}},
	})
}

func journeyD4(b *Builder) error {
	ws := b.Workspace
	co, apac, emea, bot := coordinator(ws), person("human:apac.lead@acme.com", "shift-lead", ws), person("human:emea.lead@acme.com", "shift-lead", ws), agent("agent:support-drafter#v2.4", "drafter", ws)
	r1, r2 := person("human:senior.1@acme.com", "senior-reviewer", ws), person("human:senior.2@acme.com", "senior-reviewer", ws)
	draft := map[string]any{"body": "Standard shipping takes 5 days.", "refund_eur": 450}
	calls := []call{join(co),
		{co, "workspace.create", map[string]any{"workspace_id": ws, "profiles": []string{"core/1.0", "review/1.0", "handoff/1.0", "deliberation/1.0", "whisper/1.0"}, "mode": "production"}},
		join(apac), join(emea), join(bot), join(r1), join(r2)}
	for _, t := range []string{"tsk_ticket_8821", "tsk_ticket_8847", "tsk_ticket_8903"} {
		calls = append(calls, call{apac, "task.create", map[string]any{"task_id": t, "kind": "support_reply"}}, call{apac, "task.assign", map[string]any{"task_id": t, "assignee": bot.URI}})
	}
	calls = append(calls,
		call{bot, "whisper.ask", map[string]any{"task_id": "tsk_ticket_8903", "to": []string{apac.URI}, "question": "Refund or replacement?", "options": []string{"refund", "replacement"}, "default_if_no_answer": "replacement", "deadline": "2026-05-17T04:00:00Z"}},
		call{bot, "artefact.submit", map[string]any{"task_id": "tsk_ticket_8903", "artefact": artefact("art_8903_v1", "lgl_reply_8903", "draft", draft, map[string]any{"model_id": "support-drafter-2.4"})}},
		call{apac, "task.escalate", map[string]any{"task_id": "tsk_ticket_8847", "to": "group:legal", "reason": "contract dispute"}},
		call{apac, "handoff.propose", map[string]any{"to": []string{"group:emea-shift"}, "tasks": []string{"tsk_ticket_8821", "tsk_ticket_8847", "tsk_ticket_8903"},
			"note": "8821: awaiting customer reply, no action needed. 8847: escalated to legal review around 23:00. 8903: agent v2.4 drafted but quoted yesterday's shipping policy, do not approve as-is."}},
		call{emea, "handoff.accept", map[string]any{"tasks": []string{"tsk_ticket_8821", "tsk_ticket_8847", "tsk_ticket_8903"}}},
		call{emea, "deliberation.open", map[string]any{"deliberation_id": "dlb_refund_8903", "task_id": "tsk_ticket_8903", "rule": "all-approve", "voters": []string{r1.URI, r2.URI}}},
		call{r1, "deliberation.vote", map[string]any{"deliberation_id": "dlb_refund_8903", "task_id": "tsk_ticket_8903", "vote": "reject"}},
		call{r2, "deliberation.vote", map[string]any{"deliberation_id": "dlb_refund_8903", "task_id": "tsk_ticket_8903", "vote": "approve"}},
		call{emea, "deliberation.close", map[string]any{"deliberation_id": "dlb_refund_8903", "task_id": "tsk_ticket_8903", "outcome": "rejected"}},
		call{emea, "decide.reject", map[string]any{"task_id": "tsk_ticket_8903", "artefact_id": "art_8903_v1", "reason_category": "wrong-policy-quoted", "rationale": "Quoted yesterday's shipping policy; refund over threshold rejected by vote."}},
	)
	return b.run(co.URI, calls)
}

func journeyD5(b *Builder) error {
	ws := b.Workspace
	co, alice, sec, bot := coordinator(ws), person("human:alice@acme.com", "engineer", ws), person("human:sec.lead@acme.com", "security", ws), agent("agent:greptile#2026.04", "reviewer-bot", ws)
	finding := map[string]any{"findings": []any{map[string]any{"line": 47, "kind": "sql-injection", "severity": "high"}}}
	task := "tsk_pr_review_12482"
	return b.run(co.URI, []call{
		join(co),
		{co, "workspace.create", map[string]any{"workspace_id": ws, "profiles": []string{"core/1.0", "review/1.0", "modes/1.0", "audit-scitt/1.0"}, "mode": "trial"}},
		join(alice), join(sec), join(bot),
		{co, "mode.set", map[string]any{"scope": "paths:security/**", "mode": "production"}},
		{alice, "task.create", map[string]any{"task_id": task, "kind": "code_review", "input": map[string]any{"pr": 12482}}},
		{alice, "task.assign", map[string]any{"task_id": task, "assignee": bot.URI}},
		{bot, "artefact.submit", map[string]any{"task_id": task, "artefact": artefact("art_bot_review_12482", "lgl_pr_12482_review", "review", finding, map[string]any{"model_id": "greptile-2026.04"})}},
		{bot, "review.request", map[string]any{"task_id": task, "artefact_id": "art_bot_review_12482", "reviewer": alice.URI}},
		{alice, "decide.reject", map[string]any{"task_id": task, "based_on_artefact_id": "art_bot_review_12482", "reason_category": "false-positive",
			"rationale": "Flagged SQL injection on line 47. Query is parameter-bound through sqlx; bot misread the template-string interpolation."}},
		{alice, "task.complete", map[string]any{"task_id": task, "outcome": "merged"}},
	})
}

func journeyD6(b *Builder) error {
	ws := b.Workspace
	co, junior, partner, bot := coordinator(ws), person("human:junior.k@firm.com", "associate", ws), person("human:smith.j@firm.com", "partner", ws), agent("agent:contract-assist#v5", "drafter", ws)
	msa := map[string]any{"clauses": map[string]any{"liability": map[string]any{"cap": "12_months_fees"}}}
	task := "tsk_msa_acme_corp"
	return b.run(co.URI, []call{
		join(co),
		{co, "workspace.create", map[string]any{"workspace_id": ws, "profiles": []string{"core/1.0", "review/1.0", "identity-vc/1.0"}, "mode": "production"}},
		join(junior), join(partner), join(bot),
		{junior, "task.create", map[string]any{"task_id": task, "kind": "contract_review", "policy_refs": []string{"firm.contract-policy.v3"}}},
		{junior, "task.assign", map[string]any{"task_id": task, "assignee": bot.URI}},
		{bot, "artefact.submit", map[string]any{"task_id": task, "artefact": artefact("art_msa_v1", "lgl_msa_acme_corp", "redline", msa, nil)}},
		{junior, "decide.approve", map[string]any{"task_id": task, "artefact_id": "art_msa_v1", "content_hash": ContentDigest(msa), "note": "standard cap"}},
		{junior, "review.request", map[string]any{"task_id": task, "artefact_id": "art_msa_v1", "reviewer": partner.URI}},
		{partner, "decide.override", map[string]any{"task_id": task, "logical_id": "lgl_msa_acme_corp", "intent_preserved": false,
			"diff": []any{map[string]any{"op": "replace", "path": "/clauses/liability/cap", "from": "12_months_fees", "to": "24_months_fees"},
				map[string]any{"op": "add", "path": "/clauses/liability/carve_outs", "value": "IP-indemnity-uncapped"}},
			"rationale": "Acme is Tier-A; the 12-month cap shouldn't have left juniors' desks. Updating to the Tier-A structure.",
			"tags":      []string{"liability-cap-modified", "tier-a-client", "junior-escalation-miss"}, "policy_refs": []string{"firm.contract-policy.v3#tier-a-clients"}}},
		{partner, "task.complete", map[string]any{"task_id": task, "outcome": "shipped"}},
	})
}

func journeyD7(b *Builder) error {
	ws := b.Workspace
	co, rev, bot := coordinator(ws), person("human:reviewer.j@platform.com", "moderator", ws), agent("agent:ts-classifier#v7.1", "classifier", ws)
	cls := map[string]any{"category": "harassment", "confidence_pct": 91}
	task := "tsk_report_19204821"
	return b.run(co.URI, []call{
		join(co),
		{co, "workspace.create", map[string]any{"workspace_id": ws, "profiles": []string{"core/1.0", "review/1.0", "deliberation/1.0", "modes/1.0", "audit-scitt/1.0"}, "mode": "production"}},
		join(rev), join(bot),
		{co, "task.create", map[string]any{"task_id": task, "kind": "content_report", "policy_refs": []string{"DSA.Art17"}}},
		{co, "task.assign", map[string]any{"task_id": task, "assignee": bot.URI}},
		{bot, "artefact.submit", map[string]any{"task_id": task, "artefact": artefact("art_ai_classification_19204821", "lgl_report_19204821", "classification", cls, map[string]any{"model_id": "ts-classifier-7.1"})}},
		{bot, "review.request", map[string]any{"task_id": task, "artefact_id": "art_ai_classification_19204821", "reviewer": rev.URI}},
		{rev, "decide.approve", map[string]any{"task_id": task, "based_on_artefact_id": "art_ai_classification_19204821", "decision": "take-down", "content_hash": ContentDigest(cls),
			"rationale": "Targeted harassment of a named private individual.", "policy_refs": []string{"community-guidelines.harassment.v6", "DSA.Art17"}}},
		{co, "task.complete", map[string]any{"task_id": task, "outcome": "removed"}},
	})
}

func journeyD8(b *Builder) error {
	ws := b.Workspace
	co, ad, client, bot := coordinator(ws), person("human:ad@agency.example", "creative-director", ws), person("oidc:https://login.acme.example|cmo-2026", "client-approver", ws), agent("agent:copy-gen#v3", "drafter", ws)
	final := map[string]any{"tagline": "Made for the long way home.", "version": 7}
	task := "tsk_campaign_q4_launch"
	return b.run(co.URI, []call{
		join(co),
		{co, "workspace.create", map[string]any{"workspace_id": ws, "profiles": []string{"core/1.0", "review/1.0", "security-signed/1.0", "identity-oidc/1.0"}, "mode": "production"}},
		join(ad), join(client), join(bot),
		{ad, "task.create", map[string]any{"task_id": task, "kind": "campaign_copy"}},
		{ad, "task.assign", map[string]any{"task_id": task, "assignee": bot.URI}},
		{bot, "artefact.submit", map[string]any{"task_id": task, "artefact": artefact("art_final_v7", "lgl_campaign_q4_launch_final", "tagline", final, nil)}},
		{ad, "review.request", map[string]any{"task_id": task, "artefact_id": "art_final_v7", "reviewer": client.URI}},
		{client, "decide.approve", map[string]any{"task_id": task, "based_on_artefact_id": "art_final_v7", "logical_id": "lgl_campaign_q4_launch_final", "content_hash": ContentDigest(final)}},
		{ad, "task.complete", map[string]any{"task_id": task, "outcome": "shipped"}},
	})
}

func journeyD9(b *Builder) error {
	ws := b.Workspace
	co, hr, emp, bot := coordinator(ws), person("human:hr.partner@org.example", "sme", ws), person("human:employee.412@org.example", "requester", ws), agent("agent:hr-bot#v4.0", "answerer", ws)
	task, task2 := "tsk_employee_q_8821", "tsk_employee_q_9034"
	return b.run(co.URI, []call{
		join(co),
		{co, "workspace.create", map[string]any{"workspace_id": ws, "profiles": []string{"core/1.0", "whisper/1.0"}, "mode": "production"}},
		join(hr), join(emp), join(bot),
		{emp, "task.create", map[string]any{"task_id": task, "kind": "employee_question", "input": map[string]any{"question": "Does parental leave cover adoption?"}}},
		{co, "task.assign", map[string]any{"task_id": task, "assignee": bot.URI}},
		{bot, "whisper.ask", map[string]any{"task_id": task, "to": []string{"group:hr-team"}, "question": "Do we treat adoption same as biological?", "options": []string{"yes-same", "no-different", "needs-case-by-case"}, "default_if_no_answer": "needs-case-by-case", "deadline": "2026-05-17T17:00:00Z"}},
		{hr, "whisper.answer", map[string]any{"task_id": task, "choice": "yes-same", "policy_ref": "hr.parental-leave.v3#adoption-eligibility"}},
		{bot, "task.complete", map[string]any{"task_id": task, "outcome": "answered"}},
		{emp, "task.create", map[string]any{"task_id": task2, "kind": "employee_question", "input": map[string]any{"question": "Is a home-office chair expensable?"}}},
		{co, "task.assign", map[string]any{"task_id": task2, "assignee": bot.URI}},
		{bot, "whisper.ask", map[string]any{"task_id": task2, "to": []string{"group:hr-team"}, "question": "Chairs under the equipment policy?", "options": []string{"yes", "no"}, "default_if_no_answer": "no", "deadline": "2026-05-18T17:00:00Z"}},
		{bot, "task.complete", map[string]any{"task_id": task2, "outcome": "answered-with-default"}},
	})
}

func journeyD10(b *Builder) error {
	ws := b.Workspace
	co, pdm, qa, qp := coordinator(ws), agent("agent:pdm-isolator-monitor#v2.4", "monitor", ws), person("human:qa.investigator@biopharma.com", "investigator", ws), person("human:qp.tanaka@biopharma.com", "qualified-person", ws)
	flag := map[string]any{"subject": "Isolator iso-3 dP below threshold during batch BX-48219",
		"evidence": map[string]any{"historian_tag": "PI:IS03.DP", "window": []string{"2026-05-17T03:14:00Z", "2026-05-17T03:20:00Z"}, "value_min": "8.2", "threshold": "10.0"}}
	report := map[string]any{"root_cause": "transient HVAC pressure imbalance", "product_impact": "none", "capa": "CAPA-2026-0419"}
	task := "tsk_qp_release_BX_48219"
	return b.run(co.URI, []call{
		join(co),
		{co, "workspace.create", map[string]any{"workspace_id": ws, "profiles": []string{"core/1.0", "review/1.0", "modes/1.0", "security-signed/1.0", "handoff/1.0", "audit-scitt/1.0"}, "mode": "production"}},
		join(pdm), join(qa), join(qp),
		{pdm, "task.create", map[string]any{"task_id": "tsk_dev_2026_05_17_B3_001", "kind": "deviation_review", "artefact": artefact("art_dev_flag_001", "lgl_dev_2026_05_17_B3_001", "deviation_flag", flag, nil),
			"routing_hints": map[string]any{"criticality": "high", "risk_tier": "GMP-batch-affecting"}, "policy_refs": []string{"GMP.Annex-1.s.4", "site-procedure.fill-finish.v12"}}},
		{co, "task.assign", map[string]any{"task_id": "tsk_dev_2026_05_17_B3_001", "assignee": qa.URI}},
		{qa, "task.accept", map[string]any{"task_id": "tsk_dev_2026_05_17_B3_001"}},
		{qa, "task.complete", map[string]any{"task_id": "tsk_dev_2026_05_17_B3_001", "outcome": "investigated"}},
		{qa, "task.create", map[string]any{"task_id": task, "kind": "batch_disposition", "policy_refs": []string{"GMP.Annex-1.s.4.30"}}},
		{qa, "artefact.submit", map[string]any{"task_id": task, "artefact": artefact("art_investigation_BX_48219", "lgl_batch_BX_48219_disposition", "investigation_report", report, nil)}},
		{co, "task.assign", map[string]any{"task_id": task, "assignee": qp.URI}},
		{qa, "review.request", map[string]any{"task_id": task, "artefact_id": "art_investigation_BX_48219", "reviewer": qp.URI}},
		{qp, "decide.approve", map[string]any{"task_id": task, "logical_id": "lgl_batch_BX_48219_disposition", "signature_meaning": "qp_release", "content_hash": ContentDigest(report),
			"rationale":   "Deviation investigated; root cause = transient HVAC pressure imbalance; product not affected; CAPA-2026-0419 raised for HVAC tuning. Batch released under Annex 1 s.4.30.",
			"policy_refs": []string{"GMP.Annex-1.s.4.30"}}},
		{qp, "task.complete", map[string]any{"task_id": task, "outcome": "released"}},
	})
}

func journeyD11(b *Builder) error {
	ws := b.Workspace
	co, bot, harper := coordinator(ws), agent("agent:fnol-triage-bot#v3.2", "triage", ws), person("human:harper.s@insurer.com", "senior-handler", ws)
	proposal := map[string]any{"settlement": map[string]any{"amount": 4200, "currency": "GBP"}}
	task := "tsk_settlement_MTR-2026-198421"
	return b.run(co.URI, []call{
		join(co),
		{co, "workspace.create", map[string]any{"workspace_id": ws, "profiles": []string{"core/1.0", "review/1.0", "routing/1.0"}, "mode": "production"}},
		join(bot), join(harper),
		{bot, "task.create", map[string]any{"task_id": task, "kind": "fnol_triage", "input": map[string]any{"claim_ref": "MTR-2026-198421", "vulnerability_flags": []string{"recent_bereavement_in_household"}},
			"routing_hints": map[string]any{"criticality": "high", "risk_tier": "consumer-duty-vulnerable", "max_review_lapse_hours": 4}, "policy_refs": []string{"FCA.PS22-9", "internal.vulnerability-policy.v4"}}},
		{co, "task.assign", map[string]any{"task_id": task, "assignee": bot.URI}},
		{bot, "artefact.submit", map[string]any{"task_id": task, "artefact": artefact("art_settlement_198421_v1", "lgl_claim_MTR-2026-198421", "settlement_proposal", proposal, map[string]any{"model_id": "fnol-triage-3.2"})}},
		{bot, "review.request", map[string]any{"task_id": task, "artefact_id": "art_settlement_198421_v1", "reviewer": harper.URI}},
		{harper, "decide.override", map[string]any{"task_id": task, "logical_id": "lgl_claim_MTR-2026-198421", "intent_preserved": true,
			"diff": []any{map[string]any{"op": "replace", "path": "/settlement/amount", "from": 4200, "to": 4800},
				map[string]any{"op": "add", "path": "/settlement/goodwill", "value": map[string]any{"amount": 200, "reason": "bereavement_acknowledgement"}}},
			"rationale":   "Customer disclosed recent bereavement; vulnerability policy applied. Rear bumper scratches the AI flagged appear to be pre-existing. Net adjustment of 600.",
			"tags":        []string{"vulnerability-policy-applied", "ai-damage-misclassified", "fair-outcome-adjustment"},
			"policy_refs": []string{"FCA.PS22-9.fair-outcome", "internal.vulnerability-policy.v4#bereavement"}}},
		{harper, "task.complete", map[string]any{"task_id": task, "outcome": "settled"}},
	})
}

func journeyD12(b *Builder) error {
	ws := b.Workspace
	co, lee, bot := coordinator(ws), person("human:advisor.lee@firm.com", "advisor", ws), agent("agent:advice-assistant#v2", "drafter", ws)
	proposal := map[string]any{"weights": map[string]any{"equities_dm": 55, "equities_em": 12, "bonds": 33}}
	task := "tsk_rebalance_advice_client_4821"
	leeNew := NewParticipant(lee.URI, "human", "advisor", ws+"-2025")
	calls := []call{
		join(co),
		{co, "workspace.create", map[string]any{"workspace_id": ws, "profiles": []string{"core/1.0", "review/1.0", "identity-vc/1.0", "audit-scitt/1.0", "modes/1.0"}, "mode": "trial"}},
		join(lee), join(bot),
		{co, "mode.set", map[string]any{"agent": bot.URI, "mode": "production"}},
		{co, "task.create", map[string]any{"task_id": task, "kind": "rebalancing_advice", "policy_refs": []string{"firm.advice-policy.v8"}}},
		{co, "task.assign", map[string]any{"task_id": task, "assignee": bot.URI}},
		{bot, "artefact.submit", map[string]any{"task_id": task, "artefact": artefact("art_ai_rebalance_proposal_4821", "lgl_client_4821_advice_q2_2024", "proposal", proposal, map[string]any{"model_id": "advice-assistant-2"})}},
		{bot, "review.request", map[string]any{"task_id": task, "artefact_id": "art_ai_rebalance_proposal_4821", "reviewer": lee.URI}},
		{lee, "decide.override", map[string]any{"task_id": task, "logical_id": "lgl_client_4821_advice_q2_2024", "intent_preserved": true,
			"diff":      []any{map[string]any{"op": "replace", "path": "/weights/equities_em", "from": 12, "to": 9}, map[string]any{"op": "replace", "path": "/weights/bonds", "value": 36}},
			"rationale": "Emerging-markets weight reduced from 12 per cent to 9 per cent per client's explicit Q1 instruction.", "tags": []string{"client-instruction"}}},
	}
	if err := b.run(co.URI, calls); err != nil {
		return err
	}
	approved := map[string]any{"weights": map[string]any{"equities_dm": 55, "equities_em": 9, "bonds": 36}}
	if _, err := b.Envelope(lee, co.URI, "decide.approve", map[string]any{"task_id": task, "logical_id": "lgl_client_4821_advice_q2_2024", "based_on_artefact_id": "art_ai_rebalance_proposal_4821",
		"signature_meaning": "advice_authorized", "content_hash": ContentDigest(approved),
		"rationale":   "Client in accumulation phase, risk profile last assessed Nov 2023, no material change. AI proposal accepted with one adjustment.",
		"policy_refs": []string{"firm.advice-policy.v8", "firm.advice-rubric.v3.2", "MiFID-II.suitability"}}); err != nil {
		return err
	}
	if _, err := b.Envelope(lee, co.URI, "task.complete", map[string]any{"task_id": task, "outcome": "advice-issued"}); err != nil {
		return err
	}
	// Years on: the advisor rotated her key before leaving; her earlier approvals stay valid
	// under the old key (a rotation never re-signs earlier entries), then the old key is revoked.
	rot := map[string]any{"old_kid": lee.Kid, "new_jwk": chap.JWK(leeNew.Kid, leeNew.Public())}
	if _, err := b.Envelope(lee, co.URI, "participant.rotate_key", rot); err != nil {
		return err
	}
	if _, err := b.Envelope(co, co.URI, "participant.revoke_key", map[string]any{"participant": lee.URI, "kid": leeNew.Kid, "reason": "left the firm"}); err != nil {
		return err
	}
	_, err := b.Envelope(co, co.URI, "participant.leave", map[string]any{"uri": lee.URI})
	return err
}
