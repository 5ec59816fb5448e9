// Package regpolicy is the registration policy of Evident's SCITT transparency service
// (IETF SCITT architecture, "Registration Policy"): which issuers may register signed
// statements and with which keys, which signature algorithms (EdDSA, ES256, ES384,
// PS256), which content types, how large a statement may be and which CWT claims it must
// carry.
//
// A policy is a JSON document (Policy, format "evident-registration-policy/v1"). The
// service turns it into a signed statement of content type ContentType and registers it
// in its own log before it takes effect, so every registration can name the policy
// statement it passed (its log entry, the PolicyID) and anyone holding the policy
// statement can replay the decision later (Check is a pure function of the policy and
// the statement: no clock, no network).
//
// Issuer keys are pinned: a statement names its key with kid (4) — the RFC 9679
// thumbprint of the key, or the kid the policy lists for it — or carries an x5chain (33)
// whose leaf certificate's public key is one of the issuer's pinned keys. Certificate
// chains are not validated against a CA: the pin is the trust decision.
//
// This package does not depend on the service side, nor on the net package (it reads keys
// and certificates with its own small DER reader, der.go): the service decides with it and
// the offline verifier replays those decisions with it (RFC 9943 replayability).
package regpolicy

import (
	"bytes"
	"crypto"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"mime"
	"slices"
	"strings"

	"github.com/evident-log/evident/receipts"
	"github.com/veraison/go-cose"
)

// Format is the value of Policy.Format for this version.
const Format = "evident-registration-policy/v1"

// ContentType is the content type (3) of a policy statement.
const ContentType = "application/evident-registration-policy+json;version=1"

// Subject is the CWT sub of policy statements.
const Subject = "urn:evident:registration-policy"

// MaxPolicySize bounds a policy document.
const MaxPolicySize = 1 << 20

// headerX5Chain is the COSE x5chain header parameter (RFC 9360).
const headerX5Chain int64 = 33

// Algorithms the policy may allow (COSE names).
var knownAlgs = map[string]cose.Algorithm{
	"EdDSA": cose.AlgorithmEdDSA,
	"ES256": cose.AlgorithmES256,
	"ES384": cose.AlgorithmES384,
	"PS256": cose.AlgorithmPS256,
}

// Claim names RequiredClaims may list, with their CWT keys (RFC 8392).
var knownClaims = map[string]int64{"iss": 1, "sub": 2, "aud": 3, "exp": 4, "nbf": 5, "iat": 6, "cti": 7}

// Policy is a registration policy document.
type Policy struct {
	// Format must be Format.
	Format string `json:"format"`
	// Issuers lists who may register, each with its pinned keys. A statement whose iss is
	// not listed is refused.
	Issuers []Issuer `json:"issuers"`
	// Algorithms allowed, by COSE name: EdDSA, ES256, ES384, PS256. Empty means all four.
	Algorithms []string `json:"algorithms,omitempty"`
	// ContentTypes allowed, compared by media type without parameters, case-insensitively:
	// the content type (3) of an ordinary statement, the preimage content type (259) of a
	// hash envelope (RFC 9995). Empty means any.
	ContentTypes []string `json:"content_types,omitempty"`
	// MaxSize is the largest statement in bytes; 0 means receipts.MaxStatementSize.
	MaxSize int `json:"max_size,omitempty"`
	// RequiredClaims are CWT claims (iss, sub, aud, exp, nbf, iat, cti) a statement must
	// carry in header 15, besides iss and sub which are always required.
	RequiredClaims []string `json:"required_claims,omitempty"`
}

// Issuer is one issuer allowed by the policy.
type Issuer struct {
	// ISS is the CWT issuer (claim 1) exactly as it appears in statements.
	ISS string `json:"iss"`
	// Keys are the issuer's public keys.
	Keys []Key `json:"keys"`
}

