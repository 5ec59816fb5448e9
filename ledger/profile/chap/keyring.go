package chap

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/internal/edkey"
)

// Key is one participant key and the window in which it may sign.
type Key struct {
	Kid     string            `json:"kid"`
	Public  ed25519.PublicKey `json:"x"`
	From    time.Time         `json:"from"`              // valid for records with ts ≥ From (zero: from the start)
	Until   time.Time         `json:"until,omitzero"`    // not valid for records with ts ≥ Until (zero: open)
	Revoked bool              `json:"revoked,omitempty"` // Until was set by participant.revoke_key, not by a rotation
	AddedBy string            `json:"added_by"`          // method that introduced the key

	// decoded is Public with its point decoded once, shared by copies of the Key; nil for a
	// key that is not a curve point, which verifies nothing (newKey).
	decoded *edkey.PublicKey
}

// newKey returns the key kid with public key pub, decoded for verifying.
func newKey(kid string, pub ed25519.PublicKey) *Key {
	k := &Key{Kid: kid, Public: pub}
	k.decoded, _ = edkey.New(pub) // nil when pub is not a point: SignatureCheck.Verify refuses then
	return k
}

// UnmarshalJSON reads a persisted key and decodes its point.
func (k *Key) UnmarshalJSON(b []byte) error {
	type plain Key
	if err := json.Unmarshal(b, (*plain)(k)); err != nil {
		return err
	}
	k.decoded, _ = edkey.New(k.Public)
	return nil
}

// validAt reports whether the key may sign a record stamped ts that is admitted now. A revoked
// key signs nothing admitted after its revocation, whatever ts the record claims: revocation
// is present-tense in chain order, as the reference Coordinator applies it with its own clock
// (a backdated ts cannot revive a revoked key). A rotated key stays valid for ts < Until.
func (k *Key) validAt(ts time.Time) bool {
	if k.Revoked {
		return false
	}
	if ts.IsZero() {
		return k.Until.IsZero()
	}
	return !ts.Before(k.From) && (k.Until.IsZero() || ts.Before(k.Until))
}

// Participant is a member of the workspace with its key history.
type Participant struct {
	URI  string `json:"uri"`
	Role string `json:"role,omitempty"`
	Keys []Key  `json:"keys"`
}

// Keyring is the key history of one chain's participants, rebuilt from the chain itself.
// It is plain data: it marshals to JSON so evidentd can persist it beside the chain head.
type Keyring struct {
	Participants map[string]*Participant `json:"participants"`
	// Pending are workspace.create records signed with a key no join had introduced yet
	// (bootstrap.go): verified when a join registers that key, reported if none ever does.
	Pending []PendingCreate `json:"pending,omitempty"`
}

// NewKeyring returns an empty key history.
func NewKeyring() *Keyring { return &Keyring{Participants: map[string]*Participant{}} }

// Clone returns a deep copy, so a batch can be applied tentatively.
func (k *Keyring) Clone() *Keyring {
	c := NewKeyring()
	for uri, p := range k.Participants {
		cp := *p
		cp.Keys = append([]Key(nil), p.Keys...)
		c.Participants[uri] = &cp
	}
	c.Pending = append([]PendingCreate(nil), k.Pending...)
	return c
}

// SignatureCheck is a signature to verify: Public over Message. Verifying is left to the
// caller so a batch's signatures can be checked on every core.
type SignatureCheck struct {
	Kid    string
	Public ed25519.PublicKey
	// key is Public decoded (Key.decoded), when the check was made from a keyring's key.
	key     *edkey.PublicKey
	Message []byte
	Value   []byte
	// Deferred marks a check with no signature to verify now: that of a pending
	// workspace.create, whose key is not known yet (the join that introduces the key verifies
	// it through Resolves; a key that never arrives is a finding, State.Findings), or that of
	// an unsigned join, which carries none and only has Resolves to check.
	Deferred bool
	// Resolves are the pending creates this record's key introduction lets be verified now.
	Resolves []ResolvedCreate
}

// Verify checks the signature (true for a Deferred one; see VerifyPending for Resolves).
func (c *SignatureCheck) Verify() bool {
	if c.Deferred {
		return true
	}
	return c.verify(c.Message)
}

