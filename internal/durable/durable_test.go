package durable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteAndCreate(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := WriteFile(p, []byte("one"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "two" {
		t.Fatalf("WriteFile did not replace: %q", b)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if err := CreateFile(p, []byte("three"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("CreateFile over an existing file: %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "two" {
		t.Fatalf("a refused CreateFile changed the file: %q", b)
	}
	if err := CreateFile(filepath.Join(dir, "g"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if IsTemp(e.Name()) {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
	if len(ents) != 2 {
		t.Errorf("%d entries, want 2", len(ents))
	}
}

func TestMkdir(t *testing.T) {
	d := filepath.Join(t.TempDir(), "sub")
	for i := 0; i < 2; i++ { // the second call finds it there
		if err := Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		t.Fatalf("not a directory: %v", err)
	}
	if err := Mkdir(filepath.Join(d, "a", "b"), 0o700); err == nil {
		t.Fatal("Mkdir without its parent succeeded")
	}
	if err := WriteFile(filepath.Join(d, "missing", "f"), nil, 0o600); err == nil {
		t.Fatal("WriteFile into a missing directory succeeded")
	}
}
