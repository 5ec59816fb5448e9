// Package servicekey manages the service's statement and receipt key on disk: generating
// Ed25519 or ECDSA P-256 keys as PEM files (optionally encrypted with a password in
// sigstore's "ENCRYPTED SIGSTORE PRIVATE KEY" format, through sigstore/sigstore's
// cryptoutils), rotating them, and keeping the key history: every key the service ever
// signed with, with its validity window, in the format of the bundle trust file
// trust/key-history.json (bundle.KeyHistory).
//
// Rotation never breaks what was issued before: the retired key's public half stays in
// the history (and so in /.well-known/scitt-keys and in every exported bundle), and the
// verifier accepts a signature by a key whose window covers the signing time.
//
// The key-file format is shared by evidentd and the evident CLI (evident keys), so the
// package sits beside the other formats and depends on no service code.
package servicekey

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/durable"
	"github.com/evident-log/evident/receipts"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// Key types Generate accepts.
const (
	TypeEd25519 = "ed25519"
	TypeP256    = "p256"
)

// HistoryFile is the name of the key history next to the service key.
const HistoryFile = "service-history.json"

// RetiredDir is the directory, next to the service key, where Rotate moves retired
// private keys (mode 0600). Nothing reads them again; an operator may destroy them.
const RetiredDir = "retired"

// ErrExists is returned when a key file would be overwritten.
var ErrExists = errors.New("servicekey: key file exists")

// Generate makes a new private key of the given type (TypeEd25519 or TypeP256).
func Generate(typ string) (crypto.Signer, error) {
	switch typ {
	case TypeEd25519, "":
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	case TypeP256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	return nil, fmt.Errorf("servicekey: key type %q (want %s or %s)", typ, TypeEd25519, TypeP256)
}

// EncodePEM encodes a private key as PEM, encrypted when password is non-empty.
func EncodePEM(k crypto.Signer, password []byte) ([]byte, error) {
	if len(password) > 0 {
		der, err := cryptoutils.MarshalPrivateKeyToEncryptedDER(k, cryptoutils.StaticPasswordFunc(password))
		if err != nil {
			return nil, fmt.Errorf("servicekey: encrypt: %w", err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: string(cryptoutils.EncryptedSigstorePrivateKeyPEMType), Bytes: der}), nil
	}
	return cryptoutils.MarshalPrivateKeyToPEM(k)
}

// Load reads a PEM private key (PKCS#8, SEC 1, PKCS#1, or sigstore-encrypted with password).
func Load(path string, password []byte) (crypto.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("servicekey: %w", err)
	}
	var pf cryptoutils.PassFunc
	if len(password) > 0 {
		pf = cryptoutils.StaticPasswordFunc(password)
	}
	k, err := cryptoutils.UnmarshalPEMToPrivateKey(b, pf)
	if err != nil {
		return nil, fmt.Errorf("servicekey: %s: %w (an encrypted key needs its password)", path, err)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("servicekey: %T cannot sign", k)
	}
	return s, nil
}

// LoadPublic reads a public key: PEM "PUBLIC KEY", or the public half of a PEM private key
// (unencrypted), or a COSE_Key.
func LoadPublic(path string) (crypto.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("servicekey: %w", err)
	}
	if blk, _ := pem.Decode(b); blk != nil {
		if blk.Type == "PUBLIC KEY" {
			return cryptoutils.UnmarshalPEMToPublicKey(b)
		}
		k, err := cryptoutils.UnmarshalPEMToPrivateKey(b, nil)
		if err != nil {
			return nil, fmt.Errorf("servicekey: %s: %w", path, err)
		}
		if s, ok := k.(crypto.Signer); ok {
			return s.Public(), nil
		}
		return nil, fmt.Errorf("servicekey: %s: %T has no public key", path, k)
	}
	return receipts.ParseCOSEKey(b)
}

// LoadAnyPublic reads the public key of a PEM private key (an encrypted one with password),
// of a PEM public key or of a COSE_Key.
func LoadAnyPublic(path string, password []byte) (crypto.PublicKey, error) {
	if b, err := os.ReadFile(path); err == nil {
		if blk, _ := pem.Decode(b); blk != nil && strings.Contains(blk.Type, "ENCRYPTED") {
			k, err := Load(path, password)
			if err != nil {
				return nil, err
			}
			return k.Public(), nil
		}
	}
	return LoadPublic(path)
}

// WriteNew writes data to path (mode 0600), synced, refusing to overwrite.
func WriteNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s", ErrExists, path)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Thumbprint returns the hex RFC 9679 thumbprint of pub.
func Thumbprint(pub crypto.PublicKey) (string, error) {
	kid, err := receipts.KeyThumbprint(pub)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(kid), nil
}

// ReadHistory reads a key history file; a missing file gives an empty history.
func ReadHistory(path string) (*bundle.KeyHistory, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &bundle.KeyHistory{Format: bundle.KeyHistoryFormat}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("servicekey: %w", err)
	}
	h, err := bundle.ParseKeyHistory(b)
	if err != nil {
		return nil, fmt.Errorf("servicekey: %s: %w", path, err)
	}
	return h, nil
}

