package receipts

import (
	"crypto"
	"crypto/sha256"
	"fmt"

	"github.com/fxamacker/cbor/v2"
	"github.com/veraison/go-cose"
)

// Claims are the CWT claims (RFC 9597, header 15) Evident reads and writes.
// Zero values are omitted when encoding and mean "absent" when parsing.
type Claims struct {
	Issuer   string // iss (1)
	Subject  string // sub (2)
	IssuedAt int64  // iat (6), seconds since the Unix epoch
}

// StatementOptions are the protected header contents of a signed statement
// besides alg and kid, which come from the Signer.
type StatementOptions struct {
	// Claims go into header 15. Issuer and Subject are required.
	Claims Claims
	// ContentType (header 3) is the media type of the payload; optional.
	ContentType string
	// Protected holds extra protected header parameters, such as HeaderSeq
	// (uint) and HeaderPrev (tstr). Labels 1, 2, 3, 4, 15, 394, 395 and 396
	// are refused. Values must be CBOR-encodable.
	Protected map[int64]any
}

// reservedStatementLabels cannot be set through StatementOptions.Protected.
var reservedStatementLabels = map[int64]bool{
	cose.HeaderLabelAlgorithm:   true,
	cose.HeaderLabelCritical:    true,
	cose.HeaderLabelContentType: true,
	cose.HeaderLabelKeyID:       true,
	cose.HeaderLabelCWTClaims:   true,
	HeaderReceipts:              true,
	HeaderVDS:                   true,
	HeaderVDP:                   true,
}

// SignStatement signs payload as a tagged COSE_Sign1 signed statement with
// protected header {1: alg, 3: content type, 4: kid, 15: claims, extras...}
// and an empty unprotected header, in core deterministic CBOR.
func SignStatement(s *Signer, payload []byte, o StatementOptions) ([]byte, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: nil signer", ErrUnsupportedAlg)
	}
	if payload == nil {
		payload = []byte{}
	}
	if o.Claims.Issuer == "" || o.Claims.Subject == "" {
		return nil, fmt.Errorf("%w: statement claims need iss and sub", ErrMalformed)
	}
	m := map[int64]any{
		cose.HeaderLabelAlgorithm: int64(s.alg),
		cose.HeaderLabelKeyID:     s.kid,
		cose.HeaderLabelCWTClaims: o.Claims.claimsMap(),
	}
	if o.ContentType != "" {
		m[cose.HeaderLabelContentType] = o.ContentType
	}
	for l, v := range o.Protected {
		if reservedStatementLabels[l] {
			return nil, fmt.Errorf("%w: protected label %d is managed by the package", ErrMalformed, l)
		}
		m[l] = v
	}
	protected, err := encMode.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%w: protected header: %v", ErrMalformed, err)
	}
	// Let go-cose validate the header the way a verifier will see it.
	var hdr cose.ProtectedHeader
	wrapped, err := encMode.Marshal(protected)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if err := hdr.UnmarshalCBOR(wrapped); err != nil {
		return nil, fmt.Errorf("%w: protected header: %v", ErrMalformed, err)
	}
	sig, err := s.sign(protected, hdr, payload)
	if err != nil {
		return nil, err
	}
	out, err := encodeSign1(protected, map[int64]any{}, payload, sig)
	if err != nil {
		return nil, err
	}
	if len(out) > MaxStatementSize {
		return nil, fmt.Errorf("%w: statement of %d bytes exceeds limit %d", ErrMalformed, len(out), MaxStatementSize)
	}
	return out, nil
}

// encodeSign1 encodes a tagged COSE_Sign1; a nil payload is encoded as nil.
func encodeSign1(protected []byte, unprotected map[int64]any, payload, sig []byte) ([]byte, error) {
	var pl any
	if payload != nil {
		pl = payload
	}
	out, err := encMode.Marshal(cbor.Tag{Number: cose.CBORTagSign1Message, Content: []any{protected, unprotected, pl, sig}})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return out, nil
}

// Statement is a parsed signed (or transparent) statement.
type Statement struct {
	// Raw is the input, as given to ParseStatement.
	Raw []byte
	// Alg is the signature algorithm (header 1).
	Alg cose.Algorithm
	// KeyID is the kid (header 4), nil if absent.
	KeyID []byte
	// Claims are the CWT claims of header 15.
	Claims Claims
	// ContentType is header 3 when it is a text media type.
	ContentType string
	// ProtectedRaw is the serialized protected header map.
	ProtectedRaw []byte
	// Protected is the decoded protected header (labels are int64 or
	// string); read it through the accessors, do not modify it.
	Protected cose.ProtectedHeader
	// Payload is the payload, nil if detached.
	Payload []byte
	// Signature is the raw signature.
	Signature []byte
	// Receipts are the receipts found under label 394 of the unprotected
	// header (not parsed further).
	Receipts [][]byte

	msg *cose.Sign1Message
}

// ParseStatement parses a tagged COSE_Sign1 statement of at most
// MaxStatementSize bytes. It requires alg in the protected header and one of
// the verifiable algorithms, checks the types of kid, content type and CWT
// claims, and collects receipts from label 394. It does not verify.
func ParseStatement(raw []byte) (*Statement, error) {
	return ParseStatementLimit(raw, MaxStatementSize)
}

