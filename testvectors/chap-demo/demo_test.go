// Package chapdemo_test keeps the README's walk-through files equal to what
// internal/scenario/chapscenario builds (`go test ./testvectors/chap-demo -update` rewrites
// them): support-triage.jsonl, the ten signed envelopes of `evident demo` in the reference
// Coordinator's wire form, and support-triage.paper.jsonl, the same triage in the paper's
// Listing 1 form (thirteen envelopes).
package chapdemo_test

import (
	"bytes"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/chapscenario"
)

var update = flag.Bool("update", false, "rewrite the files")

func TestSupportTriageFiles(t *testing.T) {
	start := time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC)
	ref, _, err := chapscenario.SupportTriageReference("wsp_support_triage", start)
	if err != nil {
		t.Fatal(err)
	}
	paper, _, err := chapscenario.SupportTriage("wsp_support_triage", start)
	if err != nil {
		t.Fatal(err)
	}
	for file, b := range map[string]*chapscenario.Builder{"support-triage.jsonl": ref, "support-triage.paper.jsonl": paper} {
		want := append(bytes.Join(b.Records(), []byte("\n")), '\n')
		if *update {
			if err := os.WriteFile(file, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s differs from the scenario: run go test ./testvectors/chap-demo -update", file)
		}
	}
}
