package chap

import (
	"bytes"
	"slices"

	"github.com/evident-log/evident/ledger"
)

// The optional ledger capabilities CHAP implements: its records name their predecessor, its
// chains can be cut into case slices, and its state holds the participants' key history.
var (
	_ ledger.Linked    = Adapter{}
	_ ledger.Sliceable = Adapter{}
	_ ledger.KeyHolder = (*State)(nil)
)

// PredecessorField returns "evidence.prev_hash", the field by which a CHAP record names its
// predecessor in the Coordinator's evidence chain.
func (Adapter) PredecessorField() string { return "evidence.prev_hash" }

// KeyMethods names the methods of the records that can shape the key history.
func (Adapter) KeyMethods() []string {
	return []string{"participant.join", "participant.rotate_key", "participant.revoke_key"}
}

// KeyRecord reports whether an admitted record shapes the key history (a join, key rotation
// or revocation, not the recorded refusal of one): a case slice carries every such record.
func (Adapter) KeyRecord(a *ledger.Admission) bool {
	if !slices.Contains(Adapter{}.KeyMethods(), a.Method) {
		return false
	}
	return !bytes.HasPrefix(a.Canonical, []byte(`{"outcome"`))
}

// Participants returns the key history replayed so far, sorted by URI; nil when there is none.
func (s *State) Participants() []ledger.Participant {
	if s.Keys == nil {
		return nil
	}
	var out []ledger.Participant
	for _, p := range s.Keys.Members() {
		lp := ledger.Participant{URI: p.URI, Role: p.Role, Keys: []ledger.ParticipantKey{}}
		for _, k := range p.Keys {
			lp.Keys = append(lp.Keys, ledger.ParticipantKey{Kid: k.Kid, From: k.From, Until: k.Until, Revoked: k.Revoked})
		}
		out = append(out, lp)
	}
	return out
}
