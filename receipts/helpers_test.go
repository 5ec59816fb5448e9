package receipts

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"testing"

	"github.com/veraison/go-cose"
)

// randReader is crypto/rand for key generation in tests.
type randReader struct{}

func (randReader) Read(p []byte) (int, error) { return rand.Read(p) }

func newEd25519Signer(t testing.TB) *Signer {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSigner(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newP256Signer(t testing.TB) *Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSigner(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newVerifyOnlySigner builds a Signer for an algorithm NewSigner refuses
// (ES384, PS256) so that verification of those algorithms can be tested.
func newVerifyOnlySigner(t testing.TB, alg cose.Algorithm) *Signer {
	t.Helper()
	var key crypto.Signer
	var err error
	switch alg {
	case cose.AlgorithmES384:
		key, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case cose.AlgorithmPS256:
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		t.Fatalf("alg %v", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	kid, err := KeyThumbprint(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := cose.NewSigner(alg, key)
	if err != nil {
		t.Fatal(err)
	}
	return &Signer{key: key, alg: alg, kid: kid, cose: cs}
}

var testClaims = Claims{Issuer: "https://issuer.example", Subject: "urn:example:artifact", IssuedAt: 1767225600}
