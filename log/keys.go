package log

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/internal/durable"
)

const (
	// KeyFile is the name of the file, inside the directory given to
	// LoadOrCreateKey, holding the private signed-note key (mode 0600).
	KeyFile = "log.key"
	// VerifierKeyFile is the name of the file, inside the directory given to
	// LoadOrCreateKey, holding the public verifier key.
	VerifierKeyFile = "log.vkey"

	// algEd25519 is the signed-note signature algorithm byte for Ed25519.
	algEd25519 = 1
)

// ErrKeyMismatch is returned (wrapped) when key material on disk does not
// match what the caller asked for: a different origin, or a log.vkey that is
// not the public half of log.key.
var ErrKeyMismatch = errors.New("log: key mismatch")

// GenerateKey generates a new Ed25519 signed-note key pair for the log with
// the given origin. skey has the form "PRIVATE+KEY+<origin>+<hash>+<base64>"
// and vkey "<origin>+<hash>+<base64>" (golang.org/x/mod/sumdb/note format, as
// used by C2SP signed-note and tlog-checkpoint).
func GenerateKey(origin string) (skey, vkey string, err error) {
	if err := validOrigin(origin); err != nil {
		return "", "", err
	}
	skey, vkey, err = note.GenerateKey(rand.Reader, origin)
	if err != nil {
		return "", "", fmt.Errorf("log: generating key for origin %q: %w", origin, err)
	}
	return skey, vkey, nil
}

// validOrigin applies the signed-note key name rules: non-empty UTF-8 without
// spaces or '+'.
func validOrigin(origin string) error {
	if origin == "" || !utf8.ValidString(origin) || strings.IndexFunc(origin, unicode.IsSpace) >= 0 || strings.Contains(origin, "+") {
		return fmt.Errorf("log: invalid origin %q: must be non-empty UTF-8 without spaces or '+'", origin)
	}
	return nil
}

// DeriveVerifierKey returns the verifier key ("<origin>+<hash>+<base64>") that
// corresponds to the Ed25519 signed-note private key skey.
func DeriveVerifierKey(skey string) (string, error) {
	const prefix = "PRIVATE+KEY+"
	rest, ok := strings.CutPrefix(skey, prefix)
	if !ok {
		return "", errors.New("log: malformed private key: missing PRIVATE+KEY+ prefix")
	}
	// Names cannot contain '+', but the base64 key can.
	name, rest, ok1 := strings.Cut(rest, "+")
	_, key64, ok2 := strings.Cut(rest, "+")
	if !ok1 || !ok2 || name == "" {
		return "", errors.New("log: malformed private key")
	}
	key, err := base64.StdEncoding.DecodeString(key64)
	if err != nil {
		return "", fmt.Errorf("log: malformed private key: %w", err)
	}
	if len(key) != 1+ed25519.SeedSize || key[0] != algEd25519 {
		return "", errors.New("log: private key is not an Ed25519 signed-note key")
	}
	pub := ed25519.NewKeyFromSeed(key[1:]).Public().(ed25519.PublicKey)
	vkey, err := note.NewEd25519VerifierKey(name, pub)
	if err != nil {
		return "", fmt.Errorf("log: deriving verifier key: %w", err)
	}
	return vkey, nil
}

// keyedSigner is a note.Signer that also knows its verifier key, so that Open
// can derive Options.VerifierKey from it.
type keyedSigner struct {
	note.Signer
	vkey string
}

// VerifierKey returns the verifier key matching the signer.
func (k keyedSigner) VerifierKey() string { return k.vkey }

// NewSigner parses an Ed25519 signed-note private key and returns a signer
// together with its verifier key. Signers returned here (and by
// LoadOrCreateKey) carry their verifier key, so Options.VerifierKey may be
// left empty when one of them is used as Options.Signer.
func NewSigner(skey string) (note.Signer, string, error) {
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, "", fmt.Errorf("log: parsing private key: %w", err)
	}
	vkey, err := DeriveVerifierKey(skey)
	if err != nil {
		return nil, "", err
	}
	return keyedSigner{Signer: s, vkey: vkey}, vkey, nil
}