// WriteHistory replaces the key history file atomically.
func WriteHistory(path string, h *bundle.KeyHistory) error {
	if err := h.Check(); err != nil {
		return err
	}
	b, err := h.Marshal()
	if err != nil {
		return err
	}
	return durable.WriteFile(path, b, 0o644)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Record makes pub the current statement and receipt key of h as of now: if it is
// already the current key nothing changes; otherwise every open key is closed at now and
// pub is appended. It reports whether h changed.
func Record(h *bundle.KeyHistory, pub crypto.PublicKey, now time.Time) (bool, error) {
	kid, err := Thumbprint(pub)
	if err != nil {
		return false, err
	}
	for _, k := range h.Keys {
		if k.KID == kid && k.NotAfter == "" {
			return false, nil
		}
		if k.KID == kid {
			return false, fmt.Errorf("servicekey: key %s was retired at %s and cannot become current again", kid, k.NotAfter)
		}
	}
	ck, err := receipts.COSEKey(pub)
	if err != nil {
		return false, err
	}
	for i := range h.Keys {
		if h.Keys[i].NotAfter == "" {
			h.Keys[i].NotAfter = stamp(now)
		}
	}
	h.Keys = append(h.Keys, bundle.HistoryKey{KID: kid, COSEKey: ck, Use: []string{bundle.UseStatement, bundle.UseReceipt}, NotBefore: stamp(now)})
	return true, nil
}

// RecordCheckpointKey makes vkey a current checkpoint key of role in h (primary keys
// replace the previous primary, closing its window). It reports whether h changed.
func RecordCheckpointKey(h *bundle.KeyHistory, vkey, role string, now time.Time) bool {
	for _, c := range h.CheckpointKeys {
		if c.VKey == vkey && c.Role == role && c.NotAfter == "" {
			return false
		}
	}
	if role == bundle.RolePrimary {
		for i := range h.CheckpointKeys {
			if h.CheckpointKeys[i].Role == role && h.CheckpointKeys[i].NotAfter == "" {
				h.CheckpointKeys[i].NotAfter = stamp(now)
			}
		}
	}
	h.CheckpointKeys = append(h.CheckpointKeys, bundle.CheckpointKey{VKey: vkey, Role: role, NotBefore: stamp(now)})
	return true
}

// RetireCheckpointKey closes the window of a current checkpoint key (an additional signer
// taken out of service). It reports whether h changed.
func RetireCheckpointKey(h *bundle.KeyHistory, vkey string, now time.Time) bool {
	changed := false
	for i := range h.CheckpointKeys {
		if h.CheckpointKeys[i].VKey == vkey && h.CheckpointKeys[i].NotAfter == "" {
			h.CheckpointKeys[i].NotAfter = stamp(now)
			changed = true
		}
	}
	return changed
}

// Rotate replaces the service key at keyPath with a new key of type typ: the old key file
// moves to RetiredDir/<kid>.key, the new one is written (encrypted when password is set),
// and the history file next to the key records the change (creating the history, with the
// old key's window starting at its file's modification time, if there was none). The
// running evidentd picks the new key up at its next start. It returns the old and new kids.
func Rotate(keyPath string, password []byte, typ string, now time.Time) (oldKID, newKID string, err error) {
	old, err := Load(keyPath, password)
	if err != nil {
		return "", "", err
	}
	histPath := filepath.Join(filepath.Dir(keyPath), HistoryFile)
	h, err := ReadHistory(histPath)
	if err != nil {
		return "", "", err
	}
	if len(h.Keys) == 0 {
		since := now
		if st, err := os.Stat(keyPath); err == nil {
			since = st.ModTime()
		}
		if _, err := Record(h, old.Public(), since); err != nil {
			return "", "", err
		}
	}
	nk, err := Generate(typ)
	if err != nil {
		return "", "", err
	}
	if _, err := Record(h, nk.Public(), now); err != nil {
		return "", "", err
	}
	if oldKID, err = Thumbprint(old.Public()); err != nil {
		return "", "", err
	}
	if newKID, err = Thumbprint(nk.Public()); err != nil {
		return "", "", err
	}
	pemBytes, err := EncodePEM(nk, password)
	if err != nil {
		return "", "", err
	}
	retired := filepath.Join(filepath.Dir(keyPath), RetiredDir)
	if err := os.MkdirAll(retired, 0o700); err != nil {
		return "", "", err
	}
	oldBytes, err := os.ReadFile(keyPath)
	if err != nil {
		return "", "", err
	}
	if err := WriteNew(filepath.Join(retired, oldKID+".key"), oldBytes); err != nil {
		return "", "", err
	}
	// History first, key last: should the key swap fail after the history was written,
	// evidentd refuses to start with the old key (the history says it is retired) instead
	// of signing with a key outside its window; rerun rotate or restore the key.
	if err := WriteHistory(histPath, h); err != nil {
		return "", "", err
	}
	if err := durable.WriteFile(keyPath, pemBytes, 0o600); err != nil {
		return "", "", err
	}
	return oldKID, newKID, nil
}
