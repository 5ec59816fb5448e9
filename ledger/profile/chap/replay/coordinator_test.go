package replay_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/ledger/profile/chap/replay"
)

// TestReferenceCoordinatorLogs: the audit logs the CHAP reference coordinators (TypeScript and
// Python 0.2.10) wrote for journeys that call every method they implement replay into a
// timeline and the §9.3 answers without an impossible history, and every task a later call
// names is one the log created.
func TestReferenceCoordinatorLogs(t *testing.T) {
	for _, impl := range []string{"ts", "py"} {
		for _, journey := range []string{"small", "unchained-prefix", "full"} {
			t.Run(impl+"/"+journey, func(t *testing.T) {
				f, err := os.Open(filepath.Join("..", "..", "..", "..", "testvectors", "chap-reference", impl, journey+".audit.jsonl"))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				var ws string
				var recs []*chap.Record
				sc := bufio.NewScanner(f)
				sc.Buffer(nil, 1<<20)
				for sc.Scan() {
					if len(bytes.TrimSpace(sc.Bytes())) == 0 {
						continue
					}
					r, err := chap.Parse(sc.Bytes())
					if err != nil {
						t.Fatalf("entry %d: %v", len(recs), err)
					}
					ws = r.Workspace
					recs = append(recs, r)
				}
				if err := sc.Err(); err != nil {
					t.Fatal(err)
				}
				tl := replay.Replay(ws, "", recs)
				if n := tl.Impossible(); n != 0 {
					t.Fatalf("%d impossible histories in a reference Coordinator's log: %+v", n, tl.Findings)
				}
				for _, f := range tl.Findings {
					if f.Code == replay.CodeUnknownTask {
						t.Errorf("seq %d: %s", f.Seq, f.Detail)
					}
				}
				if len(tl.Tasks) == 0 || len(tl.Answers) != 8 {
					t.Fatalf("%d tasks, %d §9.3 answers", len(tl.Tasks), len(tl.Answers))
				}
			})
		}
	}
}
