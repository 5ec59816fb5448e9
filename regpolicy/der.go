package regpolicy

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// The policy reads public keys (SubjectPublicKeyInfo, RFC 5280 section 4.1.2.7) and the
// leaf certificate of an x5chain with this small DER reader rather than crypto/x509,
// which links the net package: the offline verifier re-checks registrations with this
// package and must carry no network code. Only the key is taken from a certificate (the
// pin is the trust decision; nothing else in it is interpreted).

var (
	oidEd25519     = asn1.ObjectIdentifier{1, 3, 101, 112}
	oidECPublicKey = asn1.ObjectIdentifier{1, 2, 840, 10045, 2, 1}
	oidRSA         = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 1}
	oidRSAPSS      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 10}
	oidP256        = asn1.ObjectIdentifier{1, 2, 840, 10045, 3, 1, 7}
	oidP384        = asn1.ObjectIdentifier{1, 3, 132, 0, 34}
	oidP521        = asn1.ObjectIdentifier{1, 3, 132, 0, 35}
)

// errDER reports DER that is not what the reader expects.
var errDER = errors.New("malformed DER")

// parseSPKI parses a DER SubjectPublicKeyInfo holding an Ed25519, ECDSA (P-256, P-384,
// P-521) or RSA (rsaEncryption or RSASSA-PSS) key. Trailing bytes are refused.
func parseSPKI(der []byte) (crypto.PublicKey, error) {
	in := cryptobyte.String(der)
	var spki cryptobyte.String
	if !in.ReadASN1(&spki, cbasn1.SEQUENCE) || !in.Empty() {
		return nil, fmt.Errorf("%w: SubjectPublicKeyInfo is not one SEQUENCE", errDER)
	}
	return parseSPKIBody(spki)
}

func parseSPKIBody(spki cryptobyte.String) (crypto.PublicKey, error) {
	var algo cryptobyte.String
	var oid asn1.ObjectIdentifier
	var bits asn1.BitString
	if !spki.ReadASN1(&algo, cbasn1.SEQUENCE) || !algo.ReadASN1ObjectIdentifier(&oid) ||
		!spki.ReadASN1BitString(&bits) || !spki.Empty() {
		return nil, fmt.Errorf("%w: SubjectPublicKeyInfo", errDER)
	}
	if bits.BitLength%8 != 0 {
		return nil, fmt.Errorf("%w: public key bit string is not whole bytes", errDER)
	}
	key := bits.RightAlign()
	switch {
	case oid.Equal(oidEd25519):
		if !algo.Empty() {
			return nil, fmt.Errorf("%w: Ed25519 key with algorithm parameters", errDER)
		}
		if len(key) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("%w: Ed25519 key of %d bytes", errDER, len(key))
		}
		return ed25519.PublicKey(key), nil
	case oid.Equal(oidECPublicKey):
		var curveOID asn1.ObjectIdentifier
		if !algo.ReadASN1ObjectIdentifier(&curveOID) || !algo.Empty() {
			return nil, fmt.Errorf("%w: EC key without a named curve", errDER)
		}
		var curve elliptic.Curve
		switch {
		case curveOID.Equal(oidP256):
			curve = elliptic.P256()
		case curveOID.Equal(oidP384):
			curve = elliptic.P384()
		case curveOID.Equal(oidP521):
			curve = elliptic.P521()
		default:
			return nil, fmt.Errorf("unsupported elliptic curve %v", curveOID)
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, key)
		if err != nil {
			return nil, fmt.Errorf("%w: EC point: %v", errDER, err)
		}
		return pub, nil
	case oid.Equal(oidRSA), oid.Equal(oidRSAPSS):
		// rsaEncryption carries NULL parameters; RSASSA-PSS may carry its parameters,
		// which do not change the key.
		in := cryptobyte.String(key)
		var seq cryptobyte.String
		n, e := new(big.Int), new(big.Int)
		if !in.ReadASN1(&seq, cbasn1.SEQUENCE) || !in.Empty() || !seq.ReadASN1Integer(n) || !seq.ReadASN1Integer(e) || !seq.Empty() {
			return nil, fmt.Errorf("%w: RSAPublicKey", errDER)
		}
		if n.Sign() <= 0 || n.BitLen() < 2048 || n.BitLen() > 8192 {
			return nil, fmt.Errorf("RSA modulus of %d bits (want 2048..8192)", n.BitLen())
		}
		if !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 || e.Bit(0) == 0 {
			return nil, errors.New("RSA public exponent out of range")
		}
		return &rsa.PublicKey{N: n, E: int(e.Int64())}, nil
	}
	return nil, fmt.Errorf("unsupported public key algorithm %v", oid)
}

// certificateKey returns the subject public key of a DER X.509 certificate: Certificate
// → tbsCertificate → [0] version, serialNumber, signature, issuer, validity, subject,
// subjectPublicKeyInfo (RFC 5280 section 4.1).
func certificateKey(der []byte) (crypto.PublicKey, error) {
	in := cryptobyte.String(der)
	var cert, tbs cryptobyte.String
	if !in.ReadASN1(&cert, cbasn1.SEQUENCE) || !in.Empty() || !cert.ReadASN1(&tbs, cbasn1.SEQUENCE) {
		return nil, fmt.Errorf("%w: not a certificate", errDER)
	}
	if !tbs.SkipOptionalASN1(cbasn1.Tag(0).Constructed().ContextSpecific()) ||
		!tbs.SkipASN1(cbasn1.INTEGER) || // serialNumber
		!tbs.SkipASN1(cbasn1.SEQUENCE) || // signature
		!tbs.SkipASN1(cbasn1.SEQUENCE) || // issuer
		!tbs.SkipASN1(cbasn1.SEQUENCE) || // validity
		!tbs.SkipASN1(cbasn1.SEQUENCE) { // subject
		return nil, fmt.Errorf("%w: tbsCertificate", errDER)
	}
	var spki cryptobyte.String
	if !tbs.ReadASN1(&spki, cbasn1.SEQUENCE) {
		return nil, fmt.Errorf("%w: certificate subjectPublicKeyInfo", errDER)
	}
	return parseSPKIBody(spki)
}
