package chap

import "github.com/evident-log/evident/ledger"

// Identify reads what a CHAP record would be stored as (ledger.Identifier): the envelope (or
// recorded refusal) as hashed, an audit entry's seq and prev_hash and its metadata as stored
// (Admission.Meta), an envelope's evidence.prev_hash, and the id a request or notification owns.
func (s *State) Identify(_ ledger.Position, data []byte) (*ledger.Identity, error) {
	r, err := Parse(data)
	if err != nil {
		return nil, err
	}
	id := &ledger.Identity{Canonical: r.Canonical, Seq: r.Seq, PrevHash: r.PrevHash, Meta: r.Meta}
	if !r.Refusal && r.Method != "" {
		id.RecordID = r.ID
	}
	return id, nil
}
