package replay_test

import (
	"slices"
	"testing"

	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/ledger/profile/chap/replay"
	"github.com/evident-log/evident/testvectors/chapref"
)

// readAudit parses a journey's audit log as the coordinator wrote it.
func readAudit(t *testing.T, dir, journey string) []*chap.Record {
	t.Helper()
	lines, err := chapref.Lines(dir, journey+".audit.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]*chap.Record, len(lines))
	for i, l := range lines {
		if recs[i], err = chap.Parse(l); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	return recs
}

// createdBy reads from a journey's requests.jsonl which audit entry created each id the
// coordinator returned in a result.
func createdBy(t *testing.T, dir, journey string, recs []*chap.Record) map[string]uint64 {
	t.Helper()
	seqOf := map[string]uint64{}
	for i, r := range recs {
		seqOf[r.ID] = uint64(i)
	}
	reqs, err := chapref.Requests(dir, journey)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, r := range reqs {
		if id := r.CreatedID(); id != "" {
			if seq, recorded := seqOf[r.EnvelopeID()]; recorded {
				out[id] = seq
			}
		}
	}
	return out
}

// TestReferenceCoordinatorLogs: the audit logs the CHAP reference coordinators (TypeScript and
// Python 0.2.10) wrote — journeys that call every method they implement, tasks created in
// bursts and named out of order, every optional profile, deep nesting and multi-MiB strings,
// in their deterministic test mode and recorded live with a real clock — replay with no
// impossible history and no warning, every id they name is one the log created, and on the
// live logs (real clock) every id named is bound to its creation.
func TestReferenceCoordinatorLogs(t *testing.T) {
	for _, d := range []struct {
		dir      string
		journeys []string
	}{{"ts", chapref.Journeys}, {"py", chapref.Journeys}, {"live-ts", chapref.LiveJourneys}, {"live-py", chapref.LiveJourneys}} {
		dir := d.dir
		for _, journey := range d.journeys {
			t.Run(dir+"/"+journey, func(t *testing.T) {
				recs := readAudit(t, dir, journey)
				tl := replay.Replay(recs[0].Workspace, "", recs)
				for _, f := range tl.Findings {
					if f.Severity != replay.Info {
						t.Errorf("%s at seq %d: %s", f.Code, f.Seq, f.Detail)
					}
				}
				for _, n := range tl.NotEvaluated {
					if n.Code != replay.NoteIDOpen && n.Code != replay.NoteCheck {
						t.Errorf("not evaluated at seq %d (%s): %s", n.Seq, n.Code, n.Detail)
					}
				}
				if len(tl.Tasks) == 0 || len(tl.Answers) != 8 {
					t.Fatalf("%d tasks, %d §9.3 answers", len(tl.Tasks), len(tl.Answers))
				}
				// Every binding is the truth, and every open id has the truth among its candidates:
				// the coordinator's responses (requests.jsonl) say which call created which id.
				truth := createdBy(t, dir, journey, recs)
				bound, open := 0, 0
				for _, tk := range tl.Tasks {
					want, named := truth[tk.ID]
					switch {
					case tk.IDInferred:
						bound++
						if !named || *tk.CreatedSeq != want {
							t.Errorf("task %s bound to seq %d; the coordinator created it at seq %d", tk.ID, *tk.CreatedSeq, want)
						}
					case len(tk.CreatedAtOneOf) > 0:
						open++
						if !slices.Contains(tk.CreatedAtOneOf, want) {
							t.Errorf("task %s may come from %v; the coordinator created it at seq %d", tk.ID, tk.CreatedAtOneOf, want)
						}
					case tk.CreatedSeq == nil:
						t.Errorf("task %s is named, and neither bound nor open", tk.ID)
					}
				}
				for _, d := range tl.Deliberations {
					if want, ok := truth[d.ID]; d.IDInferred && (!ok || d.Seq != want) {
						t.Errorf("deliberation %s bound to seq %d; the coordinator created it at seq %d", d.ID, d.Seq, want)
					}
				}
				t.Logf("%d task ids bound to their creation, %d open (drawn within the same millisecond window)", bound, open)
			})
		}
	}
}
