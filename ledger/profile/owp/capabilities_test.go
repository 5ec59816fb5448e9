package owp_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/evident-log/evident/internal/scenario/owpscenario"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/owp"
)

// TestReferencedID reads every event of a real envelope alone and finds the id the chain
// admitted it under; a record that is not an OWP event has none.
func TestReferencedID(t *testing.T) {
	b, _, err := owpscenario.CoverageOutreach(env, start)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ledger.NewChain(env, owp.Adapter{})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range b.Records() {
		a, err := c.Append(r, start)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		id, err := owp.Adapter{}.ReferencedID(r)
		if err != nil || id == "" || id != a.Admission.RecordID {
			t.Fatalf("record %d: ReferencedID %q, %v; admitted as %q", i, id, err, a.Admission.RecordID)
		}
	}
	for _, bad := range []string{`[]`, `{"owp":"0"}`, `not json`} {
		if _, err := (owp.Adapter{}).ReferencedID([]byte(bad)); err == nil {
			t.Errorf("ReferencedID(%s) has no error", bad)
		}
	}
	if got := (owp.Adapter{}).ReferenceCheck(); got != owp.CheckProvenance {
		t.Errorf("ReferenceCheck %q", got)
	}
}

// TestReferences replays an envelope whose top-level Intent names prior envelopes and reads
// its references back through the capability the verifier uses.
func TestReferences(t *testing.T) {
	_, team, err := owpscenario.CoverageOutreach(env, start)
	if err != nil {
		t.Fatal(err)
	}
	const follow = "envelope:wf-coverage-prod:env-0002"
	root := "sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		name string
		prov map[string]any
		want []ledger.Reference
	}{
		{"no prior envelope", map[string]any{"parent_intent": nil}, nil},
		{"prior envelope only", map[string]any{"parent_intent": nil, "prior_envelope": env},
			[]ledger.Reference{{Seq: 1, Chain: env}}},
		{"prior event and root", map[string]any{"parent_intent": nil, "prior_envelope": env, "prior_event": "evt:" + env + ":0014", "prior_root": root},
			[]ledger.Reference{{Seq: 1, Chain: env, Event: "evt:" + env + ":0014", Root: root}}},
	}
	for _, tc := range tests {
		b := owpscenario.NewBuilder(follow, start)
		if err := b.Bind(team.RM); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Event(team.RM, owp.IntentCreated, map[string]any{"intent_id": "int:" + follow + ":follow-up",
			"kind": "intent:bank-au:coverage:customer-query/v1", "provenance": tc.prov}); err != nil {
			t.Fatal(err)
		}
		c, err := ledger.NewChain(follow, owp.Adapter{})
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range b.Records() {
			if _, err := c.Append(r, start); err != nil {
				t.Fatalf("%s: record %d: %v", tc.name, i, err)
			}
		}
		if got := c.State.(ledger.Referrer).References(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: References %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
