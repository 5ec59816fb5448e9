package receipts

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"

	"github.com/veraison/go-cose"
)

// Hash envelope header parameters (COSE Hash Envelope, RFC 9995). A hash-envelope
// statement signs the hash of some content instead of the content itself, so the content
// can stay out of the transparency service: the payload is the hash, 258 names the hash
// algorithm, 259 the media type of the preimage and 260 where the preimage can be found.
// Content type (3) must not be present.
const (
	HeaderPayloadHashAlg      int64 = 258
	HeaderPreimageContentType int64 = 259
	HeaderPayloadLocation     int64 = 260
)

// COSE hash algorithm identifiers accepted in header 258 (IANA COSE Algorithms).
const (
	HashAlgSHA256 int64 = -16
	HashAlgSHA384 int64 = -43
	HashAlgSHA512 int64 = -44
)

// HashEnvelope is the content of a hash-envelope statement's headers.
type HashEnvelope struct {
	// HashAlg is header 258 (HashAlgSHA256, HashAlgSHA384 or HashAlgSHA512).
	HashAlg int64
	// PreimageContentType is header 259, the media type of the hashed content; optional.
	PreimageContentType string
	// Location is header 260, where the content can be fetched; optional.
	Location string
	// Hash is the payload: the hash of the content.
	Hash []byte
}

// hashContent hashes content with a COSE hash algorithm.
func hashContent(alg int64, content []byte) ([]byte, error) {
	switch alg {
	case HashAlgSHA256:
		h := sha256.Sum256(content)
		return h[:], nil
	case HashAlgSHA384:
		h := sha512.Sum384(content)
		return h[:], nil
	case HashAlgSHA512:
		h := sha512.Sum512(content)
		return h[:], nil
	}
	return nil, fmt.Errorf("%w: payload hash algorithm %d", ErrUnsupportedAlg, alg)
}

// SignHashEnvelope signs a hash-envelope statement over content: the payload is the hash
// of content with hashAlg (HashAlgSHA256 if zero), and the protected header carries
// 258, 259 (when preimageType is set) and 260 (when location is set) besides alg, kid and
// the CWT claims. o.ContentType must be empty (RFC 9995 forbids header 3 here).
func SignHashEnvelope(s *Signer, content []byte, hashAlg int64, preimageType, location string, o StatementOptions) ([]byte, error) {
	if hashAlg == 0 {
		hashAlg = HashAlgSHA256
	}
	if o.ContentType != "" {
		return nil, fmt.Errorf("%w: a hash envelope carries no content type (3); use the preimage content type (259)", ErrMalformed)
	}
	digest, err := hashContent(hashAlg, content)
	if err != nil {
		return nil, err
	}
	prot := map[int64]any{HeaderPayloadHashAlg: hashAlg}
	for l, v := range o.Protected {
		if l == HeaderPayloadHashAlg || l == HeaderPreimageContentType || l == HeaderPayloadLocation {
			return nil, fmt.Errorf("%w: protected label %d is set from the arguments", ErrMalformed, l)
		}
		prot[l] = v
	}
	if preimageType != "" {
		prot[HeaderPreimageContentType] = preimageType
	}
	if location != "" {
		prot[HeaderPayloadLocation] = location
	}
	o.Protected = prot
	return SignStatement(s, digest, o)
}

// HashEnvelope returns the hash-envelope parameters of the statement, and false when it
// is not a hash envelope (no header 258). A statement that has 258 but breaks the rules
// (content type present, unknown algorithm, payload of the wrong length, ill-typed 259 or
// 260) fails with ErrMalformed or ErrUnsupportedAlg.
func (st *Statement) HashEnvelope() (HashEnvelope, bool, error) {
	v, ok := st.Protected[HeaderPayloadHashAlg]
	if !ok {
		return HashEnvelope{}, false, nil
	}
	var he HashEnvelope
	switch n := v.(type) {
	case int64:
		he.HashAlg = n
	case cose.Algorithm:
		he.HashAlg = int64(n)
	default:
		return he, true, fmt.Errorf("%w: payload hash algorithm (258) must be an integer", ErrMalformed)
	}
	if _, ok := st.Protected[cose.HeaderLabelContentType]; ok {
		return he, true, fmt.Errorf("%w: a hash envelope must not carry a content type (3)", ErrMalformed)
	}
	want, err := hashContent(he.HashAlg, nil)
	if err != nil {
		return he, true, err
	}
	if st.Payload != nil && len(st.Payload) != len(want) {
		return he, true, fmt.Errorf("%w: hash envelope payload of %d bytes, algorithm %d gives %d", ErrMalformed, len(st.Payload), he.HashAlg, len(want))
	}
	if v, ok := st.Protected[HeaderPreimageContentType]; ok {
		switch t := v.(type) {
		case string:
			he.PreimageContentType = t
		case int64:
			he.PreimageContentType = fmt.Sprintf("coap-content-format:%d", t)
		default:
			return he, true, fmt.Errorf("%w: preimage content type (259) must be a tstr or uint", ErrMalformed)
		}
	}
	if v, ok := st.Protected[HeaderPayloadLocation]; ok {
		s, ok := v.(string)
		if !ok {
			return he, true, fmt.Errorf("%w: payload location (260) must be a tstr", ErrMalformed)
		}
		he.Location = s
	}
	he.Hash = st.Payload
	return he, true, nil
}

// VerifyPreimage checks that content is the preimage of a hash-envelope statement's
// payload. It fails with ErrMalformed for a statement that is not a hash envelope and
// ErrBadProof when the hash differs.
func (st *Statement) VerifyPreimage(content []byte) error {
	he, ok, err := st.HashEnvelope()
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: not a hash envelope (no header 258)", ErrMalformed)
	}
	got, err := hashContent(he.HashAlg, content)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, he.Hash) {
		return fmt.Errorf("%w: content does not hash to the envelope's payload", ErrBadProof)
	}
	return nil
}
