package owp

import "github.com/evident-log/evident/ledger"

// Identify reads what an OWP-2 event would be stored as (ledger.Identifier): its canonical
// bytes, the predecessor it names and its event id.
func (s *State) Identify(_ ledger.Position, data []byte) (*ledger.Identity, error) {
	e, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return &ledger.Identity{Canonical: e.Canonical, PrevHash: e.Prev, RecordID: e.ID}, nil
}
