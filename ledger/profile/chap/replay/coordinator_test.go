package replay_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/ledger/profile/chap/replay"
)

// refDir is where the CHAP reference coordinators' own audit logs are kept.
var refDir = filepath.Join("..", "..", "..", "..", "testvectors", "chap-reference")

// readAudit reads a journey's audit.jsonl (or its .gz) as the coordinator wrote it; ok is
// false when the directory holds no such journey.
func readAudit(t *testing.T, dir, journey string) (recs []*chap.Record, ok bool) {
	t.Helper()
	path := filepath.Join(refDir, dir, journey+".audit.jsonl")
	var r io.Reader
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		if f, err = os.Open(path + ".gz"); errors.Is(err, fs.ErrNotExist) {
			return nil, false
		}
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	} else if err != nil {
		t.Fatal(err)
	} else {
		r = f
	}
	defer f.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		rec, err := chap.Parse(sc.Bytes())
		if err != nil && journey == "deep" {
			t.Skipf("entry %d: %v", len(recs), err)
		}
		if err != nil {
			t.Fatalf("entry %d: %v", len(recs), err)
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return recs, true
}

// createdBy reads from a journey's requests.jsonl which audit entry created each id the
// coordinator returned (task_id, new_task_id, deliberation_id, handoff_id, whisper_id).
func createdBy(t *testing.T, dir, journey string, recs []*chap.Record) map[string]uint64 {
	t.Helper()
	seqOf := map[string]uint64{}
	for i, r := range recs {
		seqOf[r.ID] = uint64(i)
	}
	data, err := os.ReadFile(filepath.Join(refDir, dir, journey+".requests.jsonl"))
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("no requests.jsonl")
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var req struct {
			Method   string          `json:"method"`
			Accepted bool            `json:"accepted"`
			Envelope json.RawMessage `json:"envelope"`
			Response struct {
				Result map[string]any `json:"result"`
			} `json:"response"`
		}
		if err := json.Unmarshal(line, &req); err != nil {
			t.Fatal(err)
		}
		if !req.Accepted || req.Method == "task.update" {
			continue
		}
		var env struct {
			ID string `json:"id"`
		}
		raw := req.Envelope
		var s string
		if json.Unmarshal(raw, &s) == nil {
			raw = []byte(s)
		}
		if err := json.Unmarshal(raw, &env); err != nil {
			t.Fatal(err)
		}
		seq, recorded := seqOf[env.ID]
		if !recorded {
			continue
		}
		key := map[string]string{"task.create": "task_id", "escalate.raise": "new_task_id", "control.supersede": "new_task_id",
			"deliberate.open": "deliberation_id", "handoff.propose": "handoff_id", "whisper.ask": "whisper_id"}[req.Method]
		if id, ok := req.Response.Result[key].(string); ok && key != "" {
			out[id] = seq
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
	all := []string{"small", "unchained-prefix", "full", "burst", "profiles", "deep"}
	live := []string{"burst", "profiles"}
	for _, d := range []struct {
		dir      string
		journeys []string
	}{{"ts", all}, {"py", all}, {"live-ts", live}, {"live-py", live}} {
		dir := d.dir
		for _, journey := range d.journeys {
			t.Run(dir+"/"+journey, func(t *testing.T) {
				recs, ok := readAudit(t, dir, journey)
				if !ok {
					t.Fatalf("no %s journey in %s", journey, dir)
				}
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
