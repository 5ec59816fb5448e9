package receipts

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"fmt"
	"math/big"

	"github.com/veraison/go-cose"
)

// COSE_Key labels and values (RFC 9052 section 7, RFC 9053).
const (
	keyKty int64 = 1
	keyKid int64 = 2
	keyAlg int64 = 3
	keyCrv int64 = -1 // also RSA n
	keyX   int64 = -2 // also RSA e
	keyY   int64 = -3
	keyD   int64 = -4

	ktyOKP int64 = 1
	ktyEC2 int64 = 2
	ktyRSA int64 = 3

	crvP256    int64 = 1
	crvP384    int64 = 2
	crvP521    int64 = 3
	crvEd25519 int64 = 6
)

// verifyAlgs are the algorithms Verify accepts.
var verifyAlgs = map[cose.Algorithm]bool{
	cose.AlgorithmEdDSA: true,
	cose.AlgorithmES256: true,
	cose.AlgorithmES384: true,
	cose.AlgorithmPS256: true,
}

// Signer wraps a crypto.Signer with its COSE algorithm and key identifier.
// It is safe for concurrent use if the wrapped crypto.Signer is.
type Signer struct {
	key  crypto.Signer
	alg  cose.Algorithm
	kid  []byte
	cose cose.Signer
}

// NewSigner wraps key. Ed25519 keys sign with EdDSA (-8) and P-256 ECDSA
// keys with ES256 (-7); other keys fail with ErrUnsupportedAlg. The key ID
// is the RFC 9679 thumbprint of the public key.
func NewSigner(key crypto.Signer) (*Signer, error) {
	if key == nil {
		return nil, fmt.Errorf("%w: nil signer", ErrUnsupportedAlg)
	}
	var alg cose.Algorithm
	switch pub := key.Public().(type) {
	case ed25519.PublicKey:
		alg = cose.AlgorithmEdDSA
	case *ecdsa.PublicKey:
		if pub.Curve != elliptic.P256() {
			return nil, fmt.Errorf("%w: signing needs P-256 for ECDSA", ErrUnsupportedAlg)
		}
		alg = cose.AlgorithmES256
	default:
		return nil, fmt.Errorf("%w: signing key type %T", ErrUnsupportedAlg, pub)
	}
	kid, err := KeyThumbprint(key.Public())
	if err != nil {
		return nil, err
	}
	cs, err := cose.NewSigner(alg, key)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupportedAlg, err)
	}
	return &Signer{key: key, alg: alg, kid: kid, cose: cs}, nil
}

// Algorithm returns the COSE algorithm the signer uses.
func (s *Signer) Algorithm() cose.Algorithm { return s.alg }

// KeyID returns the RFC 9679 thumbprint (SHA-256) of the signer's public key.
func (s *Signer) KeyID() []byte { return append([]byte(nil), s.kid...) }

// Public returns the signer's public key.
func (s *Signer) Public() crypto.PublicKey { return s.key.Public() }

// sign signs a COSE_Sign1 whose protected header serializes to protected.
func (s *Signer) sign(protected []byte, hdr cose.ProtectedHeader, payload []byte) ([]byte, error) {
	wrapped, err := encMode.Marshal(protected)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	msg := cose.Sign1Message{
		Headers: cose.Headers{RawProtected: wrapped, Protected: hdr},
		Payload: payload,
	}
	if err := msg.Sign(rand.Reader, nil, s.cose); err != nil {
		return nil, fmt.Errorf("receipts: signing: %w", err)
	}
	return msg.Signature, nil
}

// coseKeyParams returns the RFC 9679 required parameters of pub and the alg
// to advertise for it.
func coseKeyParams(pub crypto.PublicKey) (map[int64]any, cose.Algorithm, error) {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		if len(k) != ed25519.PublicKeySize {
			return nil, 0, fmt.Errorf("%w: Ed25519 public key of %d bytes", ErrMalformed, len(k))
		}
		return map[int64]any{keyKty: ktyOKP, keyCrv: crvEd25519, keyX: []byte(k)}, cose.AlgorithmEdDSA, nil
	case *ecdsa.PublicKey:
		var crv int64
		var alg cose.Algorithm
		switch k.Curve {
		case elliptic.P256():
			crv, alg = crvP256, cose.AlgorithmES256
		case elliptic.P384():
			crv, alg = crvP384, cose.AlgorithmES384
		default:
			return nil, 0, fmt.Errorf("%w: ECDSA curve", ErrUnsupportedAlg)
		}
		pt, err := k.Bytes()
		if err != nil {
			return nil, 0, fmt.Errorf("%w: ECDSA public key: %v", ErrMalformed, err)
		}
		n := (len(pt) - 1) / 2
		return map[int64]any{keyKty: ktyEC2, keyCrv: crv, keyX: pt[1 : 1+n], keyY: pt[1+n:]}, alg, nil
	case *rsa.PublicKey:
		if k.N == nil || k.E < 3 {
			return nil, 0, fmt.Errorf("%w: RSA public key", ErrMalformed)
		}
		e := big.NewInt(int64(k.E)).Bytes()
		return map[int64]any{keyKty: ktyRSA, keyCrv: k.N.Bytes(), keyX: e}, cose.AlgorithmPS256, nil
	default:
		return nil, 0, fmt.Errorf("%w: public key type %T", ErrUnsupportedAlg, pub)
	}
}

