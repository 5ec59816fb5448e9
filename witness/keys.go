package witness

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"filippo.io/mldsa"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/internal/durable"
)

// Key algorithms a witness can cosign with.
const (
	AlgEd25519 = "ed25519"   // cosignature/v1 Ed25519 (signed-note key type 0x04)
	AlgMLDSA44 = "ml-dsa-44" // cosignature/v1 ML-DSA-44 (key type 0x06, subtree/v1 message)
)

// GenerateKey makes a new cosigning key pair for a witness called name. vkey is the
// cosignature/v1 verifier key to put in tlog-policy files.
func GenerateKey(name, alg string) (skey, vkey string, err error) {
	switch alg {
	case AlgEd25519:
		s, v, err := note.GenerateKey(rand.Reader, name)
		if err != nil {
			return "", "", fmt.Errorf("witness: generating key: %w", err)
		}
		cv, err := fnote.VKeyToCosignatureV1(v)
		if err != nil {
			return "", "", fmt.Errorf("witness: generating key: %w", err)
		}
		return s, cv, nil
	case AlgMLDSA44:
		s, v, err := fnote.GenerateMLDSAKey(name)
		if err != nil {
			return "", "", fmt.Errorf("witness: generating key: %w", err)
		}
		return s, v, nil
	default:
		return "", "", fmt.Errorf("witness: unknown key algorithm %q (want %s or %s)", alg, AlgEd25519, AlgMLDSA44)
	}
}

// NewSigner parses a private key made by GenerateKey and returns its cosignature/v1
// signer and verifier key.
func NewSigner(skey string) (note.Signer, string, error) {
	s, err := fnote.NewSignerForCosignatureV1(strings.TrimSpace(skey))
	if err != nil {
		return nil, "", fmt.Errorf("witness: private key: %w", err)
	}
	vkey, err := VerifierKey(skey)
	if err != nil {
		return nil, "", err
	}
	return s, vkey, nil
}

// LoadOrCreateKey reads the private key in path, creating it (mode 0600, with path+".pub"
// holding the verifier key) if it does not exist. It returns the signer and verifier key.
func LoadOrCreateKey(path, name, alg string) (note.Signer, string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		skey, vkey, err := GenerateKey(name, alg)
		if err != nil {
			return nil, "", err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, "", fmt.Errorf("witness: key directory: %w", err)
		}
		if err := durable.CreateFile(path, []byte(skey+"\n"), 0o600); err != nil {
			return nil, "", fmt.Errorf("witness: creating key: %w", err)
		}
		if err := durable.WriteFile(path+".pub", []byte(vkey+"\n"), 0o644); err != nil {
			return nil, "", fmt.Errorf("witness: writing verifier key: %w", err)
		}
		b = []byte(skey)
	} else if err != nil {
		return nil, "", fmt.Errorf("witness: reading key: %w", err)
	}
	s, vkey, err := NewSigner(string(b))
	if err != nil {
		return nil, "", err
	}
	if name != "" && s.Name() != name {
		return nil, "", fmt.Errorf("witness: key %s is for witness %q, not %q", path, s.Name(), name)
	}
	return s, vkey, nil
}

// VerifierKey derives the cosignature/v1 verifier key of a private key made by GenerateKey
// (an Ed25519 signed-note key, type 0x01 or 0x04, or an ML-DSA-44 key, type 0x06).
func VerifierKey(skey string) (string, error) {
	skey = strings.TrimSpace(skey)
	rest, ok := strings.CutPrefix(skey, "PRIVATE+KEY+")
	name, rest, ok1 := strings.Cut(rest, "+")
	_, key64, ok2 := strings.Cut(rest, "+")
	key, err := base64.StdEncoding.DecodeString(key64)
	if !ok || !ok1 || !ok2 || err != nil || len(key) < 2 {
		return "", errors.New("witness: malformed private key")
	}
	var pub []byte
	switch key[0] {
	case 0x01, 0x04:
		if len(key) != 1+ed25519.SeedSize {
			return "", errors.New("witness: malformed Ed25519 private key")
		}
		pub = append([]byte{0x04}, ed25519.NewKeyFromSeed(key[1:]).Public().(ed25519.PublicKey)...)
	case 0x06:
		k, err := mldsa.NewPrivateKey(mldsa.MLDSA44(), key[1:])
		if err != nil {
			return "", fmt.Errorf("witness: malformed ML-DSA-44 private key: %w", err)
		}
		pub = append([]byte{0x06}, k.PublicKey().Bytes()...)
	default:
		return "", fmt.Errorf("witness: private key algorithm 0x%02x is not a cosigning algorithm", key[0])
	}
	h := sha256.Sum256(append([]byte(name+"\n"), pub...))
	vkey := fmt.Sprintf("%s+%08x+%s", name, binary.BigEndian.Uint32(h[:4]), base64.StdEncoding.EncodeToString(pub))
	if _, err := fnote.NewVerifierForCosignatureV1(vkey); err != nil {
		return "", fmt.Errorf("witness: derived verifier key: %w", err)
	}
	return vkey, nil
}