// verify checks the signature over msg with the check's key: crypto/ed25519.Verify's
// verdict, from the key decoded once when there is one.
func (c *SignatureCheck) verify(msg []byte) bool {
	if c.key != nil && c.key.Is(c.Public) {
		return c.key.Verify(msg, c.Value)
	}
	return len(c.Public) == ed25519.PublicKeySize && ed25519.Verify(c.Public, msg, c.Value)
}

// KeyFor returns the key of participant from with kid that is valid at ts.
func (k *Keyring) KeyFor(from, kid string, ts time.Time) (*Key, error) {
	p := k.Participants[from]
	if p == nil {
		return nil, ledger.Refuse(ledger.CodeUnknownKey, "sender %.80q has no registered key", from)
	}
	found := false
	for i := range p.Keys {
		if p.Keys[i].Kid != kid {
			continue
		}
		found = true
		if p.Keys[i].validAt(ts) {
			return &p.Keys[i], nil
		}
	}
	if found {
		return nil, ledger.Refuse(ledger.CodeKeyNotValid, "key %.80q of %.80q is not valid at %s (rotated or revoked)", kid, from, ledger.Timestamp(ts))
	}
	return nil, ledger.Refuse(ledger.CodeUnknownKey, "sender %.80q has no key %.80q", from, kid)
}

func (k *Keyring) hasValidKey(from string, ts time.Time) bool {
	p := k.Participants[from]
	if p == nil {
		return false
	}
	for i := range p.Keys {
		if p.Keys[i].validAt(ts) {
			return true
		}
	}
	return false
}

// AdmitAt checks record r, at seq, against the key history and, when r is admissible, applies
// its key-lifecycle effects (join, rotate, revoke) to k. It returns the signature the caller
// must verify (nil for an unsigned record that is allowed to be unsigned and resolves no
// pending create). On error k is unchanged. seq is what a pending workspace.create is
// remembered by.
//
// The rules (docs/profiles/chap.md):
//   - a signed record is checked with the key of (from, kid) valid at ts;
//   - an unsigned record is refused when its sender has a key valid at ts (no downgrade);
//   - participant.join with a JWK registers the key; a self-signed join is checked with it;
//   - participant.rotate_key {old_kid, new_jwk} must be signed with old_kid; the old key stops at ts;
//   - participant.revoke_key {kid[, target_uri | participant]} must be signed by that participant
//     or an admin; a revoked key signs nothing admitted after the revocation;
//   - a signed workspace.create whose sender has no key yet is pending until its join (bootstrap.go).
func (k *Keyring) AdmitAt(seq uint64, r *Record) (*SignatureCheck, error) {
	if r.Refusal {
		return nil, nil // a refusal is written by the Coordinator; the refused request is kept verbatim
	}
	var check *SignatureCheck
	var signer *Key
	if r.Sig != nil {
		if r.Method == "participant.rotate_key" {
			// Only the old key may rotate itself away; refuse another kid (including the new
			// key, which is not registered yet) as a key change, not as an unknown key.
			if oldKid, _ := r.Params().String("old_kid"); oldKid != "" && oldKid != r.Sig.Kid {
				return nil, ledger.Refuse(ledger.CodeUnauthorized, "participant.rotate_key must be signed by the old key %.80q, not %.80q", oldKid, r.Sig.Kid)
			}
		}
		msg, err := r.SigningInput()
		if err != nil {
			return nil, ledger.Refuse(ledger.CodeMalformed, "signing input: %v", err)
		}
		key, err := k.KeyFor(r.From, r.Sig.Kid, r.TS)
		if err != nil {
			// A self-signed join brings its own key — only for the sender itself: a join of
			// another participant signed with that participant's new key is not a record
			// signed by the sender.
			if r.Method == "participant.join" && joinParticipant(r) == r.From {
				if jk, ok := joinKey(r, r.Sig.Kid); ok {
					key, err = jk, nil
				}
			}
			if err != nil && k.bootstrapping(r) {
				// A workspace.create signed with the key its sender's following join
				// introduces: remembered, verified when that key arrives (bootstrap.go).
				k.Pending = append(k.Pending, PendingCreate{Seq: seq, Sender: r.From, Kid: r.Sig.Kid, Message: msg, Value: r.Sig.Value})
				return &SignatureCheck{Kid: r.Sig.Kid, Message: msg, Value: r.Sig.Value, Deferred: true}, nil
			}
			if err != nil {
				return nil, err
			}
		}
		signer = key
		check = &SignatureCheck{Kid: r.Sig.Kid, Public: key.Public, key: key.decoded, Message: msg, Value: r.Sig.Value}
	} else if r.From != "" && k.hasValidKey(r.From, r.TS) {
		return nil, ledger.Refuse(ledger.CodeSignatureRequired, "sender %.80q has a registered key; its records must be signed", r.From)
	}
	switch r.Method {
	case "participant.join":
		if err := k.join(r, signer); err != nil {
			return nil, err
		}
		resolved := k.resolvePending(r)
		if len(resolved) > 0 {
			if check == nil {
				check = &SignatureCheck{Deferred: true}
			}
			check.Resolves = resolved
		}
		return check, nil
	case "participant.rotate_key":
		return check, k.rotate(r, signer)
	case "participant.revoke_key":
		return check, k.revoke(r, signer)
	}
	return check, nil
}

