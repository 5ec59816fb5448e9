// Package chapscenario builds realistic, signed CHAP 0.3 workspaces for the demo, tests and
// benchmarks: participants with deterministic Ed25519 keys and envelopes with a top-level
// `sig`, either in the reference Coordinator's wire form (routing fields in params) or in
// the paper's Listing 1 form (routing fields on top, with `evidence.prev_hash`).
package chapscenario

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile/chap"
)

// Participant is a workspace member with its signing key.
type Participant struct {
	URI  string
	Type string
	Role string
	Kid  string
	Key  ed25519.PrivateKey
}

// NewParticipant derives a participant's key deterministically from its URI and a seed
// label, so scenarios are reproducible byte for byte.
func NewParticipant(uri, typ, role, label string) *Participant {
	seed := sha256.Sum256([]byte("evident-scenario:" + label + ":" + uri))
	return &Participant{URI: uri, Type: typ, Role: role, Kid: fmt.Sprintf("k-%x", seed[:4]), Key: ed25519.NewKeyFromSeed(seed[:])}
}

// Public returns the participant's public key.
func (p *Participant) Public() ed25519.PublicKey { return p.Key.Public().(ed25519.PublicKey) }

// Form is the wire form a Builder writes.
type Form int

const (
	// Paper is the CHAP paper's Listing 1 form: chap, from, to, ts, workspace and type on
	// top, evidence.prev_hash naming the predecessor.
	Paper Form = iota
	// Reference is the reference Coordinator's JSON-RPC form: {jsonrpc, id, method,
	// params:{workspace, from, to?, ts, …}, sig}; joins carry params.jwks.keys[].
	Reference
)

// Builder writes a workspace's envelopes in order, linking and signing each.
type Builder struct {
	Workspace string
	Form      Form
	Clock     time.Time
	Step      time.Duration
	// Sink, when set, receives each envelope instead of the builder keeping it, so a
	// million-entry chain can be streamed to a file.
	Sink   func(raw []byte) error
	head   ledger.Link
	n      int
	out    [][]byte
	joined int
	admins []*Participant
}

// NewBuilder starts an empty workspace chain.
func NewBuilder(workspace string, start time.Time) *Builder {
	return &Builder{Workspace: workspace, Clock: start.UTC(), Step: 7 * time.Second}
}

// Envelope appends one signed envelope from p calling method with params.
func (b *Builder) Envelope(p *Participant, to, method string, params map[string]any) ([]byte, error) {
	b.n++
	b.Clock = b.Clock.Add(b.Step)
	var env map[string]any
	if b.Form == Reference {
		ps := map[string]any{"workspace": b.Workspace, "from": p.URI, "ts": ledger.Timestamp(b.Clock)}
		if to != "" {
			ps["to"] = to
		}
		for k, v := range params {
			ps[k] = v
		}
		env = map[string]any{"jsonrpc": "2.0", "id": fmt.Sprintf("%s-%06d", b.Workspace, b.n), "method": method, "params": ps}
	} else {
		env = b.paper(p, to, method, params)
	}
	return b.sign(p, env)
}

// paper returns the envelope of the paper's Listing 1 form.
func (b *Builder) paper(p *Participant, to, method string, params map[string]any) map[string]any {
	return map[string]any{
		"jsonrpc":   "2.0",
		"chap":      "0.3",
		"id":        fmt.Sprintf("%s-%06d", b.Workspace, b.n),
		"ts":        ledger.Timestamp(b.Clock),
		"workspace": b.Workspace,
		"from":      p.URI,
		"to":        to,
		"type":      "request",
		"method":    method,
		"params":    params,
		"evidence":  map[string]any{"prev_hash": b.head.String()},
	}
}

// sign signs env with p's key, links it and keeps (or sinks) it.
func (b *Builder) sign(p *Participant, env map[string]any) ([]byte, error) {
	raw, err := json.Marshal(env)
	if err != nil {
		return nil, err
	}
	tag, err := chap.Sign(raw, p.Kid, p.Key)
	if err != nil {
		return nil, err
	}
	env["sig"] = tag
	raw, err = json.Marshal(env)
	if err != nil {
		return nil, err
	}
	c, err := canonical.Canonicalize(raw, canonical.CHAP)
	if err != nil {
		return nil, err
	}
	b.head = ledger.NextLink(c, b.head)
	if b.Sink != nil {
		return raw, b.Sink(raw)
	}
	b.out = append(b.out, raw)
	return raw, nil
}