// LoadOrCreateKey returns the log's checkpoint signer and verifier key, stored
// in dir as KeyFile (private, mode 0600) and VerifierKeyFile (public).
//
// On first start (neither file exists) a fresh Ed25519 key for origin is
// generated and written durably; afterwards the same key is reused. It refuses,
// with an error wrapping ErrKeyMismatch, a key whose origin differs from
// origin, and a log.vkey that does not belong to log.key. A log.vkey without
// log.key is also refused rather than silently replacing the log's identity.
// A missing log.vkey next to an existing log.key is recreated.
//
// Keep dir out of the tile directory served by Handler (the handler cannot
// serve it anyway, but separate directories are easier to back up and lock
// down).
func LoadOrCreateKey(dir string, origin string) (signer note.Signer, vkey string, err error) {
	return loadOrCreateNoteKey(dir, origin, noteKeyFiles{key: KeyFile, vkey: VerifierKeyFile, identity: "log identity",
		generate: func(origin string) (string, error) { skey, _, err := GenerateKey(origin); return skey, err },
		open:     NewSigner})
}

// noteKeyFiles describes one kind of checkpoint key on disk: its two files, what losing it
// means, and how to make and open its private key.
type noteKeyFiles struct {
	key, vkey string
	identity  string // named in the refusal to replace a lost key
	generate  func(origin string) (skey string, err error)
	open      func(skey string) (note.Signer, string, error)
}

// loadOrCreateNoteKey is LoadOrCreateKey for any kind of checkpoint key (Ed25519,
// ML-DSA-44): it creates the private key exclusively on first use, refuses a key of another
// origin, a verifier key without its private key and a verifier key of another key, and
// recreates a missing verifier key.
func loadOrCreateNoteKey(dir, origin string, f noteKeyFiles) (note.Signer, string, error) {
	if err := validOrigin(origin); err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("log: creating key directory: %w", err)
	}
	keyPath := filepath.Join(dir, f.key)
	vkeyPath := filepath.Join(dir, f.vkey)

	raw, err := os.ReadFile(keyPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, err := os.Stat(vkeyPath); err == nil {
			return nil, "", fmt.Errorf("log: %s exists but %s is missing; refusing to create a new %s (restore the private key or remove %s deliberately)", f.vkey, f.key, f.identity, f.vkey)
		}
		skey, err := f.generate(origin)
		if err != nil {
			return nil, "", err
		}
		// Exclusive create: if another process raced us, fail rather than overwrite its key.
		if err := durable.CreateFile(keyPath, []byte(skey+"\n"), 0o600); err != nil {
			return nil, "", fmt.Errorf("log: writing %s: %w", f.key, err)
		}
		raw = []byte(skey)
	case err != nil:
		return nil, "", fmt.Errorf("log: reading %s: %w", f.key, err)
	}

	s, vk, err := f.open(strings.TrimSpace(string(raw)))
	if err != nil {
		return nil, "", fmt.Errorf("log: %s: %w", f.key, err)
	}
	if s.Name() != origin {
		return nil, "", fmt.Errorf("%w: %s in the key directory is for origin %q, but origin %q was requested", ErrKeyMismatch, f.key, s.Name(), origin)
	}
	vraw, err := os.ReadFile(vkeyPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := durable.WriteFile(vkeyPath, []byte(vk+"\n"), 0o644); err != nil {
			return nil, "", fmt.Errorf("log: writing %s: %w", f.vkey, err)
		}
	case err != nil:
		return nil, "", fmt.Errorf("log: reading %s: %w", f.vkey, err)
	default:
		if got := strings.TrimSpace(string(vraw)); got != vk {
			return nil, "", fmt.Errorf("%w: %s (%q) is not the public key of %s (%q)", ErrKeyMismatch, f.vkey, got, f.key, vk)
		}
	}
	return s, vk, nil
}
