package cheq

import (
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
)

// Identify reads what a CHEQ record would be stored as (ledger.Identifier): its canonical
// bytes. CHEQ records name no position; a resubmission is recognised by its bytes.
func (s *State) Identify(_ ledger.Position, data []byte) (*ledger.Identity, error) {
	_, c, err := parseRecord(data)
	if err != nil {
		return nil, err
	}
	return &ledger.Identity{Canonical: c}, nil
}

// parseRecord parses a CHEQ record strictly: the object and its canonical bytes.
func parseRecord(data []byte) (*canonical.Object, []byte, error) {
	v, err := canonical.Parse(data, canonical.Options{})
	if err != nil {
		return nil, nil, refuse(err)
	}
	o, ok := v.(*canonical.Object)
	if !ok {
		return nil, nil, ledger.Refuse(ledger.CodeMalformed, "a CHEQ record is a JSON object")
	}
	c, err := canonical.Encode(o)
	if err != nil {
		return nil, nil, refuse(err)
	}
	return o, c, nil
}
