package profiledocs

import (
	"flag"
	"strings"
	"testing"

	"github.com/evident-log/evident/internal/gendoc"
	"github.com/evident-log/evident/ledger/profile"
)

var update = flag.Bool("update", false, "rewrite the generated sections of the docs")

// TestDocsCurrent: the generated tables of docs/errors.md and docs/report.md are what the
// served profiles declare.
func TestDocsCurrent(t *testing.T) {
	r := profile.Default()
	const how = "go test ./internal/profiledocs -update"
	gendoc.Keep(t, "../../docs/errors.md", *update, how, gendoc.Section{Name: CodesSection, Body: Codes(r)})
	gendoc.Keep(t, "../../docs/report.md", *update, how, gendoc.Section{Name: ChecksSection, Body: Checks(r)})
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
