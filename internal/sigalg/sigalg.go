// Package sigalg is the algorithm-agile signature and digest layer shared by the OWP-2, COP 1.0
// and CHEQ profile adapters. Every signature and every digest names its algorithm
// (OWP-2 §14.2):
//
//   - signatures: "ed25519" (RFC 8032), "ecdsa-p256-sha256" and "ecdsa-p256-sha3-256" (FIPS 186-5,
//     the 64-byte r‖s encoding of RFC 7518 §3.4), "rsa-pss-3072-sha256" and
//     "rsa-pss-3072-sha3-256" (RFC 8017 PSS, MGF1 with the same hash, salt length = hash length,
//     a modulus of exactly 3072 bits);
//   - digests: "sha-256:<hex>" and "sha3-256:<hex>" (FIPS 180-4, FIPS 202), lower-case hex;
//   - public keys: JWK (RFC 7517/7518/8037) of kty OKP (crv Ed25519), EC (crv P-256) or RSA.
//
// A key is usable only with the algorithms of its type. BLAKE3 (also in OWP-2 §14.2) is not
// implemented: a digest or signature naming it is refused as an unknown algorithm.
package sigalg

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha3"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/evident-log/evident/ledger/canonical"
)

// Signature algorithm names.
const (
	Ed25519          = "ed25519"
	ECDSAP256SHA256  = "ecdsa-p256-sha256"
	ECDSAP256SHA3    = "ecdsa-p256-sha3-256"
	RSAPSS3072SHA256 = "rsa-pss-3072-sha256"
	RSAPSS3072SHA3   = "rsa-pss-3072-sha3-256"
)

// Digest algorithm names.
const (
	SHA256  = "sha-256"
	SHA3256 = "sha3-256"
)

// Algorithms lists every signature algorithm this package verifies.
var Algorithms = []string{Ed25519, ECDSAP256SHA256, ECDSAP256SHA3, RSAPSS3072SHA256, RSAPSS3072SHA3}

// Errors callers branch on.
var (
	ErrUnknownAlg = errors.New("unknown algorithm")
	ErrKeyType    = errors.New("key type does not match the algorithm")
	ErrBadKey     = errors.New("unusable public key")
	ErrFormat     = errors.New("malformed signature or digest")
	ErrVerify     = errors.New("signature does not verify")
)

// Digest is an algorithm-named hash value.
type Digest struct {
	Alg   string
	Value []byte
}

// String renders "alg:hex".
func (d Digest) String() string { return d.Alg + ":" + hex.EncodeToString(d.Value) }

// Hash computes the digest of data under alg.
func Hash(alg string, data []byte) (Digest, error) {
	switch alg {
	case SHA256:
		s := sha256.Sum256(data)
		return Digest{alg, s[:]}, nil
	case SHA3256:
		s := sha3.Sum256(data)
		return Digest{alg, s[:]}, nil
	}
	return Digest{}, fmt.Errorf("%w %.40q", ErrUnknownAlg, alg)
}

// ParseDigest parses "sha-256:<hex>" or "sha3-256:<hex>" (64 lower-case hex digits).
func ParseDigest(s string) (Digest, error) {
	alg, h, ok := strings.Cut(s, ":")
	if !ok {
		return Digest{}, fmt.Errorf("%w: digest %.80q is not alg:hex", ErrFormat, s)
	}
	if alg != SHA256 && alg != SHA3256 {
		return Digest{}, fmt.Errorf("%w %.40q", ErrUnknownAlg, alg)
	}
	v, err := hex.DecodeString(h)
	if err != nil || len(v) != 32 || hex.EncodeToString(v) != h {
		return Digest{}, fmt.Errorf("%w: digest value must be 64 lower-case hex digits", ErrFormat)
	}
	return Digest{alg, v}, nil
}

// Matches reports whether d is the digest of data.
func (d Digest) Matches(data []byte) bool {
	got, err := Hash(d.Alg, data)
	return err == nil && string(got.Value) == string(d.Value)
}

// Signature is an algorithm-named signature by a key id.
type Signature struct {
	Alg   string
	Kid   string
	Value []byte
}

