// Package cop is the COP 1.0 (Cognitive Orchestration Protocol) profile adapter, profile name
// "cop/1.0", and Evident's COP Ledger (§9.5–9.7).
//
// One evidence chain per Topic (chain id = topicId). A record is a COP Event as received:
// the COP JSON form of §2.2, or a CloudEvent 1.0 in structured mode, which is mapped to the
// COP form per §6.1–6.2 (id, type, time→createdAt, data→payload, dataschema→schemaVersion,
// subject→topicId, copTopicSeq, copCorrelationId, copParentEventIds, copHash, copMetadata;
// the event signature travels as copSignature). The link covers the record as received; the
// rules run on the COP form:
//
//   - copHash {alg, value} (sha-256 or sha3-256), when present, equals the hash of
//     JCS(event − copHash − signature) (§9.2; the signature is left out so that an event can
//     carry both, see docs/profiles/cop.md);
//   - topicSeq starts at 0 or 1 and grows by exactly 1 (§3.1);
//   - parentEventIds: a parent in the same Topic precedes its child; an event naming itself or
//     a later event of the Topic is a causal cycle (finding parent_cycle); a parent the chain
//     never holds is reported not_evaluated (parent_not_in_bundle);
//   - an optional signature {alg, keyId, value} over JCS(event − signature) verifies under a key
//     declared in the Topic by a "cop.key.declared" event {keyId, jwk}, self-signed.
//
// Ledger builds and verifies COP Ledger records (§9.6) over accepted events: Evident emits one
// per accepted event, signed by its node key, and verifies its own and imported ledgers.
package cop

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/evident-log/evident/internal/sigalg"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
)

// Profile is the profile name of COP 1.0 topic chains.
const Profile = "cop/1.0"

// KeyDeclared is the event type that declares a signing key in a Topic (Evident's binding).
const KeyDeclared = "cop.key.declared"

// Event is one parsed COP Event (COP form) with the record's canonical bytes.
type Event struct {
	Canonical   []byte            // JCS of the record as received: what the chain link hashes
	COP         *canonical.Object // the COP form (a CloudEvent mapped per §6.1)
	CloudEvent  bool
	Source      string
	ID, TopicID string
	Type        string
	TopicSeq    int64
	CreatedAt   time.Time
	Parents     []string
	Hash        *sigalg.Digest // copHash, nil when absent
	Sig         *sigalg.Signature
}

// ceMap maps CloudEvent attributes to COP fields (§6.1.2, §6.2.1).
var ceMap = map[string]string{"id": "id", "type": "type", "time": "createdAt", "data": "payload", "dataschema": "schemaVersion",
	"subject": "topicId", "copTopicSeq": "topicSeq", "copCorrelationId": "correlationId", "copParentEventIds": "parentEventIds",
	"copHash": "copHash", "copMetadata": "metadata", "copSignature": "signature"}

// FromCloudEvent maps a structured-mode CloudEvent 1.0 to the COP form (unknown extensions
// are ignored, §6.2.2).
func FromCloudEvent(ce *canonical.Object) (*canonical.Object, string, error) {
	if v, _ := ce.String("specversion"); v != "1.0" {
		return nil, "", errors.New(`a CloudEvent carries "specversion": "1.0"`)
	}
	if ct, ok := ce.String("datacontenttype"); ok && ct != "application/json" {
		return nil, "", fmt.Errorf("datacontenttype %.40q: only application/json data maps to a COP payload", ct)
	}
	src, _ := ce.String("source")
	out := &canonical.Object{}
	for _, m := range ce.Members {
		if k, ok := ceMap[m.Key]; ok {
			out.Members = append(out.Members, canonical.Member{Key: k, Value: m.Value})
		}
	}
	return out, src, nil
}

