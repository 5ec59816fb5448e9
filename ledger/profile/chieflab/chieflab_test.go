package chieflab_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/chieflabscenario"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chieflab"
)

const run = "run-5d1c2e7a-launch"

var start = time.Date(2026, 5, 12, 9, 0, 0, 0, time.UTC)

func replay(t *testing.T, recs [][]byte, op string) *ledger.Chain {
	t.Helper()
	c, _ := ledger.NewChain(run, chieflab.Adapter{})
	for _, r := range recs {
		if _, err := c.AppendBy(r, start, op); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func critical(c *ledger.Chain) []ledger.Finding {
	var out []ledger.Finding
	for _, f := range c.State.(ledger.Auditor).Findings() {
		if f.Severity == ledger.Critical {
			out = append(out, f)
		}
	}
	return out
}

func TestLaunchIsClean(t *testing.T) {
	c := replay(t, chieflabscenario.Records(run, "ws-acme", start, chieflabscenario.Launch), "operator:chieflab-launch@acme")
	if f := c.State.(ledger.Auditor).Findings(); len(f) != 0 {
		t.Fatalf("findings %+v", f)
	}
}

func TestViolations(t *testing.T) {
	want := map[string]ledger.Code{
		"executed_without_approval": chieflab.CodeUnapprovedExecution,
		"executed_after_rejection":  chieflab.CodeExecutedAfterReject,
		"duplicate_execution":       chieflab.CodeDuplicateExecution,
		"cross_workspace_access":    chieflab.CodeCrossWorkspace,
		"edit_voids_approval":       chieflab.CodeUnapprovedExecution,
	}
	for name, steps := range chieflabscenario.Violations {
		t.Run(name, func(t *testing.T) {
			f := critical(replay(t, chieflabscenario.Records(run, "ws-acme", start, steps), "operator:x"))
			if len(f) != 1 || f[0].Code != want[name] || f[0].Seq != uint64(len(steps)-1) {
				t.Fatalf("findings %+v, want one %s at the last step", f, want[name])
			}
		})
	}
}

// TestOperator: the authenticated operator is written into the hashed record and read back on
// replay; a wrapped record naming another operator is refused; without an operator, a notice.
func TestOperator(t *testing.T) {
	recs := chieflabscenario.Records(run, "ws-acme", start, chieflabscenario.Launch)
	c, _ := ledger.NewChain(run, chieflab.Adapter{})
	a, err := c.AppendBy(recs[0], start, "operator:chieflab-launch@acme")
	if err != nil || !bytes.Contains(a.Admission.Canonical, []byte(`"submitted_by":"operator:chieflab-launch@acme"`)) || a.Admission.Sender != "operator:chieflab-launch@acme" {
		t.Fatalf("%v %s", err, a.Admission.Canonical)
	}
	// Replay of the stored form, no submitter: same bytes.
	r, _ := ledger.NewChain(run, chieflab.Adapter{})
	b, err := r.Append(a.Admission.Canonical, start)
	if err != nil || !bytes.Equal(b.Admission.Canonical, a.Admission.Canonical) || b.Link != a.Link {
		t.Fatalf("replay: %v", err)
	}
	// A stored-form record naming another operator, submitted by an authenticated one.
	_, err = c.AppendBy(bytes.Replace(a.Admission.Canonical, []byte("chieflab-launch@acme"), []byte("mallory"), 1), start, "operator:chieflab-launch@acme")
	var re *ledger.RecordError
	if !errors.As(err, &re) || re.Code != chieflab.CodeOperatorMismatch {
		t.Fatalf("got %v", err)
	}
	anon := replay(t, recs[:2], "")
	f := anon.State.(ledger.Auditor).Findings()
	if len(f) != 1 || f[0].Code != chieflab.CodeNoOperator || f[0].Severity != ledger.Notice {
		t.Fatalf("findings %+v", f)
	}
}
