package owp_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/owpscenario"
	"github.com/evident-log/evident/internal/sigalg"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile/owp"
)

const env = "envelope:wf-coverage-prod:env-0001"

var start = time.Date(2026, 5, 7, 3, 14, 0, 0, time.UTC)

func replay(t *testing.T, recs [][]byte) (*ledger.Chain, error) {
	t.Helper()
	c, err := ledger.NewChain(env, owp.Adapter{})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		a, err := c.Append(r, start)
		if err != nil {
			return c, err
		}
		if err := a.Admission.Verify(); err != nil {
			return c, err
		}
		_ = i
	}
	return c, nil
}

func code(err error) ledger.Code {
	var re *ledger.RecordError
	if errors.As(err, &re) {
		return re.Code
	}
	return ""
}

func TestScenarioReplaysAndCloses(t *testing.T) {
	b, _, err := owpscenario.CoverageOutreach(env, start)
	if err != nil {
		t.Fatal(err)
	}
	c, err := replay(t, b.Records())
	if err != nil {
		t.Fatal(err)
	}
	if !c.Closed || c.Size != 14 || c.Head != b.Head() {
		t.Fatalf("closed %v size %d head %s, want closed, 14, %s", c.Closed, c.Size, c.Head, b.Head())
	}
	// Nothing after closure.
	if _, err := c.Append(b.Records()[3], start); code(err) != ledger.CodeClosed {
		t.Fatalf("after closure: %v", err)
	}
	// State survives persistence.
	js, _ := c.State.MarshalJSON()
	st, err := owp.Adapter{}.NewState(js)
	if err != nil || st.(*owp.State).Root == "" || st.(*owp.State).ClosedAt == nil || *st.(*owp.State).ClosedAt != 13 {
		t.Fatalf("restored state %+v %v", st, err)
	}
}

// TestRefusals: each rule, broken in one otherwise valid envelope.
func TestRefusals(t *testing.T) {
	b, team, err := owpscenario.CoverageOutreach(env, start)
	if err != nil {
		t.Fatal(err)
	}
	good := b.Records()
	sign := func(w *owpscenario.Worker, typ string, payload map[string]any, envelope string) []byte {
		raw, err := owpscenario.Sign(map[string]any{"owp": "2", "event_id": "evt:x:" + typ, "envelope": envelope, "type": typ,
			"ts": "2026-05-07T03:20:00Z", "actor": w.ID, "payload": payload}, w)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	intruder := &owpscenario.Worker{ID: team.RM.ID, Kid: "rm-2026-05", Alg: team.Analyst.Alg, Key: team.Analyst.Key}
	cases := []struct {
		name  string
		after int // valid records first
		rec   []byte
		want  ledger.Code
	}{
		{"wrong envelope", 3, sign(team.RM, owp.SignalReceived, map[string]any{}, "envelope:wf-coverage-prod:other"), ledger.CodeWrongChain},
		{"unknown type", 3, sign(team.RM, "IntentTeleported", map[string]any{}, env), owp.CodeEventType},
		{"unsigned", 3, []byte(`{"owp":"2","event_id":"e","envelope":"` + env + `","type":"SignalReceived","ts":"2026-05-07T03:20:00Z","actor":"` + team.RM.ID + `","payload":{}}`), ledger.CodeSignatureRequired},
		{"actor not a worker id", 3, []byte(`{"owp":"2","event_id":"e","envelope":"` + env + `","type":"SignalReceived","ts":"2026-05-07T03:20:00Z","actor":"agent:x","payload":{}}`), owp.CodeWorkerID},
		{"bad ts", 3, []byte(`{"owp":"2","event_id":"e","envelope":"` + env + `","type":"SignalReceived","ts":"yesterday","actor":"` + team.RM.ID + `","payload":{}}`), ledger.CodeBadTimestamp},
		{"worker re-bound to another key", 3, func() []byte {
			jwk, _ := sigalg.JWK(team.Analyst.Key.Public())
			jb, _ := canonical.Encode(jwk)
			var jm map[string]any
			json.Unmarshal(jb, &jm)
			return sign(team.RM, owp.WorkerKeyBound, map[string]any{"kid": team.RM.Kid, "jwk": jm}, env)
		}(), owp.CodeWorkerRebound},
		{"unknown key", 3, sign(&owpscenario.Worker{ID: team.RM.ID, Kid: "nope", Alg: team.RM.Alg, Key: team.RM.Key}, owp.SignalReceived, map[string]any{}, env), ledger.CodeUnknownKey},
		{"wrong key for kid", 3, sign(intruder, owp.SignalReceived, map[string]any{}, env), ledger.CodeBadSignature},
		{"second top-level intent", 5, sign(team.RM, owp.IntentCreated, map[string]any{"intent_id": "int:other", "provenance": map[string]any{"parent_intent": nil}}, env), owp.CodeLifecycle},
		{"sub-intent of a foreign parent", 5, sign(team.RM, owp.IntentCreated, map[string]any{"intent_id": "int:sub2", "provenance": map[string]any{"parent_intent": "int:elsewhere"}}, env), owp.CodeLifecycle},
		{"escalate an open intent", 7, sign(team.RM, owp.IntentEscalated, map[string]any{"intent_id": "int:" + env + ":credit-check"}, env), owp.CodeLifecycle},
		{"bad outcome", 5, sign(team.RM, owp.IntentResolved, map[string]any{"intent_id": "int:" + env + ":outreach", "outcome": "won"}, env), owp.CodeLifecycle},
		{"retrieval without version", 9, sign(team.Analyst, owp.CapabilityInvoked, map[string]any{"intent_id": "int:" + env + ":credit-check",
			"knowledge": map[string]any{"knowledge_base_id": "kb:x", "retrieved_content_hash": "sha-256:" + strings.Repeat("ab", 32)}}, env), owp.CodeKnowledgeRef},
		{"retrieval hash without algorithm", 9, sign(team.Analyst, owp.CapabilityInvoked, map[string]any{"intent_id": "int:" + env + ":credit-check",
			"knowledge": map[string]any{"knowledge_base_id": "kb:x", "knowledge_base_version": 1, "retrieved_content_hash": strings.Repeat("ab", 32)}}, env), owp.CodeKnowledgeRef},
		{"stale prev", 4, good[5], ledger.CodePrevMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := replay(t, good[:tc.after])
			if err != nil {
				t.Fatal(err)
			}
			before := c.Head
			_, err = replay2(c, tc.rec)
			if code(err) != tc.want {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
			if tc.want != ledger.CodeBadSignature && (c.Head != before || c.Size != uint64(tc.after)) {
				t.Fatal("a refusal changed the chain")
			}
		})
	}
}

func replay2(c *ledger.Chain, rec []byte) (*ledger.Appended, error) {
	a, err := c.Append(rec, start)
	if err != nil {
		return nil, err
	}
	return a, a.Admission.Verify()
}
