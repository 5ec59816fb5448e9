// Package owpscenario builds realistic, signed OWP-2 Audit Envelopes for tests, the demo and the
// published vectors: a coverage team of three Workers signing with Ed25519, ECDSA P-256
// (SHA3-256) and RSA-PSS-3072, a top-level Intent with a dispatched sub-Intent, a Knowledge
// Base retrieval, an escalation and the root Intent's resolution, which closes the envelope.
package owpscenario

import (
	"crypto"
	"encoding/json"
	"fmt"
	"time"

	"github.com/evident-log/evident/internal/sigalg"
	"github.com/evident-log/evident/internal/testkeys"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile/owp"
)

// Worker is an OWP-2 Worker with its signing key.
type Worker struct {
	ID  string
	Kid string
	Alg string
	Key crypto.Signer
}

// Builder writes an envelope's events in order, each linked to the previous and signed.
type Builder struct {
	Envelope string
	Clock    time.Time
	head     ledger.Link
	n        int
	out      [][]byte
}

// NewBuilder starts an empty envelope.
func NewBuilder(envelope string, start time.Time) *Builder {
	return &Builder{Envelope: envelope, Clock: start.UTC()}
}

// Event appends one event of typ by w with payload; it returns the signed record.
func (b *Builder) Event(w *Worker, typ string, payload map[string]any) ([]byte, error) {
	b.n++
	b.Clock = b.Clock.Add(3 * time.Second)
	ev := map[string]any{"owp": owp.Version, "event_id": fmt.Sprintf("evt:%s:%04d", b.Envelope, b.n), "envelope": b.Envelope,
		"type": typ, "ts": ledger.Timestamp(b.Clock), "actor": w.ID, "payload": payload, "prev": b.head.String()}
	raw, err := Sign(ev, w)
	if err != nil {
		return nil, err
	}
	c, err := canonical.Canonicalize(raw, canonical.Options{})
	if err != nil {
		return nil, err
	}
	b.head = ledger.NextLink(c, b.head)
	b.out = append(b.out, raw)
	return raw, nil
}

// Bind appends w's WorkerKeyBound event, self-signed.
func (b *Builder) Bind(w *Worker) error {
	jwk, err := sigalg.JWK(w.Key.Public())
	if err != nil {
		return err
	}
	jb, _ := canonical.Encode(jwk)
	var jm map[string]any
	json.Unmarshal(jb, &jm)
	_, err = b.Event(w, owp.WorkerKeyBound, map[string]any{"kid": w.Kid, "jwk": jm, "alg": w.Alg})
	return err
}

// Records returns the events written so far.
func (b *Builder) Records() [][]byte { return b.out }

// Head returns the chain head after the last event.
func (b *Builder) Head() ledger.Link { return b.head }

// Sign signs an event given as a Go map with w's key and returns its JSON.
func Sign(ev map[string]any, w *Worker) ([]byte, error) {
	raw, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	v, err := canonical.Parse(raw, canonical.Options{})
	if err != nil {
		return nil, err
	}
	signed, err := owp.Sign(v.(*canonical.Object), w.Key, w.Alg, w.Kid)
	if err != nil {
		return nil, err
	}
	return canonical.Encode(signed)
}

// Team is the coverage workforce of the scenario.
type Team struct {
	RM, Analyst, Compliance *Worker
}

// NewTeam returns the three Workers of workforce wf, one per signature algorithm family.
func NewTeam(wf string) *Team {
	return &Team{
		RM:         &Worker{ID: "worker:bank-au:" + wf + ":rm-c1029384", Kid: "rm-2026-05", Alg: sigalg.Ed25519, Key: testkeys.Ed25519("owp-rm")},
		Analyst:    &Worker{ID: "worker:bank-au:" + wf + ":credit-analyst-7", Kid: "ca-2026-05", Alg: sigalg.ECDSAP256SHA3, Key: testkeys.P256("owp-analyst")},
		Compliance: &Worker{ID: "worker:bank-au:" + wf + ":compliance-lead", Kid: "cl-2026-01", Alg: sigalg.RSAPSS3072SHA256, Key: testkeys.RSA3072()},
	}
}

