package servicekey_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/evident-log/evident/servicekey"
)

// TestKeyFiles: a generated key written as PEM (plain or encrypted) loads back, its public
// half reads through LoadPublic and LoadAnyPublic, and WriteNew never overwrites.
func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ typ, password string }{
		{servicekey.TypeEd25519, ""}, {servicekey.TypeP256, ""}, {servicekey.TypeEd25519, "secret"},
	} {
		k, err := servicekey.Generate(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		want, err := servicekey.Thumbprint(k.Public())
		if err != nil {
			t.Fatal(err)
		}
		b, err := servicekey.EncodePEM(k, []byte(tc.password))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, tc.typ+tc.password+".key")
		if err := servicekey.WriteNew(path, b); err != nil {
			t.Fatal(err)
		}
		if err := servicekey.WriteNew(path, b); !errors.Is(err, servicekey.ErrExists) {
			t.Fatalf("%s: overwrite: %v", path, err)
		}
		l, err := servicekey.Load(path, []byte(tc.password))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		pub, err := servicekey.LoadAnyPublic(path, []byte(tc.password))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, p := range []any{l.Public(), pub} {
			if got, _ := servicekey.Thumbprint(p); got != want {
				t.Fatalf("%s: thumbprint %s, want %s", path, got, want)
			}
		}
		if tc.password == "" {
			if pub, err := servicekey.LoadPublic(path); err != nil {
				t.Fatalf("%s: LoadPublic: %v", path, err)
			} else if got, _ := servicekey.Thumbprint(pub); got != want {
				t.Fatalf("%s: LoadPublic thumbprint %s", path, got)
			}
		}
	}
	if _, err := servicekey.Generate("rsa"); err == nil {
		t.Fatal("rsa generated")
	}
}

// TestRotate: rotation keeps the old key under retired/, and the history holds both keys,
// the old one's window closed at the rotation.
func TestRotate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "service.key")
	k, err := servicekey.Generate(servicekey.TypeEd25519)
	if err != nil {
		t.Fatal(err)
	}
	b, err := servicekey.EncodePEM(k, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := servicekey.WriteNew(path, b); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(time.Minute) // after the key file was written: the old key's window opens then
	oldKID, newKID, err := servicekey.Rotate(path, nil, servicekey.TypeP256, now)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := servicekey.Thumbprint(k.Public()); oldKID != want || newKID == oldKID {
		t.Fatalf("kids %s → %s", oldKID, newKID)
	}
	if _, err := os.Stat(filepath.Join(dir, servicekey.RetiredDir, oldKID+".key")); err != nil {
		t.Fatal(err)
	}
	h, err := servicekey.ReadHistory(filepath.Join(dir, servicekey.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Keys) != 2 || h.Keys[0].KID != oldKID || h.Keys[0].NotAfter == "" || h.Keys[1].KID != newKID || h.Keys[1].NotAfter != "" {
		t.Fatalf("history: %+v", h.Keys)
	}
	nk, err := servicekey.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := servicekey.Thumbprint(nk.Public()); got != newKID {
		t.Fatalf("key file holds %s, want %s", got, newKID)
	}
}