// Join appends p's participant.join carrying its JWK: self-signed, except that an admin
// joining a workspace that already has members is admitted by a join an existing admin
// signs (CHAP binding, "Roles": nobody declares itself admin after the first member).
func (b *Builder) Join(p *Participant, coordinator string) error {
	params := map[string]any{"uri": p.URI, "type": p.Type, "role": p.Role, "jwk": chap.JWK(p.Kid, p.Public())}
	if b.Form == Reference {
		// The reference Coordinator's join: the participant is the sender, its keys a JWK Set.
		jwk := chap.JWK(p.Kid, p.Public())
		jwk["use"], jwk["alg"] = "sig", "EdDSA"
		params = map[string]any{"type": p.Type, "role": p.Role, "display_name": p.URI, "jwks": map[string]any{"keys": []any{jwk}}}
		coordinator = ""
	}
	from := p
	if p.Role == chap.RoleAdmin && b.joined > 0 {
		if len(b.admins) == 0 {
			return fmt.Errorf("scenario: %s joins as admin but no admin can grant it", p.URI)
		}
		from = b.admins[0]
		params["uri"] = p.URI // the admin's join for p names p
	}
	if _, err := b.Envelope(from, coordinator, "participant.join", params); err != nil {
		return err
	}
	b.joined++
	if p.Role == chap.RoleAdmin {
		b.admins = append(b.admins, p)
	}
	return nil
}

// Records returns the envelopes written so far.
func (b *Builder) Records() [][]byte { return b.out }

// Head returns the chain head after the envelopes written so far.
func (b *Builder) Head() ledger.Link { return b.head }

// Cast is the support-triage cast: a Coordinator service, two humans and an agent.
type Cast struct {
	Coordinator, Alice, Bob, Bot *Participant
}

// NewCast returns the support-triage participants.
func NewCast() Cast {
	return Cast{
		// The Coordinator service joins first and administers the workspace; it grants Alice admin.
		Coordinator: NewParticipant("service:coordinator@example.org", "service", chap.RoleAdmin, "triage"),
		Alice:       NewParticipant("human:alice@example.org", "human", "admin", "triage"),
		Bob:         NewParticipant("human:bob@example.org", "human", "reviewer", "triage"),
		Bot:         NewParticipant("agent:triage-bot#v3.2", "agent", "drafter", "triage"),
	}
}

