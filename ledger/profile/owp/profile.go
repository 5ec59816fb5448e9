package owp

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/evident-log/evident/internal/sigalg"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
)

// Adapter is the OWP-2 profile adapter.
type Adapter struct{}

// Name returns "owp/2".
func (Adapter) Name() string { return Profile }

// NewState returns an empty envelope state or restores a persisted one.
func (Adapter) NewState(persisted []byte) (ledger.ProfileState, error) {
	st := newState()
	if len(persisted) == 0 {
		return st, nil
	}
	if err := json.Unmarshal(persisted, st); err != nil {
		return nil, fmt.Errorf("owp state: %w", err)
	}
	if st.Keys == nil {
		st.Keys = map[string]map[string]string{}
	}
	if st.Intents == nil {
		st.Intents = map[string]*Intent{}
	}
	return st, nil
}

// Intent lifecycle states (§3.4.2; in-progress is a refinement of accepted and not tracked).
const (
	StateOpen      = "open"
	StateAccepted  = "accepted"
	StateEscalated = "escalated"
	StateResolved  = "resolved"
)

// Intent is the lifecycle state of one Intent of the envelope.
type Intent struct {
	State   string `json:"state"`
	Parent  string `json:"parent,omitempty"`
	Outcome string `json:"outcome,omitempty"`
}

// State is an envelope's profile state.
type State struct {
	// Keys: Worker ID → kid → canonical JWK.
	Keys    map[string]map[string]string `json:"keys"`
	Intents map[string]*Intent           `json:"intents"`
	Root    string                       `json:"root,omitempty"`
	// ClosedAt is the seq of the event that resolved the root Intent (closing the envelope).
	ClosedAt *uint64 `json:"closed_at,omitempty"`
	// Priors are provenance references to other envelopes (at most ledger.MaxFindings kept).
	Priors []PriorRef `json:"priors,omitempty"`
}

// PriorRef is a provenance reference to another (closed) envelope (§3.6.4): the envelope,
// optionally the event there that the work derives from (its event_id) and the envelope's
// sealed Merkle root the producer saw. The verifier resolves it where the bundle holds the
// target envelope.
type PriorRef struct {
	Seq      uint64 `json:"seq"`
	Envelope string `json:"envelope"`
	Event    string `json:"event,omitempty"`
	Root     string `json:"root,omitempty"`
}

func newState() *State {
	return &State{Keys: map[string]map[string]string{}, Intents: map[string]*Intent{}}
}

// Clone returns a deep copy.
func (s *State) Clone() ledger.ProfileState {
	c := &State{Keys: make(map[string]map[string]string, len(s.Keys)), Intents: make(map[string]*Intent, len(s.Intents)),
		Root: s.Root, Priors: slices.Clone(s.Priors)}
	for w, ks := range s.Keys {
		c.Keys[w] = maps.Clone(ks)
	}
	for id, in := range s.Intents {
		cp := *in
		c.Intents[id] = &cp
	}
	if s.ClosedAt != nil {
		v := *s.ClosedAt
		c.ClosedAt = &v
	}
	return c
}

// MarshalJSON persists the state.
func (s *State) MarshalJSON() ([]byte, error) {
	type plain State
	return json.Marshal((*plain)(s))
}

// Admit checks one event and applies its effects (key bindings, Intent lifecycle).
func (s *State) Admit(at ledger.Position, data []byte) (*ledger.Admission, error) {
	e, err := Parse(data)
	if err != nil {
		return nil, err
	}
	if e.Envelope != at.Chain {
		return nil, ledger.Refuse(ledger.CodeWrongChain, "event names envelope %.80q, not %.80q", e.Envelope, at.Chain)
	}
	if _, _, err := ParseEnvelopeID(e.Envelope); err != nil {
		return nil, ledger.Refuse(ledger.CodeWrongChain, "%v", err)
	}
	if !slices.Contains(EventTypes, e.Type) {
		return nil, ledger.Refuse(CodeEventType, "event type %.60q is not one of the OWP-2 §9.1 types this binding lists", e.Type)
	}
	if _, _, _, err := ParseWorkerID(e.Actor); err != nil {
		return nil, ledger.Refuse(CodeWorkerID, "actor %.80q: %v", e.Actor, err)
	}
	if err := ledger.CheckPrev(e.Prev, at.Head); err != nil {
		return nil, err
	}
	if e.Sig == nil {
		return nil, ledger.Refuse(ledger.CodeSignatureRequired, "every OWP-2 event is signed by its Worker (§3.1.4)")
	}
	next := s.Clone().(*State)
	key, err := next.keyFor(e)
	if err != nil {
		return nil, err
	}
	closes, err := next.apply(at.Seq, e)
	if err != nil {
		return nil, err
	}
	input, err := e.SigningInput()
	if err != nil {
		return nil, ledger.Refuse(ledger.CodeMalformed, "signing input: %v", err)
	}
	*s = *next
	sig := e.Sig
	actor := e.Actor
	return &ledger.Admission{
		Canonical: e.Canonical, RecordID: e.ID, Method: e.Type, Sender: e.Actor, TS: e.TS, PrevHash: e.Prev,
		Signed: true, Closes: closes,
		Verify: func() error {
			if err := sigalg.Verify(key, sig.Alg, input, sig.Value); err != nil {
				return &ledger.RecordError{Code: ledger.CodeBadSignature, Err: err,
					Detail: fmt.Sprintf("%s signature by %.80q key %.80q: %v", sig.Alg, actor, sig.Kid, err)}
			}
			return nil
		},
	}, nil
}