func joinKey(r *Record, kid string) (*Key, bool) {
	keys, err := joinKeys(r)
	if err != nil {
		return nil, false
	}
	for i := range keys {
		if keys[i].Kid == kid {
			return &keys[i], true
		}
	}
	return nil, false
}

func joinParticipant(r *Record) string {
	p := r.Params()
	for _, key := range []string{"uri", "participant"} {
		if p != nil {
			if s, ok := p.String(key); ok && s != "" {
				return s
			}
		}
	}
	return r.From
}

func joinKeys(r *Record) ([]Key, error) {
	p := r.Params()
	if p == nil {
		return nil, nil
	}
	var jwks []canonical.Value
	if v, ok := p.Get("jwks"); ok {
		// The reference Coordinator's form: a JWK Set {"keys": [JWK, …]}.
		set, ok := v.(*canonical.Object)
		var arr []canonical.Value
		if ok {
			kv, _ := set.Get("keys")
			arr, ok = kv.([]canonical.Value)
		}
		if !ok {
			return nil, ledger.Refuse(ledger.CodeBadKey, "params.jwks must be a JWK Set {\"keys\": [JWK, …]}")
		}
		jwks = append(jwks, arr...)
	}
	if v, ok := p.Get("jwk"); ok {
		jwks = append(jwks, v)
	}
	if v, ok := p.Get("keys"); ok {
		arr, ok := v.([]canonical.Value)
		if !ok {
			return nil, ledger.Refuse(ledger.CodeBadKey, "params.keys must be an array of JWKs")
		}
		jwks = append(jwks, arr...)
	}
	var out []Key
	for _, v := range jwks {
		key, err := ParseJWK(v)
		if err != nil {
			return nil, err
		}
		key.From = r.TS
		key.AddedBy = r.Method
		out = append(out, *key)
	}
	return out, nil
}

func (k *Keyring) join(r *Record, signer *Key) error {
	uri := joinParticipant(r)
	if uri == "" {
		return ledger.Refuse(ledger.CodeMalformed, "participant.join names no participant (params.uri or from)")
	}
	keys, err := joinKeys(r)
	if err != nil {
		return err
	}
	p := k.Participants[uri]
	role, err := k.joinRole(r, uri, p, signer)
	if err != nil {
		return err
	}
	if p != nil && len(keys) > 0 && k.hasValidKey(uri, r.TS) {
		// Adding keys to a participant that already has one is a key change: it must be
		// signed by that participant (its current key) — otherwise use rotate_key.
		if r.Sig == nil || r.From != uri {
			return ledger.Refuse(ledger.CodeUnauthorized, "%.80q already has a key; a new join with keys must be signed by it", uri)
		}
		if _, err := k.KeyFor(uri, r.Sig.Kid, r.TS); err != nil {
			return ledger.Refuse(ledger.CodeUnauthorized, "%.80q already has a key; a new join with keys must be signed by it", uri)
		}
	}
	if p != nil && len(keys) > 0 && len(p.Keys) > 0 && !k.hasValidKey(uri, r.TS) && !k.adminSigned(r, uri, signer) {
		// A re-join of a participant whose keys have all ended (revoked, or rotated away):
		// like the reference Coordinator, which never takes self-asserted keys from a member
		// it already has, the keys are not registered — otherwise anyone could take over a
		// revoked identity. An admin may re-key it with a join signed for it.
		keys = nil
	}
	for i, nk := range keys {
		if _, err := k.KeyFor(uri, nk.Kid, time.Time{}); err == nil || (p != nil && hasKid(p, nk.Kid)) {
			return ledger.Refuse(ledger.CodeBadKey, "kid %.80q is already registered for %.80q", nk.Kid, uri)
		}
		for _, prev := range keys[:i] {
			if prev.Kid == nk.Kid {
				return ledger.Refuse(ledger.CodeBadKey, "kid %.80q appears twice in one participant.join", nk.Kid)
			}
		}
	}
	if p == nil {
		p = &Participant{URI: uri, Role: role}
		k.Participants[uri] = p
	}
	p.Keys = append(p.Keys, keys...)
	return nil
}

