package chap

import (
	"encoding/json"
	"fmt"

	"github.com/evident-log/evident/ledger"
)

// Adapter is the CHAP 0.3 profile adapter for ledger chains.
type Adapter struct{}

// Name returns "chap/0.3".
func (Adapter) Name() string { return Profile }

// NewState returns an empty key history or restores a persisted one.
func (Adapter) NewState(persisted []byte) (ledger.ProfileState, error) {
	st := &State{Keys: NewKeyring()}
	if len(persisted) == 0 {
		return st, nil
	}
	if err := json.Unmarshal(persisted, st); err != nil {
		return nil, fmt.Errorf("chap state: %w", err)
	}
	if st.Keys == nil || st.Keys.Participants == nil {
		st.Keys = NewKeyring()
	}
	return st, nil
}

// State is a CHAP chain's profile state: its participants' key history.
type State struct {
	Keys *Keyring `json:"keys"`
}

// Clone returns a deep copy.
func (s *State) Clone() ledger.ProfileState { return &State{Keys: s.Keys.Clone()} }

// MarshalJSON persists the key history.
func (s *State) MarshalJSON() ([]byte, error) {
	type plain State
	return json.Marshal((*plain)(s))
}

// Admit parses one CHAP record, checks the workspace, the named predecessor and the key rules,
// and applies its key-lifecycle effects.
func (s *State) Admit(at ledger.Position, data []byte) (*ledger.Admission, error) {
	r, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return s.AdmitRecord(at, r)
}

// AdmitRecord is Admit for an already parsed record.
func (s *State) AdmitRecord(at ledger.Position, r *Record) (*ledger.Admission, error) {
	if r.Workspace != "" && r.Workspace != at.Chain {
		return nil, ledger.Refuse(ledger.CodeWrongChain, "record names workspace %.80q, not %.80q", r.Workspace, at.Chain)
	}
	if err := ledger.CheckPrev(r.PrevHash, at.Head); err != nil {
		return nil, err
	}
	check, err := s.Keys.AdmitAt(at.Seq, r)
	if err != nil {
		return nil, err
	}
	adm := &ledger.Admission{
		Canonical: r.Canonical,
		Method:    r.Method,
		Sender:    r.From,
		TS:        r.TS,
		PrevHash:  r.PrevHash,
		Attrs:     r.Attrs(),
	}
	if !r.Refusal && r.Method != "" {
		// Requests and notifications own their id; a response repeats its request's id.
		adm.RecordID = r.ID
	}
	if check != nil {
		adm.Signed = true
		adm.Verify = func() error {
			if !check.Verify() {
				return ledger.Refuse(ledger.CodeBadSignature, "ed25519 signature by %.80q key %.80q does not verify", r.From, check.Kid)
			}
			return check.VerifyPending()
		}
	}
	return adm, nil
}
