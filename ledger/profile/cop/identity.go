package cop

import "github.com/evident-log/evident/ledger"

// Identify reads what a COP event would be stored as (ledger.Identifier): its canonical
// bytes and its event id.
func (s *State) Identify(_ ledger.Position, data []byte) (*ledger.Identity, error) {
	e, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return &ledger.Identity{Canonical: e.Canonical, RecordID: e.ID}, nil
}
