package chap

import (
	"maps"
	"slices"
	"testing"

	"github.com/evident-log/evident/ledger"
)

func TestAttrs(t *testing.T) {
	cases := []struct {
		name string
		rec  string
		want map[string][]string
	}{
		{"task and tags on a decision",
			`{"jsonrpc":"2.0","id":"1","method":"decide.override","from":"human:a","params":{"task_id":"t1","logical_id":"l1","tags":["x","y","x",3]}}`,
			map[string][]string{ledger.AttrOutcome: {OutcomeAccepted}, ledger.AttrTask: {"t1"}, ledger.AttrLogicalID: {"l1"}, ledger.AttrTag: {"x", "y"}}},
		{"logical id and tags of a submitted artefact",
			`{"jsonrpc":"2.0","id":"2","method":"artefact.submit","params":{"task_id":"t1","artefact":{"id":"a1","logical_id":"l2","tags":["draft"]}}}`,
			map[string][]string{ledger.AttrOutcome: {OutcomeAccepted}, ledger.AttrTask: {"t1"}, ledger.AttrLogicalID: {"l2"}, ledger.AttrTag: {"draft"}}},
		{"params logical id wins over the artefact's",
			`{"jsonrpc":"2.0","id":"3","method":"decide.approve","params":{"logical_id":"top","artefact":{"logical_id":"inner"}}}`,
			map[string][]string{ledger.AttrOutcome: {OutcomeAccepted}, ledger.AttrLogicalID: {"top"}}},
		{"no params", `{"jsonrpc":"2.0","id":"4","method":"workspace.describe"}`, map[string][]string{ledger.AttrOutcome: {OutcomeAccepted}}},
		{"a response", `{"jsonrpc":"2.0","id":"4","result":{"task_id":"not-params"}}`, map[string][]string{ledger.AttrOutcome: {OutcomeAccepted}}},
		{"non-string task id and empty values are ignored",
			`{"jsonrpc":"2.0","id":"5","method":"task.create","params":{"task_id":7,"logical_id":"","tags":"x"}}`,
			map[string][]string{ledger.AttrOutcome: {OutcomeAccepted}}},
		{"a refusal reads the refused request",
			`{"outcome":{"code":"forbidden"},"request":{"jsonrpc":"2.0","id":"x1","method":"task.complete","params":{"task_id":"t9","tags":["late"]}}}`,
			map[string][]string{ledger.AttrOutcome: {OutcomeRefused}, ledger.AttrTask: {"t9"}, ledger.AttrTag: {"late"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Parse([]byte(c.rec))
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Attrs(); !maps.EqualFunc(got, c.want, slices.Equal) {
				t.Fatalf("Attrs = %v, want %v", got, c.want)
			}
		})
	}
}
