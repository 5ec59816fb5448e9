package tlogpolicy

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"filippo.io/mldsa"
	"golang.org/x/mod/sumdb/note"
)

// This file verifies cosignature/v1 (C2SP tlog-cosignature) itself rather than through
// transparency-dev/formats/note, whose package also carries an ECDSA verifier and so pulls
// crypto/x509 and the net package into the offline verifier. The test
// TestCosignatureVerifierMatchesFormats checks it against formats' signers.

// Signed-note key types of cosigners.
const (
	algEd25519       = 0x01 // a plain Ed25519 note key, read as a cosignature/v1 key (as formats does)
	algCosigEd25519  = 0x04
	algCosigMLDSA44  = 0x06
	timestampSize    = 8
	maxNameOrOrigin  = 255
	mldsaSigSize     = mldsa.MLDSA44SignatureSize
	ed25519SigLength = timestampSize + ed25519.SignatureSize
)

var errKey = errors.New("not a cosignature/v1 verifier key")

// cosigVerifier is a note.Verifier for cosignature/v1 signatures.
type cosigVerifier struct {
	name    string
	keyHash uint32
	verify  func(msg, sig []byte) bool
}

func (v *cosigVerifier) Name() string                { return v.name }
func (v *cosigVerifier) KeyHash() uint32             { return v.keyHash }
func (v *cosigVerifier) Verify(msg, sig []byte) bool { return v.verify(msg, sig) }

// NewCosignatureVerifier parses a cosigner's vkey (type 0x04 Ed25519, 0x01 Ed25519 read
// as 0x04, or 0x06 ML-DSA-44).
func NewCosignatureVerifier(vkey string) (note.Verifier, error) {
	name, rest, ok1 := strings.Cut(vkey, "+")
	hash16, key64, ok2 := strings.Cut(rest, "+")
	key, err := base64.StdEncoding.DecodeString(key64)
	if !ok1 || !ok2 || len(hash16) != 8 || err != nil || len(key) < 2 || !validName(name) {
		return nil, errKey
	}
	if _, err := strconv.ParseUint(hash16, 16, 32); err != nil {
		return nil, errKey
	}
	switch key[0] {
	case algEd25519, algCosigEd25519:
		if len(key) != 1+ed25519.PublicKeySize {
			return nil, errKey
		}
		pub := ed25519.PublicKey(append([]byte(nil), key[1:]...))
		return &cosigVerifier{name: name, keyHash: keyHash(name, append([]byte{algCosigEd25519}, pub...)), verify: func(msg, sig []byte) bool {
			if len(sig) != ed25519SigLength {
				return false
			}
			t := binary.BigEndian.Uint64(sig)
			m := fmt.Appendf(nil, "cosignature/v1\ntime %d\n%s", t, msg)
			return ed25519.Verify(pub, m, sig[timestampSize:])
		}}, nil
	case algCosigMLDSA44:
		pub, err := mldsa.NewPublicKey(mldsa.MLDSA44(), key[1:])
		if err != nil {
			return nil, errKey
		}
		return &cosigVerifier{name: name, keyHash: keyHash(name, key), verify: func(msg, sig []byte) bool {
			if len(sig) != timestampSize+mldsaSigSize {
				return false
			}
			origin, size, root, ok := checkpointBody(msg)
			if !ok || len(name) > maxNameOrOrigin || len(origin) > maxNameOrOrigin {
				return false
			}
			// subtree/v1 message (tlog-cosignature): label, cosigner name, timestamp,
			// origin, start 0, end = size, root.
			m := append([]byte("subtree/v1\n\x00"), byte(len(name)))
			m = append(m, name...)
			m = append(m, sig[:timestampSize]...)
			m = append(m, byte(len(origin)))
			m = append(m, origin...)
			m = binary.BigEndian.AppendUint64(m, 0)
			m = binary.BigEndian.AppendUint64(m, size)
			m = append(m, root...)
			return mldsa.Verify(pub, m, sig[timestampSize:], nil) == nil
		}}, nil
	default:
		return nil, errKey
	}
}

// checkpointBody reads the first three lines of a checkpoint.
func checkpointBody(msg []byte) (origin string, size uint64, root []byte, ok bool) {
	lines := strings.SplitN(string(msg), "\n", 4)
	if len(lines) < 4 || lines[0] == "" {
		return "", 0, nil, false
	}
	size, err := strconv.ParseUint(lines[1], 10, 64)
	if err != nil {
		return "", 0, nil, false
	}
	root, err = base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != 32 {
		return "", 0, nil, false
	}
	return lines[0], size, root, true
}

func keyHash(name string, key []byte) uint32 {
	h := sha256.Sum256(append([]byte(name+"\n"), key...))
	return binary.BigEndian.Uint32(h[:4])
}

func validName(name string) bool {
	return name != "" && utf8.ValidString(name) && strings.IndexFunc(name, unicode.IsSpace) < 0 && !strings.Contains(name, "+")
}

// CosignatureTime returns the timestamp of a cosignature/v1 signature line's signature
// (the 8 bytes after the 4-byte key hash).
func CosignatureTime(s note.Signature) (time.Time, error) {
	b, err := base64.StdEncoding.DecodeString(s.Base64)
	if err != nil || len(b) < 4+timestampSize+ed25519.SignatureSize {
		return time.Time{}, errors.New("not a cosignature/v1 signature")
	}
	return time.Unix(int64(binary.BigEndian.Uint64(b[4:])), 0), nil
}
