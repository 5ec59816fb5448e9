// Package cheq is the CHEQ profile adapter (profile name "cheq/0"): confirmation records for
// human confirmation of AI-agent actions (draft-rosenberg-cheq, §4.2–4.3).
//
// The draft leaves signing and hashing open ("signature details … TBD"); Evident's binding
// (docs/profiles/cheq.md, vectors in testvectors/cheq) is:
//
//   - a chain begins with "cheq.keys" records declaring the resource server's and the
//     confirmation server's keys {role, kid, jwk, sig}, each signed by itself over
//     JCS({role, kid, jwk}) (proof of possession);
//   - each "cheq.confirmation" record carries the CHEQ object (operation, inputs, date, …),
//     its hash cheq_hash = "sha-256:<hex of SHA-256(JCS(cheq))>", the resource server's
//     signature over JCS({"cheq_hash": …}) and the confirmation {id, cheq_hash, decision
//     (accept|reject), confirmed_at, user, sig} signed by the confirmation server over
//     JCS(confirmation − sig);
//   - privacy mode (§5): the record omits the CHEQ object and logs only its hash; both
//     signatures still verify, since both cover the hash.
//
// Refused: a decision whose cheq_hash differs from the CHEQ's (digest_mismatch), a
// confirmation id presented for another CHEQ (confirmation_reused), a missing signature
// (signature_required), a signature by an undeclared key or one of the wrong role.
package cheq

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/evident-log/evident/internal/sigalg"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
)

// Profile is the profile name of CHEQ confirmation chains.
const Profile = "cheq/0"

// Record kinds.
const (
	KindKeys         = "cheq.keys"
	KindConfirmation = "cheq.confirmation"
)

// Roles of declared keys.
const (
	RoleResource     = "resource_server"
	RoleConfirmation = "confirmation_server"
)

// Hash returns cheq_hash for a CHEQ object: "sha-256:" + hex SHA-256(JCS(cheq)).
func Hash(cheq *canonical.Object) (string, error) {
	b, err := canonical.Encode(cheq)
	if err != nil {
		return "", err
	}
	d, _ := sigalg.Hash(sigalg.SHA256, b)
	return d.String(), nil
}

// ResourceSigningInput is what the resource server signs: JCS({"cheq_hash": h}).
func ResourceSigningInput(h string) []byte {
	b, _ := canonical.Encode(&canonical.Object{Members: []canonical.Member{{Key: "cheq_hash", Value: h}}})
	return b
}

// Adapter is the CHEQ profile adapter.
type Adapter struct{}

// Name returns "cheq/0".
func (Adapter) Name() string { return Profile }

// NewState returns an empty state or restores a persisted one.
func (Adapter) NewState(persisted []byte) (ledger.ProfileState, error) {
	st := &State{Keys: map[string]Key{}, Confirmations: map[string]string{}}
	if len(persisted) > 0 {
		if err := json.Unmarshal(persisted, st); err != nil {
			return nil, fmt.Errorf("cheq state: %w", err)
		}
		if st.Keys == nil {
			st.Keys = map[string]Key{}
		}
		if st.Confirmations == nil {
			st.Confirmations = map[string]string{}
		}
	}
	return st, nil
}

// Key is a declared server key.
type Key struct {
	Role string `json:"role"`
	JWK  string `json:"jwk"`
}

// State holds the declared keys and every confirmation id with the CHEQ hash it confirmed.
type State struct {
	Keys          map[string]Key    `json:"keys"`
	Confirmations map[string]string `json:"confirmations"`
}

// Clone returns a deep copy.
func (s *State) Clone() ledger.ProfileState {
	return &State{Keys: maps.Clone(s.Keys), Confirmations: maps.Clone(s.Confirmations)}
}

// MarshalJSON persists the state.
func (s *State) MarshalJSON() ([]byte, error) {
	type plain State
	return json.Marshal((*plain)(s))
}

