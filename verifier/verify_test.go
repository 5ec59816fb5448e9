package verifier_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/verifier"
	"github.com/evident-log/evident/verifier/internal/testbundle"
)

var fixedNow = func() time.Time { return time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC) }

// verify verifies with the trust file of the service testbundle signs as pinned.
func verify(t testing.TB, r *bundle.Reader) *verifier.Report {
	t.Helper()
	rep, err := verifier.Verify(context.Background(), r, verifier.Options{Workers: 4, Now: fixedNow, Trust: testbundle.Trust(t)})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return rep
}

func text(t testing.TB, rep *verifier.Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func checksNamed(rep *verifier.Report, name verifier.CheckName) []verifier.Check {
	var out []verifier.Check
	for _, c := range rep.Checks {
		if c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

func TestGoodBundle(t *testing.T) {
	b := testbundle.Build(t, testbundle.Options{Entries: 40, SealAt: []int{10, 25, 40}, ReceiptsAtEnd: true, Rotate: true, CheckpointFiles: true})
	rep := verify(t, b.Reader(t))
	out := text(t, rep)
	if rep.Verdict != verifier.Verified || rep.ExitCode() != 0 {
		t.Fatalf("verdict %s, exit %d\n%s", rep.Verdict, rep.ExitCode(), out)
	}
	if !strings.HasPrefix(out, "VERDICT: VERIFIED\n") {
		t.Errorf("text report does not start with the verdict:\n%s", out)
	}
	if len(rep.Chains) != 1 {
		t.Fatalf("chains: %d", len(rep.Chains))
	}
	cv := rep.Chains[0].Coverage
	want := verifier.Coverage{EntriesTotal: 40, EntriesChecked: 40, SignaturesVerified: 40, EntriesAnchored: 40, SealsTotal: 3, SealsVerified: 3, Checkpoints: 1}
	if cv != want {
		t.Errorf("coverage %+v, want %+v", cv, want)
	}
	ref := b.Manifest.Chains[0]
	if c := rep.Chains[0]; c.Size != 40 || c.Head != ref.Head.String() || c.Root != ref.Root || c.ID != "ws-1" || c.Profile != "chap/0.3" {
		t.Errorf("chain report %+v", c)
	}
	t.Log("\n" + out)
	var back map[string]any
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
}
