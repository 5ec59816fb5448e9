package replay

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
)

// benchULID returns the ULID-shaped id suffix of the i-th Coordinator id: they sort in i's order.
func benchULID(i int) string {
	const digits = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	var b [26]byte
	for k := range b {
		b[k] = '0'
	}
	copy(b[:], "01HF")
	for k, n := len(b)-1, i; n > 0; k, n = k-1, n/32 {
		b[k] = digits[n%32]
	}
	return string(b[:])
}

// referenceLong returns a chain of about n records in the reference Coordinator's wire form:
// tasks created without ids and named later by the id of the response (every fourth one, by
// another creator, is never named, so the unbound queue grows with the chain).
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
		id := "tsk_" + benchULID(i)
		reqs = append(reqs, create("human:lead", "agent:drafter"),
			ref{"agent:drafter", "task.update", map[string]any{"task_id": id, "state": "in_progress"}},
			ref{"agent:drafter", "task.complete", map[string]any{"task_id": id, "output": map[string]any{"text": "done"}}})
	}
	out := make([]*chap.Record, len(reqs))
	for i, q := range reqs {
		p := map[string]any{"workspace": refWS, "from": q.from, "ts": ledger.Timestamp(t0.Add(time.Duration(i) * time.Second))}
		for k, v := range q.params {
			p[k] = v
		}
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": fmt.Sprintf("01REF%06d", i), "method": q.method, "params": p})
		if err != nil {
			tb.Fatal(err)
		}
		if out[i], err = chap.Parse(b); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// BenchmarkReplayReferenceLong replays long reference-form chains whose task ids are bound late.
func BenchmarkReplayReferenceLong(b *testing.B) {
	for _, n := range []int{4000, 8000} {
		recs := referenceLong(b, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for range b.N {
				rb := New(refWS, "")
				for i, r := range recs {
					rb.Add(uint64(i), r)
				}
				tl := rb.Timeline()
				for k, tk := range tl.Tasks {
					if bound := strings.HasPrefix(tk.ID, "tsk_"); bound != (k%4 != 3) {
						b.Fatalf("task %d bound as %q", k, tk.ID)
					}
				}
			}
		})
	}
}
