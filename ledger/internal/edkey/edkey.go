// Package edkey verifies Ed25519 signatures with a public key decoded once.
//
// crypto/ed25519.Verify decodes the public key, a point on the curve, on every call: a
// square root in the field, about 5 % of what a verification costs. A chain's records are
// signed by a handful of keys, each many times, so a PublicKey here keeps the decoded point
// and each Verify starts from it. The verification is otherwise crypto/ed25519's, step for
// step and on the same curve arithmetic (filippo.io/edwards25519, the code the standard
// library carries internally): the same cofactorless equation, the same refusal of a
// non-canonical S, the same byte comparison of R. The tests hold it to crypto/ed25519 over
// the Wycheproof and "Taming the many EdDSAs" edge cases and under fuzzing.
package edkey

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha512"
	"errors"

	"filippo.io/edwards25519"
)

// ErrKey means a public key is not 32 bytes or not the encoding of a curve point; no
// signature verifies under it.
var ErrKey = errors.New("ed25519: invalid public key")

// PublicKey is an Ed25519 public key with its point decoded, safe for concurrent use.
type PublicKey struct {
	encoded [ed25519.PublicKeySize]byte
	minusA  edwards25519.Point // the negated point: Verify computes [k](-A) + [S]B
}

// New decodes pub. It fails with ErrKey where crypto/ed25519.Verify would refuse every
// signature (a key that is not a point) or panic (a key that is not 32 bytes).
func New(pub ed25519.PublicKey) (*PublicKey, error) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, ErrKey
	}
	a, err := new(edwards25519.Point).SetBytes(pub)
	if err != nil {
		return nil, ErrKey
	}
	k := &PublicKey{}
	copy(k.encoded[:], pub)
	k.minusA.Negate(a)
	return k, nil
}

// Is reports whether pub is the encoding k was made from.
func (k *PublicKey) Is(pub []byte) bool { return bytes.Equal(k.encoded[:], pub) }

// Verify reports whether sig is a valid Ed25519 signature of msg by k: exactly when
// crypto/ed25519.Verify would with the key k was made from.
func (k *PublicKey) Verify(msg, sig []byte) bool {
	if len(sig) != ed25519.SignatureSize || sig[63]&224 != 0 {
		return false
	}
	h := sha512.New()
	h.Write(sig[:32])
	h.Write(k.encoded[:])
	h.Write(msg)
	var digest [sha512.Size]byte
	kScalar, err := edwards25519.NewScalar().SetUniformBytes(h.Sum(digest[:0]))
	if err != nil {
		return false // unreachable: a SHA-512 digest is 64 bytes
	}
	s, err := edwards25519.NewScalar().SetCanonicalBytes(sig[32:])
	if err != nil {
		return false
	}
	// [S]B = R + [k]A, so R = [k](-A) + [S]B.
	var r edwards25519.Point
	r.VarTimeDoubleScalarBaseMult(kScalar, &k.minusA, s)
	return bytes.Equal(sig[:32], r.Bytes())
}
