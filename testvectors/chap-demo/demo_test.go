// Package chapdemo_test keeps testvectors/chap-demo/support-triage.jsonl — the thirteen signed
// CHAP 0.3 envelopes of the README's walk-through and of `evident demo` — equal to what
// ledger/profile/chap/scenario builds (`go test ./testvectors/chap-demo -update` rewrites it).
package chapdemo_test

import (
	"bytes"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/evident-log/evident/ledger/profile/chap/scenario"
)

var update = flag.Bool("update", false, "rewrite support-triage.jsonl")

func TestSupportTriageFile(t *testing.T) {
	b, _, err := scenario.SupportTriage("wsp_support_triage", time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	want := append(bytes.Join(b.Records(), []byte("\n")), '\n')
	if *update {
		if err := os.WriteFile("support-triage.jsonl", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("support-triage.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("support-triage.jsonl differs from the scenario: run go test ./testvectors/chap-demo -update")
	}
}