// Parse parses one record (COP JSON or CloudEvent) under strict JSON.
func Parse(data []byte) (*Event, error) {
	v, err := canonical.Parse(data, canonical.Options{})
	if err != nil {
		code := ledger.CodeMalformed
		if errors.Is(err, canonical.ErrTooLarge) || errors.Is(err, canonical.ErrTooDeep) {
			code = ledger.CodeTooLarge
		}
		return nil, &ledger.RecordError{Code: code, Detail: err.Error(), Err: err}
	}
	obj, ok := v.(*canonical.Object)
	if !ok {
		return nil, ledger.Refuse(ledger.CodeMalformed, "a COP Event is a JSON object")
	}
	e := &Event{COP: obj}
	if _, isCE := obj.Get("specversion"); isCE {
		e.CloudEvent = true
		if e.COP, e.Source, err = FromCloudEvent(obj); err != nil {
			return nil, ledger.Refuse(ledger.CodeMalformed, "%v", err)
		}
	}
	if e.Canonical, err = canonical.Encode(obj); err != nil {
		return nil, ledger.Refuse(ledger.CodeMalformed, "canonical encoding: %v", err)
	}
	c := e.COP
	e.ID, _ = c.String("id")
	e.TopicID, _ = c.String("topicId")
	e.Type, _ = c.String("type")
	if e.ID == "" || e.TopicID == "" || e.Type == "" {
		return nil, ledger.Refuse(ledger.CodeMalformed, "a COP Event needs non-empty id, topicId and type")
	}
	n, _ := c.Get("topicSeq")
	num, isNum := n.(canonical.Number)
	seq, isInt := num.Int64()
	if !isNum || !isInt || seq < 0 {
		return nil, ledger.Refuse(ledger.CodeMalformed, "topicSeq must be a non-negative integer")
	}
	e.TopicSeq = seq
	ts, _ := c.String("createdAt")
	if e.CreatedAt, err = time.Parse(time.RFC3339Nano, ts); err != nil {
		return nil, ledger.Refuse(ledger.CodeBadTimestamp, "createdAt %.40q is not RFC 3339", ts)
	}
	if pv, ok := c.Get("parentEventIds"); ok {
		arr, isArr := pv.([]canonical.Value)
		if !isArr {
			return nil, ledger.Refuse(ledger.CodeMalformed, "parentEventIds must be an array of strings")
		}
		for _, p := range arr {
			s, ok := p.(string)
			if !ok || s == "" {
				return nil, ledger.Refuse(ledger.CodeMalformed, "parentEventIds must be an array of strings")
			}
			e.Parents = append(e.Parents, s)
		}
	}
	if hv, ok := c.Object("copHash"); ok {
		alg, _ := hv.String("alg")
		val, _ := hv.String("value")
		d, err := sigalg.ParseDigest(alg + ":" + val)
		if err != nil {
			return nil, &ledger.RecordError{Code: ledger.CodeMalformed, Detail: "copHash: " + err.Error(), Err: err}
		}
		e.Hash = &d
	} else if _, ok := c.Get("copHash"); ok {
		return nil, ledger.Refuse(ledger.CodeMalformed, "copHash must be an object {alg, value}")
	}
	if sv, ok := c.Get("signature"); ok {
		so, _ := sv.(*canonical.Object)
		if e.Sig, err = sigalg.ParseSignature(so, "keyId"); err != nil {
			return nil, &ledger.RecordError{Code: ledger.CodeSignatureFormat, Detail: "signature: " + err.Error(), Err: err}
		}
	}
	return e, nil
}

// HashInput is JCS(event − copHash − signature): what copHash covers.
func (e *Event) HashInput() ([]byte, error) {
	return canonical.Encode(e.COP.Without("copHash", "signature"))
}

// SigningInput is JCS(event − signature): what the event signature covers.
func (e *Event) SigningInput() ([]byte, error) { return canonical.Encode(e.COP.Without("signature")) }

// CopHash returns the event's copHash, computed with alg (sha-256 unless the event names another).
func (e *Event) CopHash() (sigalg.Digest, error) {
	in, err := e.HashInput()
	if err != nil {
		return sigalg.Digest{}, err
	}
	alg := sigalg.SHA256
	if e.Hash != nil {
		alg = e.Hash.Alg
	}
	return sigalg.Hash(alg, in)
}

