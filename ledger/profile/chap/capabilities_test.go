package chap

import (
	"testing"

	"github.com/evident-log/evident/ledger"
)

func TestKeyRecord(t *testing.T) {
	tests := []struct {
		method    string
		canonical string
		want      bool
	}{
		{"participant.join", `{"from":"human:alice"}`, true},
		{"participant.rotate_key", `{"from":"human:alice"}`, true},
		{"participant.revoke_key", `{"from":"human:alice"}`, true},
		{"participant.join", `{"outcome":{"error":"refused"}}`, false}, // a recorded refusal shapes no key
		{"task.update", `{"from":"human:alice"}`, false},
		{"", `{}`, false},
	}
	for _, tc := range tests {
		a := &ledger.Admission{Method: tc.method, Canonical: []byte(tc.canonical)}
		if got := (Adapter{}).KeyRecord(a); got != tc.want {
			t.Errorf("KeyRecord(%s, %s) = %v, want %v", tc.method, tc.canonical, got, tc.want)
		}
	}
}

// TestParticipantsMirrorKeyring replays the key lifecycle and checks that the capability the
// verifier reads reports the keyring as it is: every member, sorted, with every key window.
func TestParticipantsMirrorKeyring(t *testing.T) {
	c := newKeysChain(t)
	runSteps(t, &c, lifecycle())
	st := c.State.(*State)
	got := st.Participants()
	members := st.Keys.Members()
	if len(got) != len(members) || len(got) == 0 {
		t.Fatalf("%d participants, keyring has %d", len(got), len(members))
	}
	for i, m := range members {
		p := got[i]
		if p.URI != m.URI || p.Role != m.Role || len(p.Keys) != len(m.Keys) {
			t.Fatalf("participant %d: %+v, keyring %+v", i, p, m)
		}
		for j, k := range m.Keys {
			pk := p.Keys[j]
			if pk.Kid != k.Kid || !pk.From.Equal(k.From) || !pk.Until.Equal(k.Until) || pk.Revoked != k.Revoked {
				t.Errorf("%s key %d: %+v, keyring %+v", m.URI, j, pk, k)
			}
		}
	}
	if (&State{}).Participants() != nil {
		t.Error("a state without a keyring reports participants")
	}
	if (Adapter{}).PredecessorField() != "evidence.prev_hash" {
		t.Error("PredecessorField")
	}
}
