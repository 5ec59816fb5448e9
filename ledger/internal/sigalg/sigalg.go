// Package sigalg forwards to internal/sigalg, where the algorithm-agile signature and digest
// layer now lives so that the signed fixtures under internal/scenario can use it too. It keeps
// the profile adapters' import path working; once they import internal/sigalg themselves,
// this package goes. Everything here is an alias or a plain call of the same name there.
package sigalg

import (
	"crypto"

	"github.com/evident-log/evident/internal/sigalg"
	"github.com/evident-log/evident/ledger/canonical"
)

// Signature algorithm names.
const (
	Ed25519          = sigalg.Ed25519
	ECDSAP256SHA256  = sigalg.ECDSAP256SHA256
	ECDSAP256SHA3    = sigalg.ECDSAP256SHA3
	RSAPSS3072SHA256 = sigalg.RSAPSS3072SHA256
	RSAPSS3072SHA3   = sigalg.RSAPSS3072SHA3
)

// Digest algorithm names.
const (
	SHA256  = sigalg.SHA256
	SHA3256 = sigalg.SHA3256
)

// Algorithms lists every signature algorithm this package verifies.
var Algorithms = sigalg.Algorithms

// Errors callers branch on (the same values as internal/sigalg's).
var (
	ErrUnknownAlg = sigalg.ErrUnknownAlg
	ErrKeyType    = sigalg.ErrKeyType
	ErrBadKey     = sigalg.ErrBadKey
	ErrFormat     = sigalg.ErrFormat
	ErrVerify     = sigalg.ErrVerify
)

// Digest is an algorithm-named hash value.
type Digest = sigalg.Digest

// Signature is an algorithm-named signature with its key id.
type Signature = sigalg.Signature

// Hash computes the digest of data under alg.
func Hash(alg string, data []byte) (Digest, error) { return sigalg.Hash(alg, data) }

// ParseDigest parses "<alg>:<hex>".
func ParseDigest(s string) (Digest, error) { return sigalg.ParseDigest(s) }

// ParseSignature reads a signature object whose key id is in kidField.
func ParseSignature(o *canonical.Object, kidField string) (*Signature, error) {
	return sigalg.ParseSignature(o, kidField)
}

// Verify checks sig over msg under alg with pub.
func Verify(pub crypto.PublicKey, alg string, msg, sig []byte) error {
	return sigalg.Verify(pub, alg, msg, sig)
}

// Sign signs msg under alg with priv.
func Sign(priv crypto.Signer, alg string, msg []byte) ([]byte, error) {
	return sigalg.Sign(priv, alg, msg)
}

// ParseJWK reads a public key from its JWK.
func ParseJWK(o *canonical.Object) (crypto.PublicKey, error) { return sigalg.ParseJWK(o) }

// JWK is pub's JWK.
func JWK(pub crypto.PublicKey) (*canonical.Object, error) { return sigalg.JWK(pub) }

// DefaultAlg is the signature algorithm a key of pub's type uses by default.
func DefaultAlg(pub crypto.PublicKey) string { return sigalg.DefaultAlg(pub) }