// CoverageOutreach is the fixture: a counterparty bankruptcy signal leads a relationship
// manager to a customer-outreach Intent; a credit-analysis sub-Intent is dispatched, retrieves
// the credit policy from a Knowledge Base and resolves; the root Intent is escalated to
// compliance, accepted and resolved "achieved", which closes the envelope. 14 events.
func CoverageOutreach(envelope string, start time.Time) (*Builder, *Team, error) {
	wf, _, err := owp.ParseEnvelopeID(envelope)
	if err != nil {
		return nil, nil, err
	}
	t := NewTeam(wf)
	b := NewBuilder(envelope, start)
	root, sub := "int:"+envelope+":outreach", "int:"+envelope+":credit-check"
	steps := []func() error{
		func() error { return b.Bind(t.RM) },
		func() error { return b.Bind(t.Analyst) },
		func() error { return b.Bind(t.Compliance) },
		ev(b, t.RM, owp.SignalReceived, map[string]any{"signal_id": "sig:01HXXJ3F2K8N0QRSTUV001",
			"kind": "signal:asic:insolvency:bankruptcy-filed/v1", "filing_reference": "ASIC-2026-NSW-184729"}),
		ev(b, t.RM, owp.IntentCreated, map[string]any{"intent_id": root, "kind": "intent:bank-au:coverage:propose-customer-outreach/v1",
			"provenance": map[string]any{"originating_signal": "sig:01HXXJ3F2K8N0QRSTUV001", "parent_intent": nil},
			"bounds":     map[string]any{"cost_ceiling_aud": 5.00, "deadline": "2026-05-07T07:00:00Z", "decision_scope": "propose-only"}}),
		ev(b, t.RM, owp.IntentAccepted, map[string]any{"intent_id": root}),
		ev(b, t.RM, owp.IntentCreated, map[string]any{"intent_id": sub, "kind": "intent:bank-au:credit:exposure-review/v1",
			"provenance": map[string]any{"parent_intent": root}}),
		ev(b, t.RM, owp.IntentDispatched, map[string]any{"intent_id": sub, "to": t.Analyst.ID}),
		ev(b, t.Analyst, owp.IntentAccepted, map[string]any{"intent_id": sub}),
		ev(b, t.Analyst, owp.CapabilityInvoked, map[string]any{"intent_id": sub, "capability": "capability:bank-au:knowledge:retrieve/v1",
			"cost": map[string]any{"amount_aud": 0.04, "units": 1},
			"knowledge": []any{map[string]any{"knowledge_base_id": "kb:bank-au:credit-policy", "knowledge_base_version": 42,
				"retrieved_content_hash": "sha3-256:9f3b1c1e8a0d4c57b2e6f1a3d5c7e9b0a2c4e6f8091a3b5c7d9e1f203a4b5c6d"}}}),
		ev(b, t.Analyst, owp.IntentResolved, map[string]any{"intent_id": sub, "outcome": "achieved",
			"summary": "Exposure AUD 1.82M within facility headroom; recommend working-capital conversation."}),
		ev(b, t.RM, owp.IntentEscalated, map[string]any{"intent_id": root, "to": t.Compliance.ID, "reason": "customer in distressed supply chain: compliance sign-off"}),
		ev(b, t.Compliance, owp.IntentAccepted, map[string]any{"intent_id": root}),
		ev(b, t.Compliance, owp.IntentResolved, map[string]any{"intent_id": root, "outcome": "achieved", "summary": "Outreach approved: call scheduled."}),
	}
	for i, s := range steps {
		if err := s(); err != nil {
			return nil, nil, fmt.Errorf("owp scenario step %d: %w", i, err)
		}
	}
	return b, t, nil
}

func ev(b *Builder, w *Worker, typ string, payload map[string]any) func() error {
	return func() error { _, err := b.Event(w, typ, payload); return err }
}
