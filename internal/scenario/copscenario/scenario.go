// Package copscenario builds a realistic COP 1.0 Topic for tests, the demo and the published
// vectors: a claims-handling Topic whose events arrive both as COP JSON and as CloudEvents 1.0
// (structured mode), with copHash and the node's signature on each and a causal DAG through
// parentEventIds.
package copscenario

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/evident-log/evident/internal/sigalg"
	"github.com/evident-log/evident/internal/testkeys"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile/cop"
)

// Node is the emitting COP node of the scenario.
var Node = "urn:cop:node:alpha"

// KeyID is the node's event-signing key id.
const KeyID = "urn:cop:key:node-alpha"

// Event builds one COP-form event with its copHash and, when sign is set, the node signature.
func Event(topic string, seq int, id, typ string, created time.Time, payload map[string]any, parents []string, sign bool) (*canonical.Object, error) {
	ev := map[string]any{"id": id, "topicId": topic, "topicSeq": seq, "type": typ, "schemaVersion": "1.0",
		"createdAt": ledger.Timestamp(created), "payload": payload, "metadata": map[string]any{"nodeId": Node}}
	if len(parents) > 0 {
		ev["parentEventIds"] = parents
	}
	raw, _ := json.Marshal(ev)
	v, err := canonical.Parse(raw, canonical.Options{})
	if err != nil {
		return nil, err
	}
	o := v.(*canonical.Object)
	in, _ := canonical.Encode(o)
	h, _ := sigalg.Hash(sigalg.SHA256, in)
	o.Members = append(o.Members, canonical.Member{Key: "copHash", Value: &canonical.Object{Members: []canonical.Member{
		{Key: "alg", Value: h.Alg}, {Key: "value", Value: fmt.Sprintf("%x", h.Value)}}}})
	if sign {
		in, _ := canonical.Encode(o)
		sv, err := sigalg.Sign(testkeys.Ed25519("cop-node-alpha"), sigalg.Ed25519, in)
		if err != nil {
			return nil, err
		}
		o.Members = append(o.Members, canonical.Member{Key: "signature", Value: (&sigalg.Signature{Alg: sigalg.Ed25519, Kid: KeyID, Value: sv}).Object("keyId")})
	}
	return o, nil
}

// ToCloudEvent projects a COP-form event onto a structured-mode CloudEvent 1.0 (§6.1).
func ToCloudEvent(o *canonical.Object, source string) *canonical.Object {
	rev := map[string]string{"id": "id", "type": "type", "createdAt": "time", "payload": "data", "schemaVersion": "dataschema",
		"topicId": "subject", "topicSeq": "copTopicSeq", "correlationId": "copCorrelationId", "parentEventIds": "copParentEventIds",
		"copHash": "copHash", "metadata": "copMetadata", "signature": "copSignature"}
	out := &canonical.Object{Members: []canonical.Member{{Key: "specversion", Value: "1.0"}, {Key: "source", Value: source},
		{Key: "datacontenttype", Value: "application/json"}}}
	for _, m := range o.Members {
		out.Members = append(out.Members, canonical.Member{Key: rev[m.Key], Value: m.Value})
	}
	return out
}

// ClaimsTopic returns the records of the fixture Topic (7 events, JSON and CloudEvents mixed).
func ClaimsTopic(topic string, start time.Time) ([][]byte, error) {
	jwk, err := sigalg.JWK(testkeys.Ed25519("cop-node-alpha").Public())
	if err != nil {
		return nil, err
	}
	jb, _ := canonical.Encode(jwk)
	var jm map[string]any
	json.Unmarshal(jb, &jm)
	at := func(i int) time.Time { return start.Add(time.Duration(i) * 11 * time.Second) }
	e := func(i int) string { return fmt.Sprintf("urn:cop:event:%s:%d", topic, i) }
	steps := []struct {
		typ     string
		payload map[string]any
		parents []string
		sign    bool
		ce      bool
	}{
		{cop.KeyDeclared, map[string]any{"keyId": KeyID, "jwk": jm}, nil, true, false},
		{"topic.created", map[string]any{"title": "Water damage claim 4711", "policy": "HOME-22-0931"}, nil, true, false},
		{"task.created", map[string]any{"taskId": "urn:cop:task:assess-4711", "title": "Assess damage photos"}, []string{e(1)}, true, true},
		{"agent.reply", map[string]any{"taskId": "urn:cop:task:assess-4711", "agent": "agent:assessor", "estimate_eur": 1840.5,
			"confidence": 0.82}, []string{e(2)}, true, false},
		{"human.input.provided", map[string]any{"taskId": "urn:cop:task:assess-4711", "human": "user:adjuster-17", "decision": "approve-with-cap",
			"cap_eur": 1800}, []string{e(3)}, true, true},
		{"task.completed", map[string]any{"taskId": "urn:cop:task:assess-4711", "outcome": "payout-scheduled"}, []string{e(4)}, true, false},
		{"topic.closed", map[string]any{"reason": "claim settled"}, []string{e(5)}, true, true},
	}
	var out [][]byte
	for i, s := range steps {
		o, err := Event(topic, i, e(i), s.typ, at(i), s.payload, s.parents, s.sign)
		if err != nil {
			return nil, err
		}
		if s.ce {
			o = ToCloudEvent(o, Node)
		}
		b, err := canonical.Encode(o)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}