// ParseSignature reads {alg, <kidField>, value} (value: standard base64 with padding, one
// spelling only) from a JSON object.
func ParseSignature(o *canonical.Object, kidField string) (*Signature, error) {
	if o == nil {
		return nil, fmt.Errorf("%w: a signature is an object", ErrFormat)
	}
	alg, ok1 := o.String("alg")
	kid, ok2 := o.String(kidField)
	val, ok3 := o.String("value")
	if !ok1 || !ok2 || !ok3 || kid == "" {
		return nil, fmt.Errorf("%w: a signature needs string alg, %s and value", ErrFormat, kidField)
	}
	if !knownAlg(alg) {
		return nil, fmt.Errorf("%w %.40q", ErrUnknownAlg, alg)
	}
	v, err := base64.StdEncoding.Strict().DecodeString(val)
	if err != nil || base64.StdEncoding.EncodeToString(v) != val {
		return nil, fmt.Errorf("%w: signature value is not standard base64 with padding", ErrFormat)
	}
	return &Signature{Alg: alg, Kid: kid, Value: v}, nil
}

// Object renders the signature as {alg, <kidField>, value}.
func (s *Signature) Object(kidField string) *canonical.Object {
	return &canonical.Object{Members: []canonical.Member{{Key: "alg", Value: s.Alg}, {Key: kidField, Value: s.Kid},
		{Key: "value", Value: base64.StdEncoding.EncodeToString(s.Value)}}}
}

func knownAlg(alg string) bool {
	for _, a := range Algorithms {
		if a == alg {
			return true
		}
	}
	return false
}

func hashOf(alg string) crypto.Hash {
	if strings.HasSuffix(alg, "sha3-256") {
		return crypto.SHA3_256
	}
	return crypto.SHA256
}

func digestFor(alg string, msg []byte) []byte {
	h := hashOf(alg).New()
	h.Write(msg)
	return h.Sum(nil)
}

// Verify checks sig over msg with pub (an ed25519.PublicKey, *ecdsa.PublicKey or *rsa.PublicKey).
func Verify(pub crypto.PublicKey, alg string, msg, sig []byte) error {
	switch alg {
	case Ed25519:
		k, ok := pub.(ed25519.PublicKey)
		if !ok {
			return ErrKeyType
		}
		if len(sig) != ed25519.SignatureSize || !ed25519.Verify(k, msg, sig) {
			return ErrVerify
		}
	case ECDSAP256SHA256, ECDSAP256SHA3:
		k, ok := pub.(*ecdsa.PublicKey)
		if !ok || k.Curve != elliptic.P256() {
			return ErrKeyType
		}
		if len(sig) != 64 {
			return ErrVerify
		}
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		if !ecdsa.Verify(k, digestFor(alg, msg), r, s) {
			return ErrVerify
		}
	case RSAPSS3072SHA256, RSAPSS3072SHA3:
		k, ok := pub.(*rsa.PublicKey)
		if !ok || k.N.BitLen() != 3072 {
			return ErrKeyType
		}
		h := hashOf(alg)
		if rsa.VerifyPSS(k, h, digestFor(alg, msg), sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: h}) != nil {
			return ErrVerify
		}
	default:
		return fmt.Errorf("%w %.40q", ErrUnknownAlg, alg)
	}
	return nil
}

// Sign signs msg with priv under alg (the producer side: scenarios, vectors, the COP ledger).
func Sign(priv crypto.Signer, alg string, msg []byte) ([]byte, error) {
	switch alg {
	case Ed25519:
		return priv.Sign(rand.Reader, msg, crypto.Hash(0))
	case ECDSAP256SHA256, ECDSAP256SHA3:
		k, ok := priv.(*ecdsa.PrivateKey)
		if !ok {
			return nil, ErrKeyType
		}
		r, s, err := ecdsa.Sign(rand.Reader, k, digestFor(alg, msg))
		if err != nil {
			return nil, err
		}
		out := make([]byte, 64)
		r.FillBytes(out[:32])
		s.FillBytes(out[32:])
		return out, nil
	case RSAPSS3072SHA256, RSAPSS3072SHA3:
		h := hashOf(alg)
		return priv.Sign(rand.Reader, digestFor(alg, msg), &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: h})
	}
	return nil, fmt.Errorf("%w %.40q", ErrUnknownAlg, alg)
}

