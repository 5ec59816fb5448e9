package chap

import (
	"fmt"
	"slices"
	"testing"

	"github.com/evident-log/evident/ledger"
)

// TestWhisperAnswerEcho: the reference Coordinator writes the whisper's task_id into a recorded
// whisper.answer after checking its signature. Such an answer verifies over the envelope as
// its sender signed it, and is marked; nothing else is let through by the rule.
func TestWhisperAnswerEcho(t *testing.T) {
	answer := func(params map[string]any) map[string]any {
		p := map[string]any{"whisper_id": "wsp-1", "answer_option": "yes"}
		for k, v := range params {
			p[k] = v
		}
		return refEnvelope(rAlice.uri, "whisper.answer", at(5), p)
	}
	// signThenSet signs m, then sets params.task_id as the Coordinator does.
	signThenSet := func(t testing.TB, m map[string]any, task string) []byte {
		signed(t, m, rAlice)
		m["params"].(map[string]any)["task_id"] = task
		return raw(t, m)
	}
	for _, tc := range []struct {
		name   string
		rec    func(t testing.TB) []byte
		want   ledger.Code
		marked bool
	}{
		{"task_id echoed into an answer signed without one", func(t testing.TB) []byte { return signThenSet(t, answer(nil), "tsk-1") }, "", true},
		{"task_id signed by the sender", func(t testing.TB) []byte { return signed(t, answer(map[string]any{"task_id": "tsk-1"}), rAlice) }, "", false},
		{"task_id replaced after signing", func(t testing.TB) []byte {
			return signThenSet(t, answer(map[string]any{"task_id": "tsk-1"}), "tsk-2")
		}, ledger.CodeBadSignature, false},
		{"another member added after signing", func(t testing.TB) []byte {
			m := answer(nil)
			signed(t, m, rAlice)
			m["params"].(map[string]any)["task_id"] = "tsk-1"
			m["params"].(map[string]any)["answer_option"] = "no"
			return raw(t, m)
		}, ledger.CodeBadSignature, false},
		{"task_id added to another method", func(t testing.TB) []byte {
			m := refEnvelope(rAlice.uri, "whisper.ask", at(5), map[string]any{"question": "q"})
			return signThenSet(t, m, "tsk-1")
		}, ledger.CodeBadSignature, false},
	} {
		// An offline replay builds no attributes, but lets through exactly what ingest does.
		for _, replay := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/replay=%v", tc.name, replay), func(t *testing.T) {
				c, err := ledger.NewChain(ws, Adapter{})
				if err != nil {
					t.Fatal(err)
				}
				if err := submit(&c, signed(t, refJoin(rAlice, at(0), "admin"), rAlice)); err != nil {
					t.Fatal(err)
				}
				next := c.Clone()
				next.Replay = replay
				a, err := next.Append(tc.rec(t), t0)
				if err != nil {
					t.Fatal(err)
				}
				if got := codeOf(a.Admission.Verify()); got != tc.want {
					t.Fatalf("verify: %q, want %q", got, tc.want)
				}
				if replay {
					if a.Admission.Attrs != nil {
						t.Fatalf("replay built attributes %v", a.Admission.Attrs)
					}
					return
				}
				if marked := slices.Contains(a.Admission.Attrs[AttrCoordinatorAdded], "params.task_id"); marked != tc.marked {
					t.Fatalf("coordinator_added %v, want %v", a.Admission.Attrs[AttrCoordinatorAdded], tc.marked)
				}
			})
		}
	}
}