// SupportTriage writes the demo's support-triage workspace: four joins, a task assigned to
// an agent, its draft, a review, a human override with diff and rationale, an approval and
// the completion — thirteen signed calls.
func SupportTriage(workspace string, start time.Time) (*Builder, Cast, error) {
	c := NewCast()
	b := NewBuilder(workspace, start)
	co := c.Coordinator.URI
	steps := []func() error{
		func() error { return b.Join(c.Coordinator, co) },
		func() error {
			_, err := b.Envelope(c.Coordinator, co, "workspace.create", map[string]any{"workspace_id": workspace, "profiles": []string{"core/1.0", "review/1.0", "audit-scitt/1.0"}, "mode": "trial"})
			return err
		},
		func() error { return b.Join(c.Alice, co) },
		func() error { return b.Join(c.Bob, co) },
		func() error { return b.Join(c.Bot, co) },
		func() error {
			_, err := b.Envelope(c.Alice, co, "task.create", map[string]any{"task_id": "tsk_48910", "kind": "draft_customer_response",
				"input":         map[string]any{"ticket_id": "INC-48910", "customer_message": "Order arrived broken; please refund."},
				"routing_hints": map[string]any{"criticality": "medium", "deadline": "2026-05-17T10:00:00Z"}})
			return err
		},
		func() error {
			_, err := b.Envelope(c.Alice, c.Bot.URI, "task.assign", map[string]any{"task_id": "tsk_48910", "assignee": c.Bot.URI})
			return err
		},
		func() error {
			_, err := b.Envelope(c.Bot, co, "task.update", map[string]any{"task_id": "tsk_48910", "status": "in_progress"})
			return err
		},
		func() error {
			content := map[string]any{"body": "We are sorry your order arrived damaged. A refund of 100 EUR has been issued.", "refund_eur": 100}
			_, err := b.Envelope(c.Bot, co, "artefact.submit", map[string]any{"task_id": "tsk_48910", "artefact": map[string]any{
				"id": "art_1", "logical_id": "lgl_reply_48910", "kind": "draft",
				"content": content, "content_hash": ContentDigest(content)}})
			return err
		},
		func() error {
			_, err := b.Envelope(c.Bot, c.Bob.URI, "review.request", map[string]any{"task_id": "tsk_48910", "artefact_id": "art_1", "reviewer": c.Bob.URI})
			return err
		},
		func() error {
			_, err := b.Envelope(c.Bob, co, "decide.override", map[string]any{"task_id": "tsk_48910", "logical_id": "lgl_reply_48910", "intent_preserved": true,
				"diff":      []map[string]any{{"op": "replace", "path": "/body", "value": "We are sorry your order arrived damaged. We will send a replacement today; a refund is available if you prefer."}, {"op": "remove", "path": "/refund_eur"}},
				"rationale": "Policy: replacement first for damaged goods under 200 EUR; refunds on request.",
				"tags":      []string{"policy-refund-order", "tone-ok"}})
			return err
		},
		func() error {
			_, err := b.Envelope(c.Alice, co, "decide.approve", map[string]any{"task_id": "tsk_48910", "artefact_id": "art_1", "logical_id": "lgl_reply_48910", "note": "approved as overridden"})
			return err
		},
		func() error {
			_, err := b.Envelope(c.Bot, co, "task.complete", map[string]any{"task_id": "tsk_48910", "outcome": "sent"})
			return err
		},
	}
	for i, s := range steps {
		if err := s(); err != nil {
			return nil, c, fmt.Errorf("support triage step %d: %w", i+1, err)
		}
	}
	return b, c, nil
}

// Long writes a chain of n signed envelopes (four joins, then tasks of ten entries each: a
// task.create assigning it, then task updates from rotating senders), for load and
// verification benchmarks. The chain is one a Coordinator could have recorded: its replay
// finds nothing (every task an update names was created). A nil sink keeps them in the builder.
func Long(workspace string, n int, start time.Time, sink func([]byte) error) (*Builder, error) {
	return LongForm(workspace, n, start, Paper, sink)
}

// LongForm is Long in the given wire form.
func LongForm(workspace string, n int, start time.Time, form Form, sink func([]byte) error) (*Builder, error) {
	c := NewCast()
	b := NewBuilder(workspace, start)
	b.Form = form
	b.Sink = sink
	b.Step = time.Millisecond
	for _, p := range []*Participant{c.Coordinator, c.Alice, c.Bob, c.Bot} {
		if b.n >= n {
			break
		}
		if err := b.Join(p, c.Coordinator.URI); err != nil {
			return nil, err
		}
	}
	senders := []*Participant{c.Bot, c.Alice, c.Bob}
	first := b.n
	for i := b.n; i < n; i++ {
		task := fmt.Sprintf("tsk_%d", i/10)
		if i == first || i%10 == 0 {
			// Every task the updates name is created (and assigned) first, as a real
			// Coordinator's chain has it: the replay of a long chain has nothing to report.
			if _, err := b.Envelope(c.Alice, c.Coordinator.URI, "task.create", map[string]any{
				"task_id": task, "kind": "draft_customer_response", "assignee": c.Bot.URI,
				"input": map[string]any{"ticket_id": fmt.Sprintf("INC-%d", i/10)}}); err != nil {
				return nil, err
			}
			continue
		}
		p := senders[i%len(senders)]
		if _, err := b.Envelope(p, c.Coordinator.URI, "task.update", map[string]any{
			"task_id": task, "status": "in_progress", "progress": i % 100,
			"note": "checked order history, carrier report and photos; preparing the reply"}); err != nil {
			return nil, err
		}
	}
	return b, nil
}