// keyFor returns the key the event's signature must verify under, binding a new key for
// WorkerKeyBound.
func (s *State) keyFor(e *Event) (any, error) {
	known := s.Keys[e.Actor]
	if e.Type == WorkerKeyBound {
		kid, _ := e.Payload.String("kid")
		jo, ok := e.Payload.Object("jwk")
		if kid == "" || !ok {
			return nil, ledger.Refuse(ledger.CodeBadKey, "WorkerKeyBound carries payload {kid, jwk}")
		}
		pub, err := sigalg.ParseJWK(jo)
		if err != nil {
			return nil, &ledger.RecordError{Code: ledger.CodeBadKey, Detail: err.Error(), Err: err}
		}
		cj, _ := canonical.Encode(jo)
		if old, bound := known[kid]; bound && old != string(cj) {
			return nil, ledger.Refuse(CodeWorkerRebound, "kid %.60q of %.80q is already bound to another key (§3.1.2)", kid, e.Actor)
		}
		if len(known) == 0 && e.Sig.Kid != kid {
			return nil, ledger.Refuse(ledger.CodeUnauthorized, "a Worker's first key binding is signed by the key it binds (kid %.60q), not %.60q", kid, e.Sig.Kid)
		}
		if len(known) > 0 && e.Sig.Kid == kid && known[kid] == "" {
			return nil, ledger.Refuse(ledger.CodeUnauthorized, "a further key of %.80q is bound by a key already bound, not by itself", e.Actor)
		}
		if s.Keys[e.Actor] == nil {
			s.Keys[e.Actor] = map[string]string{}
		}
		s.Keys[e.Actor][kid] = string(cj)
		if e.Sig.Kid == kid {
			return pub, nil
		}
	}
	jwk, ok := s.Keys[e.Actor][e.Sig.Kid]
	if !ok {
		return nil, ledger.Refuse(ledger.CodeUnknownKey, "no key %.60q bound to %.80q in this envelope", e.Sig.Kid, e.Actor)
	}
	v, err := canonical.Parse([]byte(jwk), canonical.Options{})
	if err != nil {
		return nil, fmt.Errorf("owp state: stored key: %w", err)
	}
	jo, _ := v.(*canonical.Object)
	return sigalg.ParseJWK(jo)
}

func (s *State) intent(e *Event) (string, *Intent, error) {
	id, _ := e.Payload.String("intent_id")
	if id == "" {
		return "", nil, ledger.Refuse(ledger.CodeMalformed, "%s carries payload.intent_id", e.Type)
	}
	in := s.Intents[id]
	if in == nil {
		return id, nil, ledger.Refuse(CodeLifecycle, "%s for Intent %.80q, which is not an Intent of this envelope", e.Type, id)
	}
	return id, in, nil
}

