package log

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// plainSigner returns a note signer (not carrying its verifier key) for
// another origin.
func plainSigner(t *testing.T) note.Signer {
	t.Helper()
	skey, _, err := GenerateKey("plain.test/log")
	if err != nil {
		t.Fatal(err)
	}
	return mustNoteSigner(t, skey)
}

func mustNoteSigner(t *testing.T, skey string) note.Signer {
	t.Helper()
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGenerateAndDeriveKey(t *testing.T) {
	skey, vkey, err := GenerateKey(testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(skey, "PRIVATE+KEY+"+testOrigin+"+") || !strings.HasPrefix(vkey, testOrigin+"+") {
		t.Fatalf("unexpected key formats: %q %q", skey, vkey)
	}
	got, err := DeriveVerifierKey(skey)
	if err != nil || got != vkey {
		t.Fatalf("DeriveVerifierKey = %q, %v; want %q", got, err, vkey)
	}
	for _, bad := range []string{"", "garbage", "PRIVATE+KEY+a+b", "PRIVATE+KEY+a+00000000+!!!"} {
		if _, err := DeriveVerifierKey(bad); err == nil {
			t.Errorf("DeriveVerifierKey(%q) succeeded", bad)
		}
	}
	for _, bad := range []string{"", "has space", "has+plus"} {
		if _, _, err := GenerateKey(bad); err == nil {
			t.Errorf("GenerateKey(%q) succeeded", bad)
		}
	}
	// Signatures made by the signer verify with the derived key.
	s, v2, err := NewSigner(skey)
	if err != nil || v2 != vkey {
		t.Fatalf("NewSigner: %q %v", v2, err)
	}
	n, err := note.Sign(&note.Note{Text: "hello\n"}, s)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(n, note.VerifierList(v)); err != nil {
		t.Fatalf("note does not verify: %v", err)
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	s1, v1, err := LoadOrCreateKey(dir, testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	if s1.Name() != testOrigin {
		t.Fatalf("name %q", s1.Name())
	}
	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s mode %v, want 0600", KeyFile, fi.Mode().Perm())
	}
	vraw, err := os.ReadFile(filepath.Join(dir, VerifierKeyFile))
	if err != nil || strings.TrimSpace(string(vraw)) != v1 {
		t.Fatalf("%s = %q, %v; want %q", VerifierKeyFile, vraw, err, v1)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("key dir has %d files, want 2 (no temp files left)", len(entries))
	}

	// Reused on the next start.
	s2, v2, err := LoadOrCreateKey(dir, testOrigin)
	if err != nil || v2 != v1 || s2.KeyHash() != s1.KeyHash() {
		t.Fatalf("second load: %q %v, want %q", v2, err, v1)
	}

	// Wrong origin is refused.
	if _, _, err := LoadOrCreateKey(dir, "other.test/log"); !errors.Is(err, ErrKeyMismatch) || !strings.Contains(err.Error(), testOrigin) {
		t.Fatalf("wrong origin: %v", err)
	}

	// A missing vkey is recreated; a tampered one is refused.
	if err := os.Remove(filepath.Join(dir, VerifierKeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, v3, err := LoadOrCreateKey(dir, testOrigin); err != nil || v3 != v1 {
		t.Fatalf("after vkey removal: %q %v", v3, err)
	}
	_, otherV, _ := GenerateKey(testOrigin)
	if err := os.WriteFile(filepath.Join(dir, VerifierKeyFile), []byte(otherV+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateKey(dir, testOrigin); !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("tampered vkey: %v", err)
	}

	// A vkey without its private key is not silently replaced.
	if err := os.Remove(filepath.Join(dir, KeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateKey(dir, testOrigin); err == nil {
		t.Fatal("created a new key next to an orphaned vkey")
	}

	// Garbage private key.
	dir2 := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir2, KeyFile), []byte("nonsense"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateKey(dir2, testOrigin); err == nil {
		t.Fatal("garbage key accepted")
	}
	if _, _, err := LoadOrCreateKey(t.TempDir(), ""); err == nil {
		t.Fatal("empty origin accepted")
	}
}
