package verifier

import (
	"fmt"
	"strconv"

	"github.com/evident-log/evident/bundle"
)

// NotEvidence is something a bundle states that no signature or digest binds and no check
// relies on. A report lists it so that a reader does not take it for verified: changing it
// changes no verdict.
type NotEvidence struct {
	// Field names it: "manifest.producer", "manifest.chains[0].slice.selected", …
	Field string `json:"field"`
	// Value is what the bundle says, as text.
	Value string `json:"value"`
	// Why says what it is and why nothing checks it.
	Why string `json:"why"`
}

// notEvidence lists what the bundle states that is not evidence (docs/bundle.md, "What is
// evidence"): the manifest's producer and creation time, every entry's arrival time, and a
// case slice's scope and counts when the bundle holds one.
func notEvidence(m *bundle.Manifest) []NotEvidence {
	out := []NotEvidence{
		{Field: "manifest.producer", Value: m.Producer, Why: "the software the exporter says it is; nothing signs it"},
		{Field: "manifest.created", Value: m.Created, Why: "when the exporter says it wrote the bundle (each entry's arrival and the seals' timestamps say when the evidence arose); nothing signs it"},
	}
	if m.Scope.Task != "" {
		out = append(out, NotEvidence{Field: "manifest.scope.task", Value: m.Scope.Task,
			Why: "the task the exporter says it cut the slice for; which entries it selected is not checked against it"})
	}
	if m.Scope.LogicalID != "" {
		out = append(out, NotEvidence{Field: "manifest.scope.logical_id", Value: m.Scope.LogicalID,
			Why: "the artefact the exporter says it cut the slice for; which entries it selected is not checked against it"})
	}
	for _, c := range m.Chains {
		file := bundle.EntriesFile(c.Dir)
		if c.Slice != nil {
			file = bundle.SliceFile(c.Dir)
		}
		out = append(out, NotEvidence{Field: file + " arrival", Value: "every line",
			Why: "the service's clock when each entry arrived; no link, signature or seal covers it (a record's own timestamps are signed with it)"})
	}
	for i, c := range m.Chains {
		if c.Slice == nil {
			continue
		}
		out = append(out,
			NotEvidence{Field: fmt.Sprintf("manifest.chains[%d].slice.selected", i), Value: strconv.FormatUint(c.Slice.Selected, 10),
				Why: "how many entries the exporter says matched the scope; the entries themselves are what is checked"},
			NotEvidence{Field: fmt.Sprintf("manifest.chains[%d].slice.context", i), Value: strconv.FormatUint(c.Slice.Context, 10),
				Why: "how many key records the exporter says it added for the signatures; the entries themselves are what is checked"})
	}
	return out
}
