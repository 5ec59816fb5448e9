package tilelog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/tlogpolicy"
)

func TestLoadOrCreateMLDSAKey(t *testing.T) {
	dir := t.TempDir()
	s1, vk1, err := LoadOrCreateMLDSAKey(dir, "evident.test/log")
	if err != nil {
		t.Fatal(err)
	}
	s2, vk2, err := LoadOrCreateMLDSAKey(dir, "evident.test/log")
	if err != nil || vk1 != vk2 || s1.KeyHash() != s2.KeyHash() {
		t.Fatalf("reload: %v %q %q", err, vk1, vk2)
	}
	if postQuantumVKey([]note.Signer{s1}) != vk1 {
		t.Errorf("postQuantumVKey does not find the ML-DSA-44 signer")
	}
	// A signature by the signer verifies with the verifier key, as the offline verifier reads it.
	body := "evident.test/log\n5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
	msg, err := note.Sign(&note.Note{Text: body}, s1)
	if err != nil {
		t.Fatal(err)
	}
	v, err := tlogpolicy.NewCosignatureVerifier(vk1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(msg, note.VerifierList(v)); err != nil {
		t.Errorf("ML-DSA-44 checkpoint signature does not verify: %v", err)
	}

	tests := []struct {
		name  string
		setup func(dir string)
		want  error
		msg   string
	}{
		{"other origin", func(string) {}, ErrKeyMismatch, ""},
		{"vkey not of the key", func(d string) {
			_, other, _ := GenerateMLDSAKey("evident.test/log")
			os.WriteFile(filepath.Join(d, MLDSAVerifierKeyFile), []byte(other+"\n"), 0o644)
		}, ErrKeyMismatch, ""},
		{"vkey without key", func(d string) { os.Remove(filepath.Join(d, MLDSAKeyFile)) }, nil, "refusing"},
		{"Ed25519 key in the file", func(d string) {
			sk, _, _ := GenerateKey("evident.test/log")
			os.WriteFile(filepath.Join(d, MLDSAKeyFile), []byte(sk+"\n"), 0o600)
		}, nil, "ML-DSA-44"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			if _, _, err := LoadOrCreateMLDSAKey(d, "evident.test/log"); err != nil {
				t.Fatal(err)
			}
			tc.setup(d)
			origin := "evident.test/log"
			if tc.name == "other origin" {
				origin = "other.test/log"
			}
			_, _, err := LoadOrCreateMLDSAKey(d, origin)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err %v", err)
			}
		})
	}
}
