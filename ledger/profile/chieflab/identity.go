package chieflab

import (
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
)

// Identify reads what a ChiefLab record would be stored as (ledger.Identifier): the wrapped
// record with the submitter at.Submitter. ChiefLab records name no position; a resubmission
// is recognised by its bytes.
func (s *State) Identify(at ledger.Position, data []byte) (*ledger.Identity, error) {
	rec, _, err := wrapped(at, data)
	if err != nil {
		return nil, err
	}
	c, err := canonical.Encode(rec)
	if err != nil {
		return nil, ledger.Refuse(ledger.CodeMalformed, "canonical encoding: %v", err)
	}
	return &ledger.Identity{Canonical: c}, nil
}
