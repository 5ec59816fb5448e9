package verifier_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/evident-log/evident/verifier"
	"github.com/evident-log/evident/verifier/internal/testbundle"
)

var arrivalRE = regexp.MustCompile(`"arrival":"[^"]*"`)

// TestNotEvidence: the report names what nothing binds (docs/report.md, NotEvidence) in JSON
// and text, a case slice's scope included, and changing it changes no check.
func TestNotEvidence(t *testing.T) {
	trust := testbundle.Trust(t)
	b := testbundle.Build(t, testbundle.Options{Entries: 6, Participants: 2})
	rep, err := verifier.Verify(context.Background(), b.Reader(t), verifier.Options{Trust: trust})
	if err != nil {
		t.Fatal(err)
	}
	fields := func(r *verifier.Report) []string {
		var out []string
		for _, n := range r.NotEvidence {
			out = append(out, n.Field+"="+n.Value)
			if n.Why == "" {
				t.Errorf("%s: no why", n.Field)
			}
		}
		return out
	}
	want := []string{"manifest.producer=" + b.Manifest.Producer, "manifest.created=" + b.Manifest.Created, b.EntriesFile() + " arrival=every line"}
	if got := fields(rep); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("not evidence %q, want %q", got, want)
	}
	var text, js bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "\nnot evidence (stated by the bundle, bound by nothing, relied on by no check):\n  manifest.producer: ") {
		t.Errorf("text report:\n%s", text.String())
	}
	var doc struct {
		NotEvidence []verifier.NotEvidence `json:"not_evidence"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil || len(doc.NotEvidence) != 3 || doc.NotEvidence[1].Field != "manifest.created" {
		t.Errorf("JSON not_evidence %+v (%v)", doc.NotEvidence, err)
	}

	// Another producer, creation time and arrival times: the same checks.
	c := b.Clone()
	c.Manifest.Producer, c.Manifest.Created = "someone else 9.9", "1970-01-01T00:00:00Z"
	lines := c.Lines()
	for i := range lines {
		lines[i] = arrivalRE.ReplaceAll(lines[i], []byte(`"arrival":"2000-01-01T00:00:00.000Z"`))
	}
	c.SetLines(lines)
	c.Digests()
	other, err := verifier.Verify(context.Background(), c.Reader(t), verifier.Options{Trust: trust})
	if err != nil {
		t.Fatal(err)
	}
	if other.Verdict != rep.Verdict || !reflect.DeepEqual(other.Checks, rep.Checks) {
		t.Errorf("checks changed with the producer and created: %s vs %s", other.Verdict, rep.Verdict)
	}
	if got := fields(other); got[0] != "manifest.producer=someone else 9.9" || got[1] != "manifest.created=1970-01-01T00:00:00Z" {
		t.Errorf("not evidence %q", got)
	}
}