// Key is a pinned issuer key.
type Key struct {
	// PEM is the public key as a PEM "PUBLIC KEY" block (SubjectPublicKeyInfo).
	PEM string `json:"pem"`
	// KID optionally gives the kid (hex) statements use for this key when it is not the
	// RFC 9679 thumbprint (which always matches).
	KID string `json:"kid,omitempty"`

	pub        crypto.PublicKey
	thumbprint []byte
	kid        []byte
}

// Sentinel errors.
var (
	// ErrInvalidPolicy reports a policy document that does not parse or breaks the rules.
	ErrInvalidPolicy = errors.New("policy: invalid policy")
	// ErrRefused is wrapped by every *Refusal.
	ErrRefused = errors.New("policy: registration refused")
)

// Refusal codes, stable for clients.
const (
	CodeMalformed          = "malformed_statement"
	CodeTooLarge           = "statement_too_large"
	CodeUnknownIssuer      = "unknown_issuer"
	CodeUnknownKey         = "unknown_key"
	CodeAlgNotAllowed      = "algorithm_not_allowed"
	CodeContentType        = "content_type_not_allowed"
	CodeMissingClaim       = "missing_claim"
	CodeBadSignature       = "bad_signature"
	CodeNoPolicy           = "no_registration_policy"
	CodeDetachedPayload    = "detached_payload"
	CodeX5ChainUnparseable = "bad_x5chain"
)

// Refusal says why a statement does not pass the policy.
type Refusal struct {
	Code   string
	Detail string
}

func (r *Refusal) Error() string { return "registration refused (" + r.Code + "): " + r.Detail }

// Unwrap makes errors.Is(err, ErrRefused) hold.
func (r *Refusal) Unwrap() error { return ErrRefused }

func refuse(code, format string, a ...any) *Refusal {
	return &Refusal{Code: code, Detail: fmt.Sprintf(format, a...)}
}

// Parse reads a policy document strictly (unknown fields refused) and checks it: the
// format, at least one issuer, unique issuer names, parseable keys of a supported type,
// known algorithms and claim names, a sane size bound.
func Parse(b []byte) (*Policy, error) {
	if len(b) > MaxPolicySize {
		return nil, fmt.Errorf("%w: %d bytes exceeds %d", ErrInvalidPolicy, len(b), MaxPolicySize)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p Policy
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidPolicy, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the policy object", ErrInvalidPolicy)
	}
	if err := p.init(); err != nil {
		return nil, err
	}
	return &p, nil
}

func (p *Policy) init() error {
	if p.Format != Format {
		return fmt.Errorf("%w: format %q, want %q", ErrInvalidPolicy, p.Format, Format)
	}
	if len(p.Issuers) == 0 {
		return fmt.Errorf("%w: no issuer", ErrInvalidPolicy)
	}
	seen := map[string]bool{}
	for i := range p.Issuers {
		is := &p.Issuers[i]
		if is.ISS == "" {
			return fmt.Errorf("%w: issuer %d has no iss", ErrInvalidPolicy, i)
		}
		if seen[is.ISS] {
			return fmt.Errorf("%w: issuer %q listed twice", ErrInvalidPolicy, is.ISS)
		}
		seen[is.ISS] = true
		if len(is.Keys) == 0 {
			return fmt.Errorf("%w: issuer %q has no key", ErrInvalidPolicy, is.ISS)
		}
		for j := range is.Keys {
			if err := is.Keys[j].init(); err != nil {
				return fmt.Errorf("%w: issuer %q key %d: %v", ErrInvalidPolicy, is.ISS, j, err)
			}
		}
	}
	for _, a := range p.Algorithms {
		if _, ok := knownAlgs[a]; !ok {
			return fmt.Errorf("%w: algorithm %q (known: EdDSA, ES256, ES384, PS256)", ErrInvalidPolicy, a)
		}
	}
	for _, c := range p.RequiredClaims {
		if _, ok := knownClaims[c]; !ok {
			return fmt.Errorf("%w: claim %q (known: iss, sub, aud, exp, nbf, iat, cti)", ErrInvalidPolicy, c)
		}
	}
	for _, ct := range p.ContentTypes {
		if _, _, err := mime.ParseMediaType(ct); err != nil {
			return fmt.Errorf("%w: content type %q: %v", ErrInvalidPolicy, ct, err)
		}
	}
	if p.MaxSize < 0 || p.MaxSize > receipts.MaxStatementSize {
		return fmt.Errorf("%w: max_size %d outside 0..%d", ErrInvalidPolicy, p.MaxSize, receipts.MaxStatementSize)
	}
	return nil
}

