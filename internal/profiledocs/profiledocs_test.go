package profiledocs

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/evident-log/evident/ledger/profile"
)

var update = flag.Bool("update", false, "rewrite the generated sections of the docs")

// TestDocsCurrent: the generated tables of docs/errors.md and docs/report.md are what the
// served profiles declare.
func TestDocsCurrent(t *testing.T) {
	r := profile.Default()
	for _, tc := range []struct{ file, section, body string }{
		{"../../docs/errors.md", CodesSection, Codes(r)},
		{"../../docs/report.md", ChecksSection, Checks(r)},
	} {
		b, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Splice(string(b), tc.section, tc.body)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if got == string(b) {
			continue
		}
		if *update {
			if err := os.WriteFile(tc.file, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s: the %s table is not what the profiles declare; run go test ./internal/profiledocs -update", tc.file, tc.section)
	}
}

func TestSplice(t *testing.T) {
	doc := "a\n<!-- generated: x (go test ./internal/profiledocs -update); do not edit -->\nold\n<!-- end: x -->\nb\n"
	got, err := Splice(doc, "x", "new\n")
	if err != nil || got != strings.Replace(doc, "old\n", "new\n", 1) {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := Splice(doc, "y", ""); err == nil {
		t.Fatal("a missing section spliced")
	}
	if _, err := Splice("<!-- generated: x (go test ./internal/profiledocs -update); do not edit -->\n", "x", ""); err == nil {
		t.Fatal("a section without its end spliced")
	}
}

func TestTables(t *testing.T) {
	r := profile.Default()
	codes, checks := Codes(r), Checks(r)
	for _, want := range []string{"| `topic_seq_gap` | refusal | 422 | `cop/1.0` |", "| `not_cop` | problem | 404 | `cop/1.0` |", "| `bootstrap_unverified` | critical finding | — | `chap/0.3` |"} {
		if !strings.Contains(codes, want) {
			t.Errorf("codes table lacks %q:\n%s", want, codes)
		}
	}
	if !strings.Contains(checks, "| `chieflab.operator` | ChiefLab: records were submitted") {
		t.Errorf("checks table:\n%s", checks)
	}
	if n := strings.Count(codes, "\n"); n != len(r.Codes())+2 {
		t.Errorf("%d lines for %d codes", n, len(r.Codes()))
	}
}
