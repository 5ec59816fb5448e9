package replay

import (
	"fmt"
	"strings"
	"testing"

	"github.com/evident-log/evident/ledger/profile/chap"
)

// referenceLong returns a chain of about n records of a reference Coordinator's audit log:
// tasks created without ids and named later by the id its response gave, drawn while the
// create was handled (every fourth one, by another creator, is never named).
func referenceLong(tb testing.TB, n int) []*chap.Record {
	var reqs []ref
	reqs = append(reqs,
		ref{"human:owner", "workspace.create", map[string]any{"profiles": []string{"core/1.0"}}},
		ref{"human:owner", "participant.join", map[string]any{"type": "human", "role": "admin"}},
		ref{"human:lead", "participant.join", map[string]any{"type": "human", "role": "participant"}},
		ref{"agent:drafter", "participant.join", map[string]any{"type": "agent"}},
	)
	for i := 0; len(reqs) < n; i++ {
		if i%4 == 3 {
			reqs = append(reqs, create("human:owner", "human:lead")) // never named
			continue
		}
		id := idAt("tsk_", len(reqs), 0)
		reqs = append(reqs, create("human:lead", "agent:drafter"),
			ref{"agent:drafter", "task.update", map[string]any{"task_id": id, "state": "in_progress"}},
			ref{"agent:drafter", "task.complete", map[string]any{"task_id": id, "output": map[string]any{"text": "done"}}})
	}
	return refRecords(tb, reqs, true)
}

// BenchmarkReplayReferenceLong replays long reference-form chains whose task ids are bound late.
func BenchmarkReplayReferenceLong(b *testing.B) {
	for _, n := range []int{4000, 8000} {
		recs := referenceLong(b, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for range b.N {
				tl := Replay(refWS, "", recs)
				for k, tk := range tl.Tasks {
					if bound := strings.HasPrefix(tk.ID, "tsk_"); bound != (k%4 != 3) {
						b.Fatalf("task %d bound as %q", k, tk.ID)
					}
				}
			}
		})
	}
}