// Adapter is the COP 1.0 profile adapter.
type Adapter struct{}

// Name returns "cop/1.0".
func (Adapter) Name() string { return Profile }

// NewState returns an empty Topic state or restores a persisted one.
func (Adapter) NewState(persisted []byte) (ledger.ProfileState, error) {
	st := &State{Seen: map[string]uint64{}, Pending: map[string]uint64{}, Keys: map[string]string{}}
	if len(persisted) > 0 {
		if err := json.Unmarshal(persisted, st); err != nil {
			return nil, fmt.Errorf("cop state: %w", err)
		}
		if st.Seen == nil {
			st.Seen = map[string]uint64{}
		}
		if st.Pending == nil {
			st.Pending = map[string]uint64{}
		}
		if st.Keys == nil {
			st.Keys = map[string]string{}
		}
	}
	return st, nil
}

// State is a Topic's profile state.
type State struct {
	LastSeq *int64            `json:"last_seq,omitempty"`
	Seen    map[string]uint64 `json:"seen"`    // event id → chain seq
	Pending map[string]uint64 `json:"pending"` // parent id not (yet) in the Topic → seq of the first child naming it
	Keys    map[string]string `json:"keys"`    // keyId → canonical JWK
	Found   []ledger.Finding  `json:"findings,omitempty"`
	NFound  uint64            `json:"n_findings,omitempty"`
}

// Clone returns a deep copy.
func (s *State) Clone() ledger.ProfileState {
	c := &State{Seen: maps.Clone(s.Seen), Pending: maps.Clone(s.Pending), Keys: maps.Clone(s.Keys), Found: slices.Clone(s.Found), NFound: s.NFound}
	if s.LastSeq != nil {
		v := *s.LastSeq
		c.LastSeq = &v
	}
	return c
}

// MarshalJSON persists the state.
func (s *State) MarshalJSON() ([]byte, error) {
	type plain State
	return json.Marshal((*plain)(s))
}

// Checks names the replay checks of the profile.
func (s *State) Checks() []ledger.CheckName { return []ledger.CheckName{CheckParents} }

// Findings returns forward references (critical) and parents absent from the chain (notice).
func (s *State) Findings() []ledger.Finding {
	out := slices.Clone(s.Found)
	ids := slices.Sorted(maps.Keys(s.Pending))
	for _, id := range ids {
		if len(out) >= 2*ledger.MaxFindings {
			break
		}
		out = append(out, ledger.Finding{Check: CheckParents, Severity: ledger.Notice, Code: CodeParentAbsent, Seq: s.Pending[id],
			Detail: fmt.Sprintf("parent event %.80q is not in this Topic's chain (another Topic, or not exported): not evaluated", id)})
	}
	slices.SortStableFunc(out, func(a, b ledger.Finding) int { return int(a.Seq) - int(b.Seq) })
	return out
}

