// Package testkeys derives reproducible signing keys for scenarios, fixtures and published
// vectors: Ed25519 and ECDSA P-256 keys from a label, and one fixed RSA-3072 key (embedded
// PEM, generated for Evident's vectors). These keys are public knowledge: never use them for
// anything but test evidence.
package testkeys

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	_ "embed"
	"encoding/binary"
	"encoding/pem"
	"fmt"
)

//go:embed rsa3072-test.pem
var rsaPEM []byte

// Ed25519 returns the Ed25519 key of label.
func Ed25519(label string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("evident-testkey:ed25519:" + label))
	return ed25519.NewKeyFromSeed(seed[:])
}

// P256 returns the ECDSA P-256 key of label.
func P256(label string) *ecdsa.PrivateKey {
	for i := uint32(0); ; i++ {
		var ctr [4]byte
		binary.BigEndian.PutUint32(ctr[:], i)
		d := sha256.Sum256(append([]byte("evident-testkey:p256:"+label+":"), ctr[:]...))
		if k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d[:]); err == nil {
			return k
		}
	}
}

// RSA3072 returns the fixed RSA-3072 test key.
func RSA3072() *rsa.PrivateKey {
	b, _ := pem.Decode(rsaPEM)
	if b == nil {
		panic("testkeys: embedded RSA key is not PEM")
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		panic(fmt.Sprintf("testkeys: embedded RSA key: %v", err))
	}
	return k.(*rsa.PrivateKey)
}