// KeyThumbprint returns the RFC 9679 COSE Key Thumbprint of pub with
// SHA-256: the hash of the deterministic encoding of the key's required
// parameters (kty, crv, x[, y] for OKP/EC2; kty, n, e for RSA).
func KeyThumbprint(pub crypto.PublicKey) ([]byte, error) {
	m, _, err := coseKeyParams(pub)
	if err != nil {
		return nil, err
	}
	b, err := encMode.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	h := sha256.Sum256(b)
	return h[:], nil
}

// COSEKey encodes pub as a COSE_Key (deterministic CBOR) holding the
// required parameters plus kid (2) = KeyThumbprint(pub) and alg (3)
// (EdDSA, ES256, ES384, or PS256 for RSA). This is the form published at
// /.well-known/scitt-keys (as elements of a COSE_KeySet).
func COSEKey(pub crypto.PublicKey) ([]byte, error) {
	m, alg, err := coseKeyParams(pub)
	if err != nil {
		return nil, err
	}
	tp, err := KeyThumbprint(pub)
	if err != nil {
		return nil, err
	}
	m[keyKid] = tp
	m[keyAlg] = int64(alg)
	b, err := encMode.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return b, nil
}

// ParseCOSEKeyKid is ParseCOSEKey that also returns the key's kid (2), nil when it has none.
// Evident's own keys carry kid = KeyThumbprint (COSEKey); a reader of its bundles checks that.
func ParseCOSEKeyKid(b []byte) (crypto.PublicKey, []byte, error) {
	pub, err := ParseCOSEKey(b)
	if err != nil {
		return nil, nil, err
	}
	var m map[any]any
	if err := strictDec.Unmarshal(b, &m); err != nil {
		return nil, nil, fmt.Errorf("%w: COSE_Key: %v", ErrMalformed, err)
	}
	switch kid := m[int64(keyKid)].(type) {
	case nil:
		return pub, nil, nil
	case []byte:
		return pub, kid, nil
	default:
		return nil, nil, fmt.Errorf("%w: COSE_Key kid (2) must be a bstr", ErrMalformed)
	}
}

