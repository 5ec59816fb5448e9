package ledger

import (
	"fmt"
	"time"
)

// Chain is the state of one evidence chain: {id, profile, size, head, root, last seal}
// (docs/chains.md) plus the profile's own state.
type Chain struct {
	ID         string
	Profile    string
	Size       uint64
	Head       Link
	Tree       *Tree
	State      ProfileState
	Closed     bool
	LastSeal   string // "sha256:<hex>" log entry of the last seal statement, "" before the first
	SealedSize uint64 // chain size at the last seal
	// Replay marks a chain replayed offline from a bundle: every admission is checked as at
	// ingest, with Position.Replay set, so profiles skip what only the read API uses.
	Replay bool
}

// NewChain returns an empty chain of profile p.
func NewChain(id string, p Profile) (*Chain, error) {
	st, err := p.NewState(nil)
	if err != nil {
		return nil, fmt.Errorf("new chain %q: %w", id, err)
	}
	return &Chain{ID: id, Profile: p.Name(), Tree: NewTree(), State: st}, nil
}

// Clone returns a copy that can be advanced without touching c.
func (c *Chain) Clone() *Chain {
	cp := *c
	cp.Tree = c.Tree.Clone()
	cp.State = c.State.Clone()
	return &cp
}

// Root returns the chain tree root at the current size.
func (c *Chain) Root() [32]byte { return c.Tree.Root() }

// Appended is one record accepted into a chain.
type Appended struct {
	Seq       uint64
	Prev      Link
	Link      Link
	Arrival   time.Time
	Admission *Admission
}

// Append admits record as the next entry: profile rules, the named predecessor, the link and
// the tree. Signatures are not verified here (Admission.Verify), so a caller can verify a batch
// in parallel. On error c is unchanged.
func (c *Chain) Append(record []byte, arrival time.Time) (*Appended, error) {
	return c.AppendBy(record, arrival, "")
}

// AppendBy is Append for a record submitted by an authenticated operator (Position.Submitter).
func (c *Chain) AppendBy(record []byte, arrival time.Time, submitter string) (*Appended, error) {
	return c.admit(arrival, submitter, func(at Position) (*Admission, error) { return c.State.Admit(at, record) })
}

// AppendIdentified is AppendBy for a record whose Identity the chain's profile has read
// (Identifier): a profile that kept its reading (IdentifiedAdmitter, Identity.Parsed)
// admits the record from it instead of parsing the record again. id must be the Identity of
// record: when the profile admits from id, record itself is not read again.
func (c *Chain) AppendIdentified(record []byte, id *Identity, arrival time.Time, submitter string) (*Appended, error) {
	ia, ok := c.State.(IdentifiedAdmitter)
	if !ok || id == nil || id.Parsed == nil {
		return c.AppendBy(record, arrival, submitter)
	}
	return c.admit(arrival, submitter, func(at Position) (*Admission, error) { return ia.AdmitIdentified(at, id) })
}

// AppendStored is Append for a record read back from storage or a bundle together with the
// metadata split off it at ingest (Admission.Meta; nil when none).
func (c *Chain) AppendStored(record, meta []byte, arrival time.Time) (*Appended, error) {
	return c.admit(arrival, "", func(at Position) (*Admission, error) { return AdmitStored(c.State, c.Profile, at, record, meta) })
}

// AdmitStored admits a record read back from storage or a bundle with the metadata split off
// it at ingest: st.Admit when meta is nil, else the profile's MetaAdmitter, so the checks the
// metadata carries (a CHAP audit entry's seq and prev_hash) are repeated. profile names st's
// profile in the refusal of metadata it cannot take. Every replay of stored entries, whole
// chain or case slice, admits through here.
func AdmitStored(st ProfileState, profile string, at Position, record, meta []byte) (*Admission, error) {
	if meta == nil {
		return st.Admit(at, record)
	}
	ma, ok := st.(MetaAdmitter)
	if !ok {
		return nil, Refuse(CodeMalformed, "profile %s keeps no metadata beside its records", profile)
	}
	return ma.AdmitMeta(at, record, meta)
}

// admit runs one admission at the chain's next position and appends what it admits.
func (c *Chain) admit(arrival time.Time, submitter string, admit func(Position) (*Admission, error)) (*Appended, error) {
	if c.Closed {
		return nil, Refuse(CodeClosed, "chain %.80q was sealed closed", c.ID)
	}
	adm, err := admit(Position{Chain: c.ID, Head: c.Head, Seq: c.Size, Submitter: submitter, Replay: c.Replay})
	if err != nil {
		return nil, err
	}
	return c.append(adm, arrival), nil
}

func (c *Chain) append(adm *Admission, arrival time.Time) *Appended {
	l := NextLink(adm.Canonical, c.Head)
	a := &Appended{Seq: c.Size, Prev: c.Head, Link: l, Arrival: arrival, Admission: adm}
	c.Head = l
	c.Size++
	c.Tree.Append(l)
	if adm.Closes {
		c.Closed = true
	}
	return a
}