// RoleAdmin is the role that may revoke other participants' keys and grant roles.
const RoleAdmin = "admin"

// joinRole applies the role rule (docs/profiles/chap.md, "Roles"): a participant's role is
// set by its first join and never changed by a later one; "admin" is declared only by the
// first participant of the workspace, or granted by a join signed by an existing admin for
// another participant. signer is the key that signed r (nil when unsigned).
func (k *Keyring) joinRole(r *Record, uri string, p *Participant, signer *Key) (string, error) {
	role := ""
	if params := r.Params(); params != nil {
		if v, ok := params.Get("role"); ok {
			s, ok := v.(string)
			if !ok {
				return "", ledger.Refuse(ledger.CodeMalformed, "params.role must be a string")
			}
			role = s
		}
	}
	if p != nil {
		if role != "" && role != p.Role {
			return "", ledger.Refuse(ledger.CodeRoleDenied, "the role of %.80q was set by its first join (%.40q); a later join cannot make it %.40q", uri, p.Role, role)
		}
		return p.Role, nil
	}
	if role != RoleAdmin || len(k.Participants) == 0 {
		return role, nil
	}
	if k.adminSigned(r, uri, signer) {
		return role, nil
	}
	return "", ledger.Refuse(ledger.CodeRoleDenied, "%.80q cannot declare itself admin: only the workspace's first participant, or a join signed by an existing admin, may", uri)
}

// adminSigned reports whether r is a join for another participant uri, signed by an admin.
func (k *Keyring) adminSigned(r *Record, uri string, signer *Key) bool {
	if r.Sig == nil || signer == nil || r.From == uri {
		return false
	}
	g := k.Participants[r.From]
	return g != nil && g.Role == RoleAdmin
}

func hasKid(p *Participant, kid string) bool {
	for i := range p.Keys {
		if p.Keys[i].Kid == kid {
			return true
		}
	}
	return false
}

func (k *Keyring) rotate(r *Record, signer *Key) error {
	params := r.Params()
	if params == nil {
		return ledger.Refuse(ledger.CodeMalformed, "participant.rotate_key needs params {old_kid, new_jwk}")
	}
	oldKid, _ := params.String("old_kid")
	nv, hasNew := params.Get("new_jwk")
	if oldKid == "" || !hasNew {
		return ledger.Refuse(ledger.CodeMalformed, "participant.rotate_key needs params {old_kid, new_jwk}")
	}
	if r.Sig == nil || signer == nil || r.Sig.Kid != oldKid {
		return ledger.Refuse(ledger.CodeUnauthorized, "participant.rotate_key must be signed by the old key %.80q", oldKid)
	}
	if r.TS.IsZero() {
		return ledger.Refuse(ledger.CodeBadTimestamp, "participant.rotate_key needs ts: the rotation time bounds both keys")
	}
	nk, err := ParseJWK(nv)
	if err != nil {
		return err
	}
	p := k.Participants[r.From]
	if hasKid(p, nk.Kid) {
		return ledger.Refuse(ledger.CodeBadKey, "kid %.80q is already registered for %.80q", nk.Kid, r.From)
	}
	old, err := k.KeyFor(r.From, oldKid, r.TS)
	if err != nil {
		return err
	}
	old.Until = r.TS
	nk.From = r.TS
	nk.AddedBy = r.Method
	p.Keys = append(p.Keys, *nk)
	return nil
}