func refuse(err error) error {
	code := ledger.CodeMalformed
	if errors.Is(err, canonical.ErrTooLarge) || errors.Is(err, canonical.ErrTooDeep) {
		code = ledger.CodeTooLarge
	}
	return &ledger.RecordError{Code: code, Detail: err.Error(), Err: err}
}

// Admit checks one record.
func (s *State) Admit(at ledger.Position, data []byte) (*ledger.Admission, error) {
	o, c, err := parseRecord(data)
	if err != nil {
		return nil, err
	}
	kind, _ := o.String("kind")
	switch kind {
	case KindKeys:
		return s.keys(o, c)
	case KindConfirmation:
		return s.confirmation(o, c)
	}
	return nil, ledger.Refuse(ledger.CodeMalformed, "kind must be %q or %q", KindKeys, KindConfirmation)
}

func (s *State) keys(o *canonical.Object, c []byte) (*ledger.Admission, error) {
	kv, _ := o.Get("keys")
	arr, ok := kv.([]canonical.Value)
	if !ok || len(arr) == 0 {
		return nil, ledger.Refuse(ledger.CodeBadKey, "cheq.keys carries a non-empty array keys of {role, kid, jwk}")
	}
	next := maps.Clone(s.Keys)
	var pops []func() error
	for i, k := range arr {
		ko, _ := k.(*canonical.Object)
		role, _ := ko.String("role")
		kid, _ := ko.String("kid")
		jo, ok := ko.Object("jwk")
		if (role != RoleResource && role != RoleConfirmation) || kid == "" || !ok {
			return nil, ledger.Refuse(ledger.CodeBadKey, "key %d: {role resource_server|confirmation_server, kid, jwk}", i)
		}
		if _, err := sigalg.ParseJWK(jo); err != nil {
			return nil, &ledger.RecordError{Code: ledger.CodeBadKey, Detail: fmt.Sprintf("key %d: %v", i, err), Err: err}
		}
		pub, _ := sigalg.ParseJWK(jo)
		sig, err := sigOf(ko, "sig")
		if err != nil {
			return nil, err
		}
		if sig.Kid != kid {
			return nil, ledger.Refuse(ledger.CodeBadKey, "key %d: declared keys sign their own declaration (kid %.60q, not %.60q)", i, kid, sig.Kid)
		}
		in, err := canonical.Encode(ko.Without("sig"))
		if err != nil {
			return nil, refuse(err)
		}
		pops = append(pops, func() error {
			if err := sigalg.Verify(pub, sig.Alg, in, sig.Value); err != nil {
				return &ledger.RecordError{Code: ledger.CodeBadSignature, Err: err, Detail: fmt.Sprintf("key %.60q: proof of possession: %v", kid, err)}
			}
			return nil
		})
		cj, _ := canonical.Encode(jo)
		if old, ok := next[kid]; ok && (old.JWK != string(cj) || old.Role != role) {
			return nil, ledger.Refuse(ledger.CodeBadKey, "kid %.60q is already declared with another key or role", kid)
		}
		next[kid] = Key{Role: role, JWK: string(cj)}
	}
	s.Keys = next
	return &ledger.Admission{Canonical: c, Method: KindKeys, Signed: true, Verify: func() error {
		for _, p := range pops {
			if err := p(); err != nil {
				return err
			}
		}
		return nil
	}}, nil
}

func (s *State) key(sig *sigalg.Signature, role string) (any, error) {
	k, ok := s.Keys[sig.Kid]
	if !ok {
		return nil, ledger.Refuse(ledger.CodeUnknownKey, "no %s key %.60q declared in this chain", role, sig.Kid)
	}
	if k.Role != role {
		return nil, ledger.Refuse(ledger.CodeUnknownKey, "key %.60q is a %s key, not a %s key", sig.Kid, k.Role, role)
	}
	v, err := canonical.Parse([]byte(k.JWK), canonical.Options{})
	if err != nil {
		return nil, err
	}
	return sigalg.ParseJWK(v.(*canonical.Object))
}

