package chapscenario_test

import (
	"testing"

	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/ledger/profile/chap/replay"
)

// admitAll runs records through a real chap chain exactly as ingest and the verifier do,
// verifying every signature, and fails on the first refusal.
func admitAll(t *testing.T, ws string, recs [][]byte) (*ledger.Chain, int) {
	t.Helper()
	c, err := ledger.NewChain(ws, chap.Adapter{})
	if err != nil {
		t.Fatal(err)
	}
	signed := 0
	for i, r := range recs {
		a, err := c.Append(r, chapscenario.JourneyStart)
		if err != nil {
			t.Fatalf("record %d refused: %v\n%s", i, err, r)
		}
		if a.Admission.Verify != nil {
			if err := a.Admission.Verify(); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
			signed++
		}
	}
	return c, signed
}

func TestJourneysAdmitAndReplay(t *testing.T) {
	js := chapscenario.Journeys()
	if len(js) != 12 {
		t.Fatalf("%d journeys, want D.1–D.12", len(js))
	}
	for _, j := range js {
		t.Run(j.ID, func(t *testing.T) {
			b, err := chapscenario.BuildJourney(j)
			if err != nil {
				t.Fatal(err)
			}
			recs := b.Records()
			c, signed := admitAll(t, j.Workspace, recs)
			if signed != len(recs) {
				t.Fatalf("%d of %d records signed; every journey record is signed", signed, len(recs))
			}
			if c.Head != b.Head() {
				t.Fatalf("chain head %s, builder head %s", c.Head, b.Head())
			}
			tl, err := replay.ReplayRaw(j.Workspace, "", recs)
			if err != nil {
				t.Fatal(err)
			}
			if n := tl.Impossible(); n != 0 {
				t.Fatalf("%d impossible findings in a clean journey: %+v", n, tl.Findings)
			}
			var task *replay.Task
			for _, tk := range tl.Tasks {
				if tk.ID == j.Task {
					task = tk
				}
			}
			if task == nil || task.CreatedBy == "" {
				t.Fatalf("journey task %s not reconstructed: %+v", j.Task, tl.Tasks)
			}
			if len(tl.Answers) != 8 {
				t.Fatalf("%d §9.3 answers", len(tl.Answers))
			}
		})
	}
}

func TestSupportTriageStillAdmits(t *testing.T) {
	b, _, err := chapscenario.SupportTriage("wsp_demo", chapscenario.JourneyStart)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := admitAll(t, "wsp_demo", b.Records())
	st := c.State.(*chap.State)
	if st.Keys.Participants["human:alice@example.org"].Role != chap.RoleAdmin {
		t.Fatal("alice was not granted admin by the coordinator's join")
	}
}

// TestSupportTriageReference: the reference-form triage is admitted with every signature
// verified (the create through the bootstrap rule), the chain head is the builder's, and its
// replay finds nothing impossible.
func TestSupportTriageReference(t *testing.T) {
	b, ps, err := chapscenario.SupportTriageReference("wsp_demo", chapscenario.JourneyStart)
	if err != nil {
		t.Fatal(err)
	}
	recs := b.Records()
	c, signed := admitAll(t, "wsp_demo", recs)
	if signed != len(recs) || len(recs) != 10 || len(ps) != 3 {
		t.Fatalf("%d of %d records signed, %d participants", signed, len(recs), len(ps))
	}
	if c.Head != b.Head() {
		t.Fatalf("chain head %s, builder head %s", c.Head, b.Head())
	}
	st := c.State.(*chap.State)
	if len(st.Keys.Pending) != 0 || len(st.Findings()) != 0 {
		t.Fatalf("bootstrap unresolved: %+v %+v", st.Keys.Pending, st.Findings())
	}
	for _, r := range recs {
		rec, err := chap.Parse(r)
		if err != nil {
			t.Fatal(err)
		}
		if top, _ := rec.Object.Get("from"); top != nil {
			t.Fatalf("reference form carries from on top: %s", r)
		}
	}
	tl, err := replay.ReplayRaw("wsp_demo", "", recs)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Impossible() != 0 {
		t.Fatalf("impossible findings in the reference triage: %+v", tl.Findings)
	}
}

// TestLongForms: the long chain is admitted in both wire forms, every record signed.
func TestLongForms(t *testing.T) {
	for _, form := range []chapscenario.Form{chapscenario.Paper, chapscenario.Reference} {
		b, err := chapscenario.LongForm("wsp_long", 40, chapscenario.JourneyStart, form, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, signed := admitAll(t, "wsp_long", b.Records())
		if signed != 40 || c.Head != b.Head() {
			t.Fatalf("form %d: %d signed, head %s vs %s", form, signed, c.Head, b.Head())
		}
		if p := c.State.(*chap.State).Keys.Participants["human:alice@example.org"]; p == nil || p.Role != chap.RoleAdmin || len(p.Keys) != 1 {
			t.Fatalf("form %d: alice %+v", form, p)
		}
	}
}

// TestLongReplaysClean: the long chain the load tool sends is a valid CHAP story in both wire
// forms and at any length (a first task cut short, a last one cut short, none at all): every
// task an update names was created and assigned first, so the replay finds nothing at all —
// no impossible history, no warning, no info — and counts the tasks the chain holds.
func TestLongReplaysClean(t *testing.T) {
	cases := []struct {
		n, tasks int
	}{{3, 0}, {4, 0}, {5, 1}, {10, 1}, {11, 2}, {40, 4}, {123, 13}}
	for _, form := range []chapscenario.Form{chapscenario.Paper, chapscenario.Reference} {
		for _, c := range cases {
			b, err := chapscenario.LongForm("wsp_long", c.n, chapscenario.JourneyStart, form, nil)
			if err != nil {
				t.Fatal(err)
			}
			recs := b.Records()
			if len(recs) != c.n {
				t.Fatalf("form %d n %d: %d records", form, c.n, len(recs))
			}
			admitAll(t, "wsp_long", recs)
			tl, err := replay.ReplayRaw("wsp_long", "", recs)
			if err != nil {
				t.Fatal(err)
			}
			if len(tl.Findings) != 0 {
				t.Fatalf("form %d n %d: %d finding(s), first %+v", form, c.n, len(tl.Findings), tl.Findings[0])
			}
			if len(tl.Tasks) != c.tasks {
				t.Fatalf("form %d n %d: %d task(s), want %d", form, c.n, len(tl.Tasks), c.tasks)
			}
			for _, tk := range tl.Tasks {
				if tk.CreatedBy != "human:alice@example.org" || len(tk.Assignees) != 1 {
					t.Fatalf("form %d n %d: task %+v not created and assigned", form, c.n, tk)
				}
			}
		}
	}
}