func (k *Key) init() error {
	blk, rest := pem.Decode([]byte(k.PEM))
	if blk == nil || blk.Type != "PUBLIC KEY" || len(bytes.TrimSpace(rest)) != 0 {
		return errors.New(`pem must hold exactly one "PUBLIC KEY" block`)
	}
	pub, err := parseSPKI(blk.Bytes)
	if err != nil {
		return err
	}
	tp, err := receipts.KeyThumbprint(pub)
	if err != nil {
		return err
	}
	k.pub, k.thumbprint = pub, tp
	if k.KID != "" {
		if k.kid, err = hex.DecodeString(k.KID); err != nil || len(k.kid) == 0 {
			return fmt.Errorf("kid %q is not hex", k.KID)
		}
	}
	return nil
}

// Public returns the parsed key.
func (k *Key) Public() crypto.PublicKey { return k.pub }

// Marshal returns the policy as indented JSON (the payload of a policy statement).
func (p *Policy) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidPolicy, err)
	}
	return append(b, '\n'), nil
}

// Decision is what a statement that passed the policy was checked against.
type Decision struct {
	Issuer  string
	Subject string
	KeyID   []byte // the thumbprint of the key that verified the signature
	Alg     cose.Algorithm
}

// Check decides whether statement (a COSE_Sign1 signed statement, as received) passes
// the policy: size, well-formedness, issuer and key, algorithm, claims, content type,
// and the signature. It returns a *Refusal (wrapping ErrRefused) when it does not.
func (p *Policy) Check(statement []byte) (*Decision, error) {
	max := p.MaxSize
	if max == 0 {
		max = receipts.MaxStatementSize
	}
	if len(statement) > max {
		return nil, refuse(CodeTooLarge, "statement of %d bytes exceeds the policy's %d", len(statement), max)
	}
	st, err := receipts.ParseStatement(statement)
	if err != nil {
		if errors.Is(err, receipts.ErrUnsupportedAlg) {
			return nil, refuse(CodeAlgNotAllowed, "%v", err)
		}
		return nil, refuse(CodeMalformed, "%v", err)
	}
	if len(st.Receipts) > 0 {
		return nil, refuse(CodeMalformed, "a signed statement to register carries no receipts (394)")
	}
	if st.Payload == nil {
		return nil, refuse(CodeDetachedPayload, "the statement's payload is detached; register a hash envelope (RFC 9995) instead")
	}
	if st.Claims.Issuer == "" || st.Claims.Subject == "" {
		return nil, refuse(CodeMissingClaim, "CWT claims (15) must carry iss (1) and sub (2)")
	}
	if err := p.checkClaims(st); err != nil {
		return nil, err
	}
	if len(p.Algorithms) > 0 && !slices.ContainsFunc(p.Algorithms, func(a string) bool { return knownAlgs[a] == st.Alg }) {
		return nil, refuse(CodeAlgNotAllowed, "algorithm %v is not allowed (allowed: %s)", st.Alg, strings.Join(p.Algorithms, ", "))
	}
	is := p.issuer(st.Claims.Issuer)
	if is == nil {
		return nil, refuse(CodeUnknownIssuer, "issuer %.200q is not in the registration policy", st.Claims.Issuer)
	}
	if err := p.checkContentType(st); err != nil {
		return nil, err
	}
	key, err := is.keyFor(st)
	if err != nil {
		return nil, err
	}
	if err := st.Verify(key.pub); err != nil {
		return nil, refuse(CodeBadSignature, "the signature does not verify with issuer %.200q's key %x: %v", is.ISS, key.thumbprint, err)
	}
	return &Decision{Issuer: st.Claims.Issuer, Subject: st.Claims.Subject, KeyID: key.thumbprint, Alg: st.Alg}, nil
}

