package chap

import (
	"encoding/json"
	"fmt"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
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

// State is a CHAP chain's profile state: its participants' key history and the
// Coordinator's own evidence chain.
type State struct {
	Keys *Keyring `json:"keys"`
	Own  OwnChain `json:"own,omitzero"`
}

// OwnChain is the Coordinator's own evidence chain (audit-scitt/1.0) as Evident follows it.
// While no record has named a predecessor, it is taken to be Evident's chain: a record naming
// the chain head begins it there, and from then on its head is Evident's. Records that came
// as audit entries without prev_hash before that are its unchained prefix: a Coordinator that
// switched chaining on after them starts its chain again from the zero hash, and its head
// then differs from Evident's (Diverged) and is kept in Head.
type OwnChain struct {
	Begun     bool        `json:"begun,omitempty"`
	From      uint64      `json:"from,omitempty"`      // seq of the first record it covers
	Unchained uint64      `json:"unchained,omitempty"` // audit entries without prev_hash before it began
	Diverged  bool        `json:"diverged,omitempty"`  // it began from the zero hash after an unchained prefix
	Head      ledger.Link `json:"head,omitzero"`       // its head after seq Next-1, when Diverged
	Next      uint64      `json:"next,omitempty"`      // the seq after the last record it followed, when Diverged
}

// Clone returns a deep copy.
func (s *State) Clone() ledger.ProfileState { return &State{Keys: s.Keys.Clone(), Own: s.Own} }

// MarshalJSON persists the key history: the JSON encoding/json would write for State's
// fields, written directly (statejson.go).
func (s *State) MarshalJSON() ([]byte, error) {
	n := 64
	if s.Keys != nil {
		for _, p := range s.Keys.Participants {
			if p != nil {
				n += 64 + len(p.URI) + len(p.Role) + 160*len(p.Keys)
			}
		}
		n += 160 * len(s.Keys.Pending)
	}
	return appendState(make([]byte, 0, n), s)
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
	own, err := s.Own.next(at, r)
	if err != nil {
		return nil, err
	}
	check, err := s.Keys.AdmitAt(at.Seq, r)
	if err != nil {
		return nil, err
	}
	s.Own = own
	adm := &ledger.Admission{
		Canonical: r.Canonical,
		Method:    r.Method,
		Sender:    r.From,
		TS:        r.TS,
		PrevHash:  r.PrevHash,
		Meta:      r.Meta,
		Unchained: r.Entry() && r.PrevHash == nil,
		// A recorded refusal is the Coordinator's record of a call it refused: CHAP has
		// nobody sign it (the refused request inside keeps whatever signature it had).
		Unsignable: r.Refusal,
	}
	if !at.Replay {
		adm.Attrs = r.Attrs()
	}
	if own.Diverged && own.Next == at.Seq+1 {
		h := own.Head
		adm.OwnHead = &h
	}
	if !r.Refusal && r.Method != "" {
		// Requests and notifications own their id; a response repeats its request's id.
		adm.RecordID = r.ID
	}
	if signed := echoedTaskID(r, check); signed != nil {
		// The reference Coordinator wrote the whisper's task_id into this answer after it
		// checked the signature: the sender signed the envelope without it.
		c := *check
		c.Message = signed
		check = &c
		if adm.Attrs != nil {
			adm.Attrs[AttrCoordinatorAdded] = []string{"params.task_id"}
		}
	}
	if check != nil {
		// Signed says the record itself carries a signature. An unsigned participant.join
		// that introduces the key of a pending workspace.create has a check too (the create's
		// signature, Resolves), but no signature of its own: it stays unsigned.
		adm.Signed = r.Sig != nil
		adm.Verify = verifyFunc(check, r.From)
	}
	return adm, nil
}

// verifyFunc is an Admission's Verify: check's signature, then the pending creates it
// resolves. It holds check and the sender's URI for its refusal, not the record: a replay
// queues many of these for its signature workers, and the parsed record (its value tree)
// need not live until a worker gets to it.
func verifyFunc(check *SignatureCheck, from string) func() error {
	return func() error {
		if !check.Verify() {
			return ledger.Refuse(ledger.CodeBadSignature, "ed25519 signature by %.80q key %.80q does not verify", from, check.Kid)
		}
		return check.VerifyPending()
	}
}

// OwnHead returns the Coordinator's chain head after the last record when it differs from
// Evident's head (ledger.OwnHeader).
func (s *State) OwnHead() (ledger.Link, bool) { return s.Own.Head, s.Own.Diverged }

// AdmitMeta admits a stored record together with the audit-entry metadata split off it at
// ingest (ledger.MetaAdmitter): the same rules as the audit entry submitted whole.
func (s *State) AdmitMeta(at ledger.Position, record, meta []byte) (*ledger.Admission, error) {
	r, err := ParseStored(record, meta)
	if err != nil {
		return nil, err
	}
	return s.AdmitRecord(at, r)
}

// next returns the Coordinator's chain after r at position at, or the refusal when r's
// audit-entry seq or prev_hash does not continue it. o is not changed.
func (o OwnChain) next(at ledger.Position, r *Record) (OwnChain, error) {
	if r.Seq != nil && *r.Seq != at.Seq {
		return o, ledger.Refuse(ledger.CodeWrongChain, "audit entry seq %d does not continue the chain: the next seq is %d", *r.Seq, at.Seq)
	}
	// followed: the Coordinator's head before r is known (always, unless a case slice
	// skipped entries of a diverged chain).
	followed := !o.Diverged || at.Seq == o.Next
	if r.PrevHash == nil {
		switch {
		case r.Entry() && o.Begun:
			return o, ledger.Refuse(ledger.CodeWrongChain, "audit entry seq %d has no prev_hash, but the Coordinator's evidence chain covers the entries since seq %d", at.Seq, o.From)
		case r.Entry():
			o.Unchained++
		case o.Diverged && followed:
			o.Head, o.Next = ledger.NextLink(r.Canonical, o.Head), at.Seq+1 // Evident links what came bare
		}
		return o, nil
	}
	named := *r.PrevHash
	want := at.Head
	switch {
	case o.Diverged && followed:
		want = o.Head
	case o.Diverged:
		want = named // a case slice: the gap hides the Coordinator's head here
	case !o.Begun && at.Seq > 0 && o.Unchained == at.Seq && named == ledger.Genesis:
		want, o.Diverged = ledger.Genesis, true // chaining switched on after an unchained prefix
	}
	if named != want {
		if !r.Entry() {
			return o, ledger.CheckPrev(&named, want) // the paper's evidence.prev_hash: fork or mismatch
		}
		return o, ledger.Refuse(ledger.CodeWrongChain, "audit entry seq %d names prev_hash %s, but the chain's is %s", at.Seq, named, want)
	}
	if !o.Begun {
		o.Begun, o.From = true, at.Seq
	}
	if o.Diverged {
		o.Head, o.Next = ledger.NextLink(r.Canonical, named), at.Seq+1
	}
	return o, nil
}

// AttrCoordinatorAdded names the members a record carries that the Coordinator added after it
// checked the sender's signature (ledger.Admission.Attrs), such as the task_id the reference
// Coordinator echoes into a whisper.answer: what the sender signed is the envelope without
// them, and their values are the Coordinator's word.
const AttrCoordinatorAdded = "coordinator_added"

// echoedTaskID returns what the sender signed when r is a whisper.answer whose signature
// does not verify as recorded but does over the envelope without params.task_id: the
// reference Coordinator (0.2.x whisper/1.0) copies the whisper's task_id into the recorded
// answer after checking its signature. Only that one member is considered, and only for that
// method; nil otherwise.
func echoedTaskID(r *Record, check *SignatureCheck) []byte {
	if check == nil || check.Deferred || r.Method != "whisper.answer" {
		return nil
	}
	if _, ok := r.Params().Get("task_id"); !ok || check.Verify() {
		return nil
	}
	msg, err := canonical.Encode(r.Object.Without("sig").WithoutIn("params", "task_id"))
	if err != nil || !check.verify(msg) {
		return nil
	}
	return msg
}
