package chap

import (
	"fmt"

	"github.com/evident-log/evident/ledger"
)

// Identify reads what a CHAP record would be stored as (ledger.Identifier): the envelope (or
// recorded refusal) as hashed, an audit entry's seq and prev_hash and its metadata as stored
// (Admission.Meta), an envelope's evidence.prev_hash, and the id a request or notification owns.
func (s *State) Identify(_ ledger.Position, data []byte) (*ledger.Identity, error) {
	r, err := Parse(data)
	if err != nil {
		return nil, err
	}
	id := &ledger.Identity{Canonical: r.Canonical, Seq: r.Seq, PrevHash: r.PrevHash, Meta: r.Meta, Parsed: r}
	if !r.Refusal && r.Method != "" {
		id.RecordID = r.ID
	}
	return id, nil
}

// AdmitIdentified implements ledger.IdentifiedAdmitter: Admit of the record Identify
// parsed, from that parse.
func (s *State) AdmitIdentified(at ledger.Position, id *ledger.Identity) (*ledger.Admission, error) {
	r, ok := id.Parsed.(*Record)
	if !ok {
		return nil, fmt.Errorf("chap: an identity read by another profile (%T)", id.Parsed)
	}
	return s.AdmitRecord(at, r)
}