// apply runs the Intent lifecycle and the content rules; it reports whether the event closes
// the envelope (the root Intent resolved).
func (s *State) apply(seq uint64, e *Event) (bool, error) {
	p := e.Payload
	switch e.Type {
	case IntentCreated:
		id, _ := p.String("intent_id")
		if id == "" {
			return false, ledger.Refuse(ledger.CodeMalformed, "IntentCreated carries payload.intent_id")
		}
		if s.Intents[id] != nil {
			return false, ledger.Refuse(CodeLifecycle, "Intent %.80q was already created in this envelope", id)
		}
		prov, _ := p.Object("provenance")
		parent, _ := prov.String("parent_intent")
		if _, ok := prov.Get("prior_envelope"); !ok {
			if _, ev := prov.Get("prior_event"); ev {
				return false, ledger.Refuse(ledger.CodeMalformed, "provenance.prior_event needs provenance.prior_envelope")
			}
			if _, rt := prov.Get("prior_root"); rt {
				return false, ledger.Refuse(ledger.CodeMalformed, "provenance.prior_root needs provenance.prior_envelope")
			}
		}
		if pv, ok := prov.Get("prior_envelope"); ok {
			prior, _ := pv.(string)
			if _, _, err := ParseEnvelopeID(prior); err != nil || prior == e.Envelope {
				return false, ledger.Refuse(ledger.CodeMalformed, "provenance.prior_envelope must name another envelope URI")
			}
			ref := PriorRef{Seq: seq, Envelope: prior}
			if v, ok := prov.Get("prior_event"); ok {
				if ref.Event, _ = v.(string); ref.Event == "" {
					return false, ledger.Refuse(ledger.CodeMalformed, "provenance.prior_event must be the event_id of an event of the prior envelope")
				}
			}
			if v, ok := prov.Get("prior_root"); ok {
				ref.Root, _ = v.(string)
				if _, err := ledger.ParseLink(ref.Root); err != nil {
					return false, ledger.Refuse(ledger.CodeMalformed, "provenance.prior_root must be the prior envelope's sealed root \"sha256:<hex>\"")
				}
			}
			if len(s.Priors) < ledger.MaxFindings {
				s.Priors = append(s.Priors, ref)
			}
		}
		if parent == "" {
			if s.Root != "" {
				return false, ledger.Refuse(CodeLifecycle, "the envelope's top-level Intent is %.80q; another top-level Intent needs its own envelope (§3.6.2)", s.Root)
			}
			s.Root = id
		} else {
			pi := s.Intents[parent]
			if pi == nil {
				return false, ledger.Refuse(CodeLifecycle, "sub-Intent %.80q names parent %.80q, which is not an Intent of this envelope (sub-Intents share their root's envelope)", id, parent)
			}
			if pi.State == StateResolved {
				return false, ledger.Refuse(CodeLifecycle, "parent Intent %.80q is already resolved", parent)
			}
		}
		s.Intents[id] = &Intent{State: StateOpen, Parent: parent}
	case IntentAccepted:
		id, in, err := s.intent(e)
		if err != nil {
			return false, err
		}
		if in.State != StateOpen && in.State != StateEscalated {
			return false, ledger.Refuse(CodeLifecycle, "Intent %.80q cannot be accepted from state %s", id, in.State)
		}
		in.State = StateAccepted
	case IntentEscalated:
		id, in, err := s.intent(e)
		if err != nil {
			return false, err
		}
		if in.State != StateAccepted {
			return false, ledger.Refuse(CodeLifecycle, "Intent %.80q cannot be escalated from state %s", id, in.State)
		}
		in.State = StateEscalated
	case IntentDispatched, CapabilityInvoked:
		if _, ok := p.Get("intent_id"); ok || e.Type == IntentDispatched {
			id, in, err := s.intent(e)
			if err != nil {
				return false, err
			}
			if in.State == StateResolved {
				return false, ledger.Refuse(CodeLifecycle, "%s under Intent %.80q, which is resolved", e.Type, id)
			}
		}
		if e.Type == CapabilityInvoked {
			if err := checkKnowledge(p); err != nil {
				return false, err
			}
		}
	case IntentResolved:
		id, in, err := s.intent(e)
		if err != nil {
			return false, err
		}
		if in.State == StateResolved {
			return false, ledger.Refuse(CodeLifecycle, "Intent %.80q is already resolved", id)
		}
		outcome, _ := p.String("outcome")
		if !slices.Contains(Outcomes, outcome) {
			return false, ledger.Refuse(CodeLifecycle, "outcome %.40q is not achieved, refused or abandoned", outcome)
		}
		in.State, in.Outcome = StateResolved, outcome
		if id == s.Root {
			v := seq
			s.ClosedAt = &v
			return true, nil
		}
	}
	return false, nil
}

// checkKnowledge enforces the (knowledge_base_id, knowledge_base_version, retrieved_content_hash)
// triple on every retrieval a CapabilityInvoked event records (payload.knowledge: an object or
// an array of objects).
func checkKnowledge(p *canonical.Object) error {
	kv, ok := p.Get("knowledge")
	if !ok {
		return nil
	}
	var refs []canonical.Value
	switch k := kv.(type) {
	case []canonical.Value:
		refs = k
	default:
		refs = []canonical.Value{k}
	}
	for i, r := range refs {
		o, ok := r.(*canonical.Object)
		if !ok || o == nil {
			return ledger.Refuse(CodeKnowledgeRef, "knowledge reference %d is not an object", i)
		}
		id, _ := o.String("knowledge_base_id")
		_, hasVersion := o.Get("knowledge_base_version")
		h, _ := o.String("retrieved_content_hash")
		if id == "" || !hasVersion || h == "" {
			return ledger.Refuse(CodeKnowledgeRef, "knowledge reference %d lacks knowledge_base_id, knowledge_base_version or retrieved_content_hash", i)
		}
		if _, err := sigalg.ParseDigest(h); err != nil {
			return ledger.Refuse(CodeKnowledgeRef, "knowledge reference %d: retrieved_content_hash: %v", i, err)
		}
	}
	return nil
}
