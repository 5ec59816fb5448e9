package regpolicy

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"testing"
	"time"
)

type equaler interface{ Equal(crypto.PublicKey) bool }

func testKeys(t testing.TB) map[string]crypto.Signer {
	t.Helper()
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	r, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]crypto.Signer{"ed25519": ed, "p256": p256, "p384": p384, "p521": p521, "rsa2048": r}
}

// TestDERAgreesWithX509 checks the net-free reader against crypto/x509 on every key type a
// policy may pin, as SubjectPublicKeyInfo and as the key of a certificate.
func TestDERAgreesWithX509(t *testing.T) {
	for name, k := range testKeys(t) {
		t.Run(name, func(t *testing.T) {
			spki, err := x509.MarshalPKIXPublicKey(k.Public())
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseSPKI(spki)
			if err != nil {
				t.Fatalf("parseSPKI: %v", err)
			}
			if !got.(equaler).Equal(k.Public()) {
				t.Fatalf("parseSPKI gave another key")
			}
			tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: name},
				NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<32, 0)}
			der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
			if err != nil {
				t.Fatal(err)
			}
			ck, err := certificateKey(der)
			if err != nil {
				t.Fatalf("certificateKey: %v", err)
			}
			if !ck.(equaler).Equal(k.Public()) {
				t.Fatalf("certificateKey gave another key")
			}
			if _, err := parseSPKI(append(spki, 0)); !errors.Is(err, errDER) {
				t.Errorf("trailing byte: err = %v, want errDER", err)
			}
			if _, err := parseSPKI(spki[:len(spki)-1]); err == nil {
				t.Errorf("truncated key accepted")
			}
			if _, err := certificateKey(der[:len(der)/2]); err == nil {
				t.Errorf("truncated certificate accepted")
			}
		})
	}
}

func TestDERRejects(t *testing.T) {
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	smallDER, _ := x509.MarshalPKIXPublicKey(small.Public())
	p224, _ := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	p224DER, _ := x509.MarshalPKIXPublicKey(p224.Public())
	for _, tc := range []struct {
		name string
		der  []byte
	}{
		{"empty", nil},
		{"not a sequence", []byte{0x02, 0x01, 0x01}},
		{"rsa 1024", smallDER},
		{"curve p224", p224DER},
		{"x25519", []byte{0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x03, 0x21, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32}},
		{"ed25519 short", []byte{0x30, 0x0b, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x02, 0x00, 0x01}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if k, err := parseSPKI(tc.der); err == nil {
				t.Fatalf("accepted %T", k)
			}
		})
	}
}

// FuzzDER: whatever the reader accepts as a key, crypto/x509 reads as the same key.
func FuzzDER(f *testing.F) {
	for _, k := range testKeys(f) {
		spki, _ := x509.MarshalPKIXPublicKey(k.Public())
		f.Add(spki)
	}
	f.Fuzz(func(t *testing.T, der []byte) {
		if k, err := parseSPKI(der); err == nil {
			again, err := x509.MarshalPKIXPublicKey(k)
			if err != nil {
				t.Fatalf("accepted a key x509 cannot encode: %v", err)
			}
			back, err := x509.ParsePKIXPublicKey(again)
			if err != nil || !back.(equaler).Equal(k) {
				t.Fatalf("round trip through x509 changed the key: %v", err)
			}
		}
		_, _ = certificateKey(der)
	})
}