// ParseCOSEKey decodes a public COSE_Key: OKP Ed25519, EC2 P-256 or P-384
// (uncompressed, y as bstr), or RSA (at least 2048 bits). Keys carrying
// private parameters are refused with ErrMalformed. If alg (3) is present
// it must fit the key. kid (2), when present, is not checked.
func ParseCOSEKey(b []byte) (crypto.PublicKey, error) {
	if len(b) == 0 || len(b) > 8<<10 {
		return nil, fmt.Errorf("%w: COSE_Key of %d bytes", ErrMalformed, len(b))
	}
	var m map[any]any
	if err := strictDec.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: COSE_Key: %v", ErrMalformed, err)
	}
	getInt := func(l int64) (int64, bool, error) {
		v, ok := m[l]
		if !ok {
			return 0, false, nil
		}
		n, ok := v.(int64)
		if !ok {
			return 0, true, fmt.Errorf("%w: COSE_Key label %d must be an integer", ErrMalformed, l)
		}
		return n, true, nil
	}
	getBytes := func(l int64) ([]byte, error) {
		v, ok := m[l]
		if !ok {
			return nil, fmt.Errorf("%w: COSE_Key label %d missing", ErrMalformed, l)
		}
		bs, ok := v.([]byte)
		if !ok {
			return nil, fmt.Errorf("%w: COSE_Key label %d must be a bstr", ErrMalformed, l)
		}
		return bs, nil
	}
	kty, ok, err := getInt(keyKty)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: COSE_Key without kty", ErrMalformed)
	}
	var pub crypto.PublicKey
	var wantAlg []cose.Algorithm
	switch kty {
	case ktyOKP, ktyEC2:
		if _, ok := m[keyD]; ok {
			return nil, fmt.Errorf("%w: COSE_Key holds a private key", ErrMalformed)
		}
		crv, ok, err := getInt(keyCrv)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: COSE_Key without crv", ErrMalformed)
		}
		x, err := getBytes(keyX)
		if err != nil {
			return nil, err
		}
		if kty == ktyOKP {
			if crv != crvEd25519 {
				return nil, fmt.Errorf("%w: OKP curve %d", ErrUnsupportedAlg, crv)
			}
			if len(x) != ed25519.PublicKeySize {
				return nil, fmt.Errorf("%w: Ed25519 x of %d bytes", ErrMalformed, len(x))
			}
			pub = ed25519.PublicKey(append([]byte(nil), x...))
			wantAlg = []cose.Algorithm{cose.AlgorithmEdDSA}
			break
		}
		var curve elliptic.Curve
		switch crv {
		case crvP256:
			curve, wantAlg = elliptic.P256(), []cose.Algorithm{cose.AlgorithmES256}
		case crvP384:
			curve, wantAlg = elliptic.P384(), []cose.Algorithm{cose.AlgorithmES384}
		default:
			return nil, fmt.Errorf("%w: EC2 curve %d", ErrUnsupportedAlg, crv)
		}
		y, err := getBytes(keyY)
		if err != nil {
			return nil, err
		}
		size := (curve.Params().BitSize + 7) / 8
		if len(x) != size || len(y) != size {
			return nil, fmt.Errorf("%w: EC2 coordinates must be %d bytes", ErrMalformed, size)
		}
		pt := append(append([]byte{4}, x...), y...)
		k, err := ecdsa.ParseUncompressedPublicKey(curve, pt)
		if err != nil {
			return nil, fmt.Errorf("%w: EC2 key: %v", ErrMalformed, err)
		}
		pub = k
	case ktyRSA:
		for l := int64(-3); l >= -12; l-- {
			if _, ok := m[l]; ok {
				return nil, fmt.Errorf("%w: COSE_Key holds a private key", ErrMalformed)
			}
		}
		n, err := getBytes(keyCrv)
		if err != nil {
			return nil, err
		}
		e, err := getBytes(keyX)
		if err != nil {
			return nil, err
		}
		if len(n) == 0 || n[0] == 0 || len(e) == 0 || e[0] == 0 || len(e) > 4 {
			return nil, fmt.Errorf("%w: RSA n/e encoding", ErrMalformed)
		}
		N := new(big.Int).SetBytes(n)
		E := new(big.Int).SetBytes(e).Int64()
		if N.BitLen() < 2048 || N.BitLen() > 16384 || E < 3 || E&1 == 0 {
			return nil, fmt.Errorf("%w: RSA key parameters", ErrMalformed)
		}
		pub = &rsa.PublicKey{N: N, E: int(E)}
		wantAlg = []cose.Algorithm{cose.AlgorithmPS256}
	default:
		return nil, fmt.Errorf("%w: COSE_Key kty %d", ErrUnsupportedAlg, kty)
	}
	if v, ok := m[keyAlg]; ok {
		a, ok := v.(int64)
		if !ok || cose.Algorithm(a) != wantAlg[0] {
			return nil, fmt.Errorf("%w: COSE_Key alg %v does not fit the key", ErrMalformed, v)
		}
	}
	return pub, nil
}

// newVerifier returns a go-cose verifier for alg and pub, refusing keys
// that do not fit alg (an ES256 message needs a P-256 key, and so on).
func newVerifier(alg cose.Algorithm, pub crypto.PublicKey) (cose.Verifier, error) {
	if !verifyAlgs[alg] {
		return nil, fmt.Errorf("%w: %v", ErrUnsupportedAlg, alg)
	}
	fits := false
	switch k := pub.(type) {
	case ed25519.PublicKey:
		fits = alg == cose.AlgorithmEdDSA && len(k) == ed25519.PublicKeySize
	case *ecdsa.PublicKey:
		fits = k != nil && (alg == cose.AlgorithmES256 && k.Curve == elliptic.P256() ||
			alg == cose.AlgorithmES384 && k.Curve == elliptic.P384())
	case *rsa.PublicKey:
		fits = k != nil && k.N != nil && alg == cose.AlgorithmPS256
	}
	if !fits {
		return nil, fmt.Errorf("%w: %T key does not fit %v", ErrBadSignature, pub, alg)
	}
	v, err := cose.NewVerifier(alg, pub)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	return v, nil
}

// verifySign1 verifies msg's signature over payload with pub.
func verifySign1(msg *cose.Sign1Message, alg cose.Algorithm, payload []byte, pub crypto.PublicKey) error {
	v, err := newVerifier(alg, pub)
	if err != nil {
		return err
	}
	m := *msg
	m.Payload = payload
	if err := m.Verify(nil, v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	return nil
}
