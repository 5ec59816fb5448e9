package gendoc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSplice(t *testing.T) {
	doc := "a\n<!-- generated: x (go test ./y -update); do not edit -->\nold\n<!-- end: x -->\nb\n"
	got, err := Splice(doc, "x", "new\n")
	if err != nil || got != strings.Replace(doc, "old\n", "new\n", 1) {
		t.Fatalf("%q %v", got, err)
	}
	for _, bad := range []string{doc[:20], "<!-- generated: x (y); do not edit -->\nold\n", "<!-- generated: xx (y) -->\n<!-- end: xx -->"} {
		if _, err := Splice(bad, "x", ""); !errors.Is(err, ErrNoSection) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestUpdate: a stale file is reported and left alone, or rewritten with write; a current
// one is reported unchanged.
func TestUpdate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "doc.md")
	stale := "<!-- generated: s (how); do not edit -->\nold\n<!-- end: s -->\n"
	if err := os.WriteFile(path, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	if changed, err := Update(path, false, Section{"s", "new\n"}); err != nil || !changed {
		t.Fatalf("stale: %v %v", changed, err)
	}
	if b, _ := os.ReadFile(path); string(b) != stale {
		t.Fatal("a check rewrote the file")
	}
	if changed, err := Update(path, true, Section{"s", "new\n"}); err != nil || !changed {
		t.Fatalf("write: %v %v", changed, err)
	}
	if b, _ := os.ReadFile(path); string(b) != strings.Replace(stale, "old", "new", 1) {
		t.Fatalf("rewritten: %q", b)
	}
	if changed, err := Update(path, false, Section{"s", "new\n"}); err != nil || changed {
		t.Fatalf("current: %v %v", changed, err)
	}
	if _, err := Update(path, false, Section{"t", ""}); !errors.Is(err, ErrNoSection) {
		t.Fatalf("a missing section: %v", err)
	}
}
