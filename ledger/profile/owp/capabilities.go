package owp

import "github.com/evident-log/evident/ledger"

// The optional ledger capabilities OWP-2 implements: an envelope references prior envelopes
// (§3.6.4 provenance), which the verifier resolves across the chains of a bundle.
var (
	_ ledger.CrossChain = Adapter{}
	_ ledger.Referrer   = (*State)(nil)
)

// CheckProvenance is the verifier check that resolves an envelope's provenance references.
const CheckProvenance ledger.CheckName = "owp.provenance"

// ReferenceCheck returns CheckProvenance.
func (Adapter) ReferenceCheck() ledger.CheckName { return CheckProvenance }

// ReferencedID returns the event_id of an OWP event, which provenance.prior_event names.
func (Adapter) ReferencedID(record []byte) (string, error) {
	e, err := Parse(record)
	if err != nil {
		return "", err
	}
	return e.ID, nil
}

// References returns the envelope's provenance references to other envelopes, in seq order.
func (s *State) References() []ledger.Reference {
	if len(s.Priors) == 0 {
		return nil
	}
	out := make([]ledger.Reference, len(s.Priors))
	for i, p := range s.Priors {
		out[i] = ledger.Reference{Seq: p.Seq, Chain: p.Envelope, Event: p.Event, Root: p.Root}
	}
	return out
}