// Admit checks one event and records it.
func (s *State) Admit(at ledger.Position, data []byte) (*ledger.Admission, error) {
	e, err := Parse(data)
	if err != nil {
		return nil, err
	}
	if e.TopicID != at.Chain {
		return nil, ledger.Refuse(ledger.CodeWrongChain, "event names topic %.80q, not %.80q", e.TopicID, at.Chain)
	}
	if s.LastSeq == nil && e.TopicSeq > 1 {
		return nil, ledger.Refuse(CodeTopicSeq, "the first event of a Topic has topicSeq 0 or 1, not %d", e.TopicSeq)
	}
	if s.LastSeq != nil && e.TopicSeq != *s.LastSeq+1 {
		return nil, ledger.Refuse(CodeTopicSeq, "topicSeq %d after %d (must be +1)", e.TopicSeq, *s.LastSeq)
	}
	if e.Hash != nil {
		got, err := e.CopHash()
		if err != nil {
			return nil, ledger.Refuse(ledger.CodeMalformed, "copHash input: %v", err)
		}
		if string(got.Value) != string(e.Hash.Value) {
			return nil, ledger.Refuse(ledger.CodeDigestMismatch, "copHash %s is not the recomputed %s", e.Hash, got)
		}
	}
	for _, p := range e.Parents {
		if p == e.ID {
			return nil, ledger.Refuse(CodeParentCycle, "event %.80q names itself as its parent", e.ID)
		}
	}
	var verify func() error
	if e.Sig != nil || e.Type == KeyDeclared {
		if verify, err = s.signature(e); err != nil {
			return nil, err
		}
	}
	seq := e.TopicSeq
	s.LastSeq = &seq
	s.Seen[e.ID] = at.Seq
	if child, forward := s.Pending[e.ID]; forward {
		delete(s.Pending, e.ID)
		s.NFound++
		if len(s.Found) < ledger.MaxFindings {
			s.Found = append(s.Found, ledger.Finding{Check: CheckParents, Severity: ledger.Critical, Code: CodeParentCycle, Seq: child,
				Detail: fmt.Sprintf("the event at seq %d names parent %.80q, which comes later in the Topic (seq %d): a causal cycle or a reordering", child, e.ID, at.Seq)})
		}
	}
	for _, p := range e.Parents {
		if _, ok := s.Seen[p]; !ok {
			if _, ok := s.Pending[p]; !ok {
				s.Pending[p] = at.Seq
			}
		}
	}
	sender := e.Source
	if m, ok := e.COP.Object("metadata"); ok && sender == "" {
		sender, _ = m.String("nodeId")
	}
	return &ledger.Admission{Canonical: e.Canonical, RecordID: e.ID, Method: e.Type, Sender: sender, TS: e.CreatedAt,
		Signed: verify != nil, Verify: verify}, nil
}

// signature resolves the event's key (declaring it for cop.key.declared) and returns its check.
func (s *State) signature(e *Event) (func() error, error) {
	if e.Sig == nil {
		return nil, ledger.Refuse(ledger.CodeSignatureRequired, "a %s event is signed by the key it declares", KeyDeclared)
	}
	if e.Type == KeyDeclared {
		p, _ := e.COP.Object("payload")
		kid, _ := p.String("keyId")
		jo, ok := p.Object("jwk")
		if kid == "" || !ok || kid != e.Sig.Kid {
			return nil, ledger.Refuse(ledger.CodeBadKey, "%s carries payload {keyId, jwk} and is signed by that key", KeyDeclared)
		}
		if _, err := sigalg.ParseJWK(jo); err != nil {
			return nil, &ledger.RecordError{Code: ledger.CodeBadKey, Detail: err.Error(), Err: err}
		}
		cj, _ := canonical.Encode(jo)
		if old, ok := s.Keys[kid]; ok && old != string(cj) {
			return nil, ledger.Refuse(ledger.CodeBadKey, "keyId %.60q is already declared with another key", kid)
		}
		s.Keys[kid] = string(cj)
	}
	jwkText, ok := s.Keys[e.Sig.Kid]
	if !ok {
		return nil, ledger.Refuse(ledger.CodeUnknownKey, "no key %.60q declared in this Topic", e.Sig.Kid)
	}
	v, err := canonical.Parse([]byte(jwkText), canonical.Options{})
	if err != nil {
		return nil, err
	}
	pub, err := sigalg.ParseJWK(v.(*canonical.Object))
	if err != nil {
		return nil, err
	}
	in, err := e.SigningInput()
	if err != nil {
		return nil, ledger.Refuse(ledger.CodeMalformed, "signing input: %v", err)
	}
	sig := e.Sig
	return func() error {
		if err := sigalg.Verify(pub, sig.Alg, in, sig.Value); err != nil {
			return &ledger.RecordError{Code: ledger.CodeBadSignature, Err: err, Detail: fmt.Sprintf("%s signature by key %.60q: %v", sig.Alg, sig.Kid, err)}
		}
		return nil
	}, nil
}
