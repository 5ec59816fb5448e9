package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spf13/cobra/doc"
)

var update = flag.Bool("update", false, "TestCLIDocs: rewrite docs/cli/ from the commands")

// cliDocs is where the generated command reference lives.
const cliDocs = "../../docs/cli"

// TestCLIDocs holds docs/cli/*.md, the command reference cobra/doc generates from the
// commands, to the commands: it fails when a command, flag or example changed and the
// reference was not regenerated with go test ./cmd/evident -run TestCLIDocs -update.
func TestCLIDocs(t *testing.T) {
	gen := t.TempDir()
	root := newRoot(&app{})
	if err := doc.GenMarkdownTree(root, gen); err != nil {
		t.Fatal(err)
	}
	want, err := filepath.Glob(filepath.Join(gen, "*.md"))
	if err != nil || len(want) < 25 {
		t.Fatalf("generated %d pages (%v)", len(want), err)
	}
	if *update {
		old, _ := filepath.Glob(filepath.Join(cliDocs, "*.md"))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(cliDocs, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range want {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(cliDocs, filepath.Base(f)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("wrote %d pages to docs/cli", len(want))
		return
	}
	have, _ := filepath.Glob(filepath.Join(cliDocs, "*.md"))
	base := func(l []string) []string {
		out := make([]string, len(l))
		for i, f := range l {
			out[i] = filepath.Base(f)
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(base(have), base(want)) {
		t.Fatalf("docs/cli holds %q, the commands make %q: run go test ./cmd/evident -run TestCLIDocs -update", base(have), base(want))
	}
	for _, f := range want {
		g, _ := os.ReadFile(f)
		h, err := os.ReadFile(filepath.Join(cliDocs, filepath.Base(f)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(g, h) {
			t.Errorf("docs/cli/%s is stale: run go test ./cmd/evident -run TestCLIDocs -update", filepath.Base(f))
		}
	}
}
