package chieflab

import "github.com/evident-log/evident/ledger"

// Identify reads what a ChiefLab record would be stored as (ledger.Identifier): the wrapped
// record with the submitter at.Submitter. ChiefLab records name no position; a resubmission
// is recognised by its bytes.
func (s *State) Identify(at ledger.Position, data []byte) (*ledger.Identity, error) {
	_, c, _, err := wrapped(at, data)
	if err != nil {
		return nil, err
	}
	return &ledger.Identity{Canonical: c}, nil
}