// ParseStatementLimit is ParseStatement with a bound of max bytes in place of
// MaxStatementSize: for the service's own entry statements, whose payload is a
// whole record (up to the record limit, docs/operations.md).
func ParseStatementLimit(raw []byte, max int) (*Statement, error) {
	msg, parts, err := decodeSign1(raw, max, "statement")
	if err != nil {
		return nil, err
	}
	alg, kid, claims, err := commonProtected(msg.Headers.Protected)
	if err != nil {
		return nil, fmt.Errorf("statement: %w", err)
	}
	st := &Statement{
		Raw:       raw,
		Alg:       alg,
		KeyID:     kid,
		Claims:    claims,
		Protected: msg.Headers.Protected,
		Payload:   msg.Payload,
		Signature: msg.Signature,
		msg:       msg,
	}
	if st.ProtectedRaw, err = unwrapBstr(parts.Protected); err != nil {
		return nil, err
	}
	if v, ok := msg.Headers.Protected[cose.HeaderLabelContentType]; ok {
		st.ContentType, _ = v.(string)
	}
	if v, ok := msg.Headers.Unprotected[HeaderReceipts]; ok {
		if st.Receipts, err = receiptList(v); err != nil {
			return nil, fmt.Errorf("statement: %w", err)
		}
	}
	return st, nil
}

// receiptList checks the value of header 394.
func receiptList(v any) ([][]byte, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, fmt.Errorf("%w: receipts (394) must be a non-empty array", ErrMalformed)
	}
	if len(arr) > MaxReceipts {
		return nil, fmt.Errorf("%w: %d receipts exceed limit %d", ErrMalformed, len(arr), MaxReceipts)
	}
	out := make([][]byte, len(arr))
	for i, e := range arr {
		b, ok := e.([]byte)
		if !ok || len(b) == 0 || len(b) > MaxReceiptSize {
			return nil, fmt.Errorf("%w: receipt %d must be a bstr of 1..%d bytes", ErrMalformed, i, MaxReceiptSize)
		}
		out[i] = b
	}
	return out, nil
}

// unwrapBstr returns the content of an encoded bstr.
func unwrapBstr(item []byte) ([]byte, error) {
	var b []byte
	if err := headerDec.Unmarshal(item, &b); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return b, nil
}

// Verify checks the statement's signature with pub, which must fit Alg.
// It fails with ErrBadSignature, or ErrMalformed for a detached payload.
func (st *Statement) Verify(pub crypto.PublicKey) error {
	if st == nil || st.msg == nil {
		return fmt.Errorf("%w: statement not parsed", ErrMalformed)
	}
	if st.msg.Payload == nil {
		return fmt.Errorf("%w: statement has a detached payload", ErrMalformed)
	}
	if err := verifySign1(st.msg, st.Alg, st.msg.Payload, pub); err != nil {
		return fmt.Errorf("statement: %w", err)
	}
	return nil
}

// Header returns the protected header parameter with the given label.
func (st *Statement) Header(label int64) (any, bool) {
	v, ok := st.Protected[label]
	return v, ok
}

// HeaderUint returns a protected parameter that is a CBOR unsigned integer.
func (st *Statement) HeaderUint(label int64) (uint64, bool) {
	switch n := st.Protected[label].(type) {
	case int64:
		if n >= 0 {
			return uint64(n), true
		}
	case uint64:
		return n, true
	}
	return 0, false
}

// HeaderText returns a protected parameter that is a CBOR text string.
func (st *Statement) HeaderText(label int64) (string, bool) {
	s, ok := st.Protected[label].(string)
	return s, ok
}

// HeaderBytes returns a protected parameter that is a CBOR byte string.
func (st *Statement) HeaderBytes(label int64) ([]byte, bool) {
	b, ok := st.Protected[label].([]byte)
	return b, ok
}

// Seq returns the HeaderSeq parameter, if present and a uint.
func (st *Statement) Seq() (uint64, bool) { return st.HeaderUint(HeaderSeq) }

// Prev returns the HeaderPrev parameter, if present and a tstr.
func (st *Statement) Prev() (string, bool) { return st.HeaderText(HeaderPrev) }

// EntryHash returns the log entry for a statement: SHA-256 of the tagged
// COSE_Sign1 with its unprotected header replaced by an empty map (0xa0),
// the protected header, payload and signature items kept byte for byte.
// Receipts and other unprotected parameters therefore do not change it.
// The statement must be a well-formed COSE_Sign1 (any algorithm).
func EntryHash(statement []byte) ([32]byte, error) {
	_, parts, err := decodeSign1(statement, MaxStatementSize, "statement")
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(parts.encode([]byte{0xa0})), nil
}

// LeafHash returns the RFC 9162 Merkle leaf hash SHA-256(0x00 || entry).
func LeafHash(entry []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte{0})
	h.Write(entry)
	var out [32]byte
	h.Sum(out[:0])
	return out
}
