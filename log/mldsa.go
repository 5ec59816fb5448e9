package log

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"filippo.io/mldsa"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// The post-quantum checkpoint signer.
//
// A log configured with it signs every checkpoint twice: Ed25519 (the C2SP signed-note key
// of KeyFile, which stays the log's identity and what witnesses check) and ML-DSA-44
// (FIPS 204) as an additional signer. C2SP defines one ML-DSA-44 signed-note signature
// type, cosignature/v1 key type 0x06 (https://c2sp.org/tlog-cosignature): the signature
// is over the binary "subtree/v1" message naming the signer, a timestamp, the origin, the
// range [0, size) and the root. transparency-dev/formats implements it
// (note.NewSignerForCosignatureV1), and Evident uses it unchanged for the log's own
// post-quantum signature, with the origin as the key name. The signed-note key hash keeps
// the two signatures apart: readers that know only the Ed25519 key see the ML-DSA line as
// an unverified signature and ignore it (C2SP signed-note).
const (
	// MLDSAKeyFile holds the ML-DSA-44 private key (mode 0600) in the key directory.
	MLDSAKeyFile = "log-mldsa.key"
	// MLDSAVerifierKeyFile holds its verifier key.
	MLDSAVerifierKeyFile = "log-mldsa.vkey"

	// algMLDSA44 is the signed-note key type of ML-DSA-44 cosignature/v1 keys.
	algMLDSA44 = 0x06
)

// GenerateMLDSAKey makes an ML-DSA-44 checkpoint key pair named origin.
func GenerateMLDSAKey(origin string) (skey, vkey string, err error) {
	if err := validOrigin(origin); err != nil {
		return "", "", err
	}
	skey, vkey, err = fnote.GenerateMLDSAKey(origin)
	if err != nil {
		return "", "", fmt.Errorf("log: generating ML-DSA-44 key: %w", err)
	}
	return skey, vkey, nil
}

// NewMLDSASigner parses an ML-DSA-44 private key made by GenerateMLDSAKey and returns its
// signer (which knows its verifier key, see Log.PostQuantumVerifierKey) and verifier key.
func NewMLDSASigner(skey string) (note.Signer, string, error) {
	skey = strings.TrimSpace(skey)
	s, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		return nil, "", fmt.Errorf("log: parsing ML-DSA-44 private key: %w", err)
	}
	st, err := fnote.NewMLDSASigner(skey) // refuses keys of any other type
	if err != nil {
		return nil, "", fmt.Errorf("log: not an ML-DSA-44 private key: %w", err)
	}
	vkey, err := mldsaVerifierKey(skey)
	if err != nil {
		return nil, "", err
	}
	if st.KeyHash() != s.KeyHash() {
		return nil, "", fmt.Errorf("%w: ML-DSA-44 key hash", ErrKeyMismatch)
	}
	return keyedSigner{Signer: s, vkey: vkey}, vkey, nil
}

// mldsaVerifierKey derives "<name>+<hash>+<base64(0x06 || public key)>" from the private
// key (its 32-byte seed), checking the key hash it names.
func mldsaVerifierKey(skey string) (string, error) {
	rest, _ := strings.CutPrefix(skey, "PRIVATE+KEY+")
	name, rest, ok1 := strings.Cut(rest, "+")
	hash, key64, ok2 := strings.Cut(rest, "+")
	key, err := base64.StdEncoding.DecodeString(key64)
	if !ok1 || !ok2 || err != nil || len(key) < 2 || key[0] != algMLDSA44 {
		return "", errors.New("log: malformed ML-DSA-44 private key")
	}
	pub, err := mldsaPublicKey(key[1:])
	if err != nil {
		return "", err
	}
	vkey := name + "+" + hash + "+" + base64.StdEncoding.EncodeToString(append([]byte{algMLDSA44}, pub...))
	v, err := fnote.NewVerifierForCosignatureV1(vkey)
	if err != nil {
		return "", fmt.Errorf("log: derived ML-DSA-44 verifier key: %w", err)
	}
	if fmt.Sprintf("%08x", v.KeyHash()) != hash {
		return "", fmt.Errorf("%w: ML-DSA-44 private key names key hash %s, its public key hashes to %08x", ErrKeyMismatch, hash, v.KeyHash())
	}
	return vkey, nil
}

// LoadOrCreateMLDSAKey returns the log's ML-DSA-44 checkpoint signer and verifier key,
// stored in dir as MLDSAKeyFile and MLDSAVerifierKeyFile, generating them on first use the
// way LoadOrCreateKey does for the Ed25519 key (same refusals: another origin, a vkey
// without its private key, a vkey that is not the private key's).
func LoadOrCreateMLDSAKey(dir, origin string) (note.Signer, string, error) {
	return loadOrCreateNoteKey(dir, origin, noteKeyFiles{key: MLDSAKeyFile, vkey: MLDSAVerifierKeyFile, identity: "post-quantum key",
		generate: func(origin string) (string, error) { skey, _, err := GenerateMLDSAKey(origin); return skey, err },
		open:     NewMLDSASigner})
}

// postQuantumVKey returns the verifier key of the first ML-DSA-44 signer among signers
// (one made by NewMLDSASigner or LoadOrCreateMLDSAKey), or "".
func postQuantumVKey(signers []note.Signer) string {
	for _, s := range signers {
		ks, ok := s.(interface{ VerifierKey() string })
		if !ok {
			continue
		}
		_, rest, _ := strings.Cut(ks.VerifierKey(), "+")
		_, key64, _ := strings.Cut(rest, "+")
		if k, err := base64.StdEncoding.DecodeString(key64); err == nil && len(k) > 1 && k[0] == algMLDSA44 {
			return ks.VerifierKey()
		}
	}
	return ""
}

// PostQuantumVerifierKey returns the verifier key of the log's ML-DSA-44 checkpoint signer
// (an additional signer made by LoadOrCreateMLDSAKey or NewMLDSASigner), or "" when the
// log signs with Ed25519 only.
func (l *Log) PostQuantumVerifierKey() string { return l.pqVKey }

// mldsaPublicKey derives the ML-DSA-44 public key of a seed.
func mldsaPublicKey(seed []byte) ([]byte, error) {
	k, err := mldsa.NewPrivateKey(mldsa.MLDSA44(), seed)
	if err != nil {
		return nil, fmt.Errorf("log: malformed ML-DSA-44 private key: %w", err)
	}
	return k.PublicKey().Bytes(), nil
}
