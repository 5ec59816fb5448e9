// Package regpolicytest makes external SCITT issuers for tests: a key pair of any algorithm a
// registration policy can allow, statements signed with go-cose directly (not with
// Evident's own signer, so tests exercise what a foreign client sends), the key's PEM for a
// policy and, for x5chain, a self-signed certificate.
package regpolicytest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/regpolicy"
	"github.com/veraison/go-cose"
)

// Issuer is an external statement issuer.
type Issuer struct {
	ISS  string
	Alg  cose.Algorithm
	Key  crypto.Signer
	Cert []byte // DER self-signed certificate of Key, for x5chain
}

// NewIssuer generates a key for alg (EdDSA, ES256, ES384 or PS256).
func NewIssuer(t testing.TB, iss string, alg cose.Algorithm) *Issuer {
	t.Helper()
	var key crypto.Signer
	var err error
	switch alg {
	case cose.AlgorithmEdDSA:
		_, key, err = ed25519.GenerateKey(rand.Reader)
	case cose.AlgorithmES256:
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case cose.AlgorithmES384:
		key, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case cose.AlgorithmPS256:
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		t.Fatalf("policytest: algorithm %v", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: iss},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	cert, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return &Issuer{ISS: iss, Alg: alg, Key: key, Cert: cert}
}

// PEM returns the public key as a PEM "PUBLIC KEY" block.
func (is *Issuer) PEM(t testing.TB) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(is.Key.Public())
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// KID returns the RFC 9679 thumbprint of the issuer's key.
func (is *Issuer) KID(t testing.TB) []byte {
	t.Helper()
	kid, err := receipts.KeyThumbprint(is.Key.Public())
	if err != nil {
		t.Fatal(err)
	}
	return kid
}

// Options shape one statement.
type Options struct {
	Subject     string
	ContentType string
	IssuedAt    int64
	X5Chain     bool          // name the key by x5chain (33) instead of kid
	NoKID       bool          // name no key at all
	Extra       map[any]any   // extra protected header parameters
	Claims      map[int64]any // extra CWT claims
	KID         []byte        // kid to write instead of the thumbprint
}

// Sign signs payload as a tagged COSE_Sign1 with protected {1 alg, 3 ct, 4 kid | 33
// x5chain, 15 {1 iss, 2 sub, ...}}.
func (is *Issuer) Sign(t testing.TB, payload []byte, o Options) []byte {
	t.Helper()
	signer, err := cose.NewSigner(is.Alg, is.Key)
	if err != nil {
		t.Fatal(err)
	}
	claims := map[any]any{int64(1): is.ISS}
	if o.Subject != "" {
		claims[int64(2)] = o.Subject
	}
	if o.IssuedAt != 0 {
		claims[int64(6)] = o.IssuedAt
	}
	for k, v := range o.Claims {
		claims[k] = v
	}
	h := cose.ProtectedHeader{cose.HeaderLabelAlgorithm: is.Alg, cose.HeaderLabelCWTClaims: claims}
	if o.ContentType != "" {
		h[cose.HeaderLabelContentType] = o.ContentType
	}
	switch {
	case o.X5Chain:
		h[cose.HeaderLabelX5Chain] = []any{is.Cert}
	case o.NoKID:
	case o.KID != nil:
		h[cose.HeaderLabelKeyID] = o.KID
	default:
		h[cose.HeaderLabelKeyID] = is.KID(t)
	}
	for k, v := range o.Extra {
		h[k] = v
	}
	msg := cose.Sign1Message{Headers: cose.Headers{Protected: h}, Payload: payload}
	if err := msg.Sign(rand.Reader, nil, signer); err != nil {
		t.Fatal(err)
	}
	raw, err := msg.MarshalCBOR()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// WritePolicy writes p, with each of issuers added under its key, as dir/policy.json (what
// evidentd's --registration-policy reads) and returns its path.
func WritePolicy(t testing.TB, dir string, p regpolicy.Policy, issuers ...*Issuer) string {
	t.Helper()
	if p.Format == "" {
		p.Format = regpolicy.Format
	}
	for _, is := range issuers {
		p.Issuers = append(p.Issuers, regpolicy.Issuer{ISS: is.ISS, Keys: []regpolicy.Key{{PEM: is.PEM(t)}}})
	}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