func (k *Keyring) revoke(r *Record, signer *Key) error {
	params := r.Params()
	kid := ""
	target := r.From
	if params != nil {
		kid, _ = params.String("kid")
		for _, key := range []string{"target_uri", "participant"} { // target_uri: the reference Coordinator's name
			if s, ok := params.String(key); ok && s != "" {
				target = s
				break
			}
		}
	}
	if kid == "" {
		return ledger.Refuse(ledger.CodeMalformed, "participant.revoke_key needs params.kid")
	}
	if r.Sig == nil || signer == nil {
		return ledger.Refuse(ledger.CodeUnauthorized, "participant.revoke_key must be signed")
	}
	if target != r.From {
		if sp := k.Participants[r.From]; sp == nil || sp.Role != RoleAdmin {
			return ledger.Refuse(ledger.CodeUnauthorized, "only %.80q itself or an admin may revoke its keys", target)
		}
	}
	if r.TS.IsZero() {
		return ledger.Refuse(ledger.CodeBadTimestamp, "participant.revoke_key needs ts: the revocation time bounds the key")
	}
	p := k.Participants[target]
	if p == nil || !hasKid(p, kid) {
		return ledger.Refuse(ledger.CodeUnknownKey, "%.80q has no key %.80q", target, kid)
	}
	for i := range p.Keys {
		if p.Keys[i].Kid == kid && (p.Keys[i].Until.IsZero() || r.TS.Before(p.Keys[i].Until)) {
			p.Keys[i].Until = r.TS
			p.Keys[i].Revoked = true
		}
	}
	return nil
}

// ParseJWK parses an Ed25519 public JWK {"kty":"OKP","crv":"Ed25519","x":…,"kid":…}, with
// optional "use":"sig" and "alg":"EdDSA" (or "Ed25519"); any other use or alg is bad_key.
func ParseJWK(v canonical.Value) (*Key, error) {
	o, ok := v.(*canonical.Object)
	if !ok {
		return nil, ledger.Refuse(ledger.CodeBadKey, "a JWK is a JSON object")
	}
	kty, _ := o.String("kty")
	crv, _ := o.String("crv")
	if kty != "OKP" || crv != "Ed25519" {
		return nil, ledger.Refuse(ledger.CodeBadKey, "only Ed25519 JWKs (kty OKP, crv Ed25519) are accepted in CHAP 0.3, got kty %.20q crv %.20q", kty, crv)
	}
	if _, hasD := o.Get("d"); hasD {
		return nil, ledger.Refuse(ledger.CodeBadKey, "the JWK carries a private key (d); send only the public key")
	}
	if v, ok := o.Get("use"); ok && v != "sig" {
		return nil, ledger.Refuse(ledger.CodeBadKey, "JWK use must be \"sig\" (or absent), got %.40v", v)
	}
	if v, ok := o.Get("alg"); ok && v != "EdDSA" && v != "Ed25519" {
		return nil, ledger.Refuse(ledger.CodeBadKey, "JWK alg must be \"EdDSA\" or \"Ed25519\" (or absent), got %.40v", v)
	}
	kid, _ := o.String("kid")
	if kid == "" {
		return nil, ledger.Refuse(ledger.CodeBadKey, "the JWK needs a kid")
	}
	xs, _ := o.String("x")
	x, err := base64.RawURLEncoding.DecodeString(xs)
	if err != nil || len(x) != ed25519.PublicKeySize {
		return nil, ledger.Refuse(ledger.CodeBadKey, "JWK x must be 32 bytes of base64url without padding")
	}
	return newKey(kid, ed25519.PublicKey(x)), nil
}

// JWK renders an Ed25519 public key as a JWK object for participant.join.
func JWK(kid string, pub ed25519.PublicKey) map[string]string {
	return map[string]string{"kty": "OKP", "crv": "Ed25519", "kid": kid, "x": base64.RawURLEncoding.EncodeToString(pub)}
}

// Sign returns the CHAP signature tag of an envelope given as canonical-ready JSON:
// sig = "ed25519:<kid>:<b64>" over JCS(envelope − sig).
func Sign(envelope []byte, kid string, priv ed25519.PrivateKey) (string, error) {
	v, err := canonical.Parse(envelope, canonical.CHAP)
	if err != nil {
		return "", fmt.Errorf("chap sign: %w", err)
	}
	obj, ok := v.(*canonical.Object)
	if !ok {
		return "", fmt.Errorf("chap sign: envelope is not an object")
	}
	msg, err := canonical.Encode(obj.Without("sig"))
	if err != nil {
		return "", fmt.Errorf("chap sign: %w", err)
	}
	s := Signature{Kid: kid, Value: ed25519.Sign(priv, msg)}
	return s.Tag(), nil
}

// Members lists participants sorted by URI (for reports).
func (k *Keyring) Members() []*Participant {
	out := make([]*Participant, 0, len(k.Participants))
	for _, p := range k.Participants {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URI < out[j].URI })
	return out
}