func (p *Policy) issuer(iss string) *Issuer {
	for i := range p.Issuers {
		if p.Issuers[i].ISS == iss {
			return &p.Issuers[i]
		}
	}
	return nil
}

func (p *Policy) checkClaims(st *receipts.Statement) error {
	if len(p.RequiredClaims) == 0 {
		return nil
	}
	m, _ := st.Protected[cose.HeaderLabelCWTClaims].(map[any]any)
	for _, c := range p.RequiredClaims {
		if _, ok := m[knownClaims[c]]; !ok {
			return refuse(CodeMissingClaim, "the policy requires CWT claim %s (%d)", c, knownClaims[c])
		}
	}
	return nil
}

func (p *Policy) checkContentType(st *receipts.Statement) error {
	he, isEnvelope, err := st.HashEnvelope()
	if err != nil {
		return refuse(CodeMalformed, "%v", err)
	}
	ct := st.ContentType
	what := "content type (3)"
	if isEnvelope {
		ct, what = he.PreimageContentType, "preimage content type (259)"
	}
	if len(p.ContentTypes) == 0 {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil {
		return refuse(CodeContentType, "the statement's %s %.100q is missing or not a media type; allowed: %s", what, ct, strings.Join(p.ContentTypes, ", "))
	}
	for _, allowed := range p.ContentTypes {
		if amt, _, _ := mime.ParseMediaType(allowed); strings.EqualFold(amt, mt) {
			return nil
		}
	}
	return refuse(CodeContentType, "%s %.100q is not allowed (allowed: %s)", what, ct, strings.Join(p.ContentTypes, ", "))
}

// keyFor picks the issuer key a statement names by kid or x5chain.
func (is *Issuer) keyFor(st *receipts.Statement) (*Key, error) {
	if chain, ok := st.Protected[headerX5Chain]; ok {
		leaf, err := x5chainLeaf(chain)
		if err != nil {
			return nil, refuse(CodeX5ChainUnparseable, "x5chain (33): %v", err)
		}
		tp, err := receipts.KeyThumbprint(leaf)
		if err != nil {
			return nil, refuse(CodeUnknownKey, "x5chain leaf key: %v", err)
		}
		for i := range is.Keys {
			if bytes.Equal(is.Keys[i].thumbprint, tp) {
				return &is.Keys[i], nil
			}
		}
		return nil, refuse(CodeUnknownKey, "the x5chain leaf key (thumbprint %x) is not pinned for issuer %.200q", tp, is.ISS)
	}
	if len(st.KeyID) == 0 {
		return nil, refuse(CodeUnknownKey, "the statement names its key neither by kid (4) nor by x5chain (33)")
	}
	for i := range is.Keys {
		k := &is.Keys[i]
		if bytes.Equal(k.thumbprint, st.KeyID) || (k.kid != nil && bytes.Equal(k.kid, st.KeyID)) {
			return k, nil
		}
	}
	return nil, refuse(CodeUnknownKey, "kid %x is not a key of issuer %.200q in the registration policy", st.KeyID, is.ISS)
}

// x5chainLeaf returns the public key of the first certificate of an x5chain value (a
// bstr or an array of bstr).
func x5chainLeaf(v any) (crypto.PublicKey, error) {
	var der []byte
	switch c := v.(type) {
	case []byte:
		der = c
	case []any:
		if len(c) == 0 {
			return nil, errors.New("empty chain")
		}
		b, ok := c[0].([]byte)
		if !ok {
			return nil, errors.New("certificates must be bstr")
		}
		der = b
	default:
		return nil, errors.New("must be a bstr or an array of bstr")
	}
	return certificateKey(der)
}