func sigOf(o *canonical.Object, name string) (*sigalg.Signature, error) {
	sv, ok := o.Get(name)
	if !ok {
		return nil, ledger.Refuse(ledger.CodeSignatureRequired, "%s is missing", name)
	}
	so, _ := sv.(*canonical.Object)
	sig, err := sigalg.ParseSignature(so, "kid")
	if err != nil {
		return nil, &ledger.RecordError{Code: ledger.CodeSignatureFormat, Detail: name + ": " + err.Error(), Err: err}
	}
	return sig, nil
}

func (s *State) confirmation(o *canonical.Object, c []byte) (*ledger.Admission, error) {
	h, _ := o.String("cheq_hash")
	if _, err := sigalg.ParseDigest(h); err != nil {
		return nil, ledger.Refuse(ledger.CodeMalformed, "cheq_hash: %v", err)
	}
	if cq, ok := o.Object("cheq"); ok {
		got, err := Hash(cq)
		if err != nil {
			return nil, refuse(err)
		}
		if got != h {
			return nil, ledger.Refuse(ledger.CodeDigestMismatch, "cheq_hash %s is not the hash of the CHEQ object %s", h, got)
		}
	} else if _, present := o.Get("cheq"); present {
		return nil, ledger.Refuse(ledger.CodeMalformed, "cheq must be an object (or absent, in privacy mode)")
	}
	rs, err := sigOf(o, "resource_sig")
	if err != nil {
		return nil, err
	}
	conf, ok := o.Object("confirmation")
	if !ok {
		return nil, ledger.Refuse(ledger.CodeMalformed, "a confirmation record carries confirmation {id, cheq_hash, decision, confirmed_at, user, sig}")
	}
	id, _ := conf.String("id")
	ch, _ := conf.String("cheq_hash")
	decision, _ := conf.String("decision")
	user, _ := conf.String("user")
	at, _ := conf.String("confirmed_at")
	ts, terr := time.Parse(time.RFC3339Nano, at)
	switch {
	case id == "" || user == "":
		return nil, ledger.Refuse(ledger.CodeMalformed, "confirmation needs id and user")
	case decision != "accept" && decision != "reject":
		return nil, ledger.Refuse(ledger.CodeMalformed, "decision must be accept or reject")
	case terr != nil:
		return nil, ledger.Refuse(ledger.CodeBadTimestamp, "confirmed_at %.40q is not RFC 3339", at)
	case ch != h:
		return nil, ledger.Refuse(ledger.CodeDigestMismatch, "the decision confirms CHEQ %.80s, not this record's CHEQ %s", ch, h)
	}
	if prev, used := s.Confirmations[id]; used && prev != h {
		return nil, ledger.Refuse(CodeConfirmationReused, "confirmation %.80q already confirmed CHEQ %s", id, prev)
	}
	cs, err := sigOf(conf, "sig")
	if err != nil {
		return nil, err
	}
	rk, err := s.key(rs, RoleResource)
	if err != nil {
		return nil, err
	}
	ck, err := s.key(cs, RoleConfirmation)
	if err != nil {
		return nil, err
	}
	cin, err := canonical.Encode(conf.Without("sig"))
	if err != nil {
		return nil, refuse(err)
	}
	rin := ResourceSigningInput(h)
	s.Confirmations[id] = h
	return &ledger.Admission{Canonical: c, RecordID: id, Method: KindConfirmation + "." + decision, Sender: user, TS: ts, Signed: true,
		Verify: func() error {
			if err := sigalg.Verify(rk, rs.Alg, rin, rs.Value); err != nil {
				return &ledger.RecordError{Code: ledger.CodeBadSignature, Err: err, Detail: "resource server signature over the CHEQ hash: " + err.Error()}
			}
			if err := sigalg.Verify(ck, cs.Alg, cin, cs.Value); err != nil {
				return &ledger.RecordError{Code: ledger.CodeBadSignature, Err: err, Detail: "confirmation server signature over the decision: " + err.Error()}
			}
			return nil
		}}, nil
}
