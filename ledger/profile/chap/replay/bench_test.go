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

// referenceReviews returns a chain of about n records of a reference Coordinator's audit log
// in which every task's draft (about 2 KB) is sent for review, overridden with a diff and
// approved: the artefacts' digests and the diffs are most of the replay's work.
func referenceReviews(tb testing.TB, n int) []*chap.Record {
	reqs := []ref{
		{"human:owner", "workspace.create", map[string]any{"profiles": []string{"core/1.0", "review/1.0"}}},
		{"human:owner", "participant.join", map[string]any{"type": "human", "role": "admin"}},
		{"human:lead", "participant.join", map[string]any{"type": "human", "role": "participant"}},
		{"agent:drafter", "participant.join", map[string]any{"type": "agent"}},
		{"human:rev", "participant.join", map[string]any{"type": "human", "role": "reviewer"}},
	}
	draft := map[string]any{"body": strings.Repeat("Refund of 100 EUR issued. ", 80), "refund_eur": 100}
	edited := map[string]any{"body": "Replacement sent."}
	for len(reqs) < n {
		id := idAt("tsk_", len(reqs), 0)
		reqs = append(reqs, create("human:lead", "agent:drafter"),
			ref{"agent:drafter", "review.request", map[string]any{"task_id": id, "artefact": draft, "to": []string{"human:rev"}}},
			ref{"human:rev", "decide.override", map[string]any{"task_id": id, "rationale": "replacement first",
				"diff": []any{map[string]any{"op": "replace", "path": "/body", "value": "Replacement sent."}, map[string]any{"op": "remove", "path": "/refund_eur"}}}},
			ref{"human:rev", "decide.approve", map[string]any{"task_id": id, "approved_artefact_digest": coordinatorHash(edited)}})
	}
	return refRecords(tb, reqs, true)
}

// BenchmarkReplayReviews replays chains of reviewed, overridden and approved drafts.
func BenchmarkReplayReviews(b *testing.B) {
	recs := referenceReviews(b, 4000)
	if tl := Replay(refWS, "", recs); tl.Impossible() != 0 || len(tl.NotEvaluated) != 0 {
		b.Fatalf("%d impossible, %d not evaluated: %+v", tl.Impossible(), len(tl.NotEvaluated), tl.Findings)
	}
	b.ResetTimer()
	for range b.N {
		Replay(refWS, "", recs)
	}
}