// ParseJWK reads a public JWK: OKP/Ed25519 {x}, EC/P-256 {x, y}, RSA {n, e} (3072 bits).
// Private members ("d", "p", …) are refused: a public record must never carry a private key.
func ParseJWK(o *canonical.Object) (crypto.PublicKey, error) {
	if o == nil {
		return nil, fmt.Errorf("%w: a JWK is an object", ErrBadKey)
	}
	if _, ok := o.Get("d"); ok {
		return nil, fmt.Errorf("%w: the JWK carries a private member", ErrBadKey)
	}
	kty, _ := o.String("kty")
	b64 := func(name string) ([]byte, error) {
		s, ok := o.String(name)
		if !ok {
			return nil, fmt.Errorf("%w: JWK member %q missing", ErrBadKey, name)
		}
		v, err := base64.RawURLEncoding.Strict().DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%w: JWK member %q is not base64url: %v", ErrBadKey, name, err)
		}
		return v, nil
	}
	switch kty {
	case "OKP":
		if crv, _ := o.String("crv"); crv != "Ed25519" {
			return nil, fmt.Errorf("%w: OKP key must be crv Ed25519", ErrBadKey)
		}
		x, err := b64("x")
		if err != nil {
			return nil, err
		}
		if len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("%w: Ed25519 x must be 32 bytes", ErrBadKey)
		}
		return ed25519.PublicKey(x), nil
	case "EC":
		if crv, _ := o.String("crv"); crv != "P-256" {
			return nil, fmt.Errorf("%w: EC key must be crv P-256", ErrBadKey)
		}
		x, err := b64("x")
		if err != nil {
			return nil, err
		}
		y, err := b64("y")
		if err != nil {
			return nil, err
		}
		if len(x) != 32 || len(y) != 32 {
			return nil, fmt.Errorf("%w: P-256 coordinates must be 32 bytes", ErrBadKey)
		}
		raw := append(append([]byte{4}, x...), y...)
		k, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
		}
		return k, nil
	case "RSA":
		n, err := b64("n")
		if err != nil {
			return nil, err
		}
		e, err := b64("e")
		if err != nil {
			return nil, err
		}
		k := &rsa.PublicKey{N: new(big.Int).SetBytes(n)}
		if len(e) == 0 || len(e) > 4 {
			return nil, fmt.Errorf("%w: RSA exponent", ErrBadKey)
		}
		ev := new(big.Int).SetBytes(e)
		k.E = int(ev.Int64())
		if k.N.BitLen() != 3072 || k.E < 3 || k.E%2 == 0 {
			return nil, fmt.Errorf("%w: RSA keys must have a 3072-bit modulus and an odd exponent ≥ 3", ErrBadKey)
		}
		return k, nil
	}
	return nil, fmt.Errorf("%w: kty %.20q (want OKP, EC or RSA)", ErrBadKey, kty)
}

// JWK renders a public key as a JWK object (the inverse of ParseJWK).
func JWK(pub crypto.PublicKey) (*canonical.Object, error) {
	enc := base64.RawURLEncoding.EncodeToString
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return obj("kty", "OKP", "crv", "Ed25519", "x", enc(k)), nil
	case *ecdsa.PublicKey:
		raw, err := k.Bytes()
		if err != nil {
			return nil, err
		}
		return obj("kty", "EC", "crv", "P-256", "x", enc(raw[1:33]), "y", enc(raw[33:])), nil
	case *rsa.PublicKey:
		return obj("kty", "RSA", "n", enc(k.N.Bytes()), "e", enc(big.NewInt(int64(k.E)).Bytes())), nil
	}
	return nil, ErrBadKey
}

// DefaultAlg is the algorithm a producer uses with a key of pub's type.
func DefaultAlg(pub crypto.PublicKey) string {
	switch pub.(type) {
	case *ecdsa.PublicKey:
		return ECDSAP256SHA256
	case *rsa.PublicKey:
		return RSAPSS3072SHA256
	}
	return Ed25519
}

func obj(kv ...string) *canonical.Object {
	o := &canonical.Object{}
	for i := 0; i+1 < len(kv); i += 2 {
		o.Members = append(o.Members, canonical.Member{Key: kv[i], Value: kv[i+1]})
	}
	return o
}
