package ledger

import (
	"fmt"
	"time"
)

// Admission is what a profile adapter yields for one admissible record.
type Admission struct {
	Canonical []byte    // canonical bytes of the hashed record: what the link covers
	RecordID  string    // the record's own id ("" when it has none); reuse is refused
	Method    string    // protocol method or event type, for filtering and replay
	Sender    string    // who sent it (participant URI, actor, node)
	TS        time.Time // the sender's timestamp (zero when the record carries none)
	PrevHash  *Link     // the predecessor the record names, nil when it names none
	Signed    bool      // the record carries a signature (checked by Verify)
	// Unsignable marks a record the protocol has nobody sign: the Coordinator's own record
	// (a CHAP recorded refusal). It is unsigned by design, not a participant's unsigned
	// statement; its place is fixed by the chain's links.
	Unsignable bool
	// Verify checks the record's signature, or what an unsigned record settles (a CHAP join
	// verifying the pending workspace.create its key signed); nil when there is nothing to
	// check. Safe to run on any goroutine.
	Verify func() error
	Closes bool // the record ends the chain (e.g. an OWP root Intent resolving)
	// Meta is metadata the submitter sent with the record, kept beside it and never hashed:
	// canonical JSON of an object (a CHAP Coordinator's audit entry: seq, arrived, prev_hash),
	// nil when none. It is stored and exported with the entry, and the replay hands it back
	// (MetaAdmitter), so the checks it carries are repeated offline.
	Meta []byte
	// Unchained reports that the submitter states the record is outside its own evidence
	// chain (a CHAP audit entry recorded before the Coordinator switched chaining on).
	Unchained bool
	// OwnHead is the head of the sender's own evidence chain after this record when it is
	// not the link Evident computes (Linked profiles: the sender's chain began after an
	// unchained prefix); nil when the two are the same, or the record is outside it.
	OwnHead *Link
	// Attrs are profile-defined attributes the read API filters on (audit.read): name →
	// values, e.g. CHAP's task_id, logical_id, tag and outcome (the Attr* names). They are
	// read from the record, not hashed beside it, and may be nil.
	Attrs map[string][]string
}

// Attribute names profiles fill in Admission.Attrs; a profile may add its own.
const (
	AttrTask      = "task_id"    // the task a record is about
	AttrLogicalID = "logical_id" // the logical artefact a record is about
	AttrTag       = "tag"        // one tag per value (a decision's or artefact's tags)
	AttrOutcome   = "outcome"    // "accepted" for a record of an accepted call, "refused" for a recorded refusal
)

// Position says where a record is being admitted: the chain, its head and the record's seq.
type Position struct {
	Chain string
	Head  Link
	Seq   uint64
	// Submitter is the operator identity evidentd authenticated for this submission ("" when
	// none: an unauthenticated loopback write, or an offline replay). A profile that records
	// who submitted (ChiefLab) writes it into the hashed record, so a replay reads it back
	// from there.
	Submitter string
	// Replay says the record is being replayed offline (a bundle's verification), where no
	// read index is built: the profile applies every check it applies at ingest, but may
	// leave out Admission.Attrs, which only the service's read API uses.
	Replay bool
}

// ProfileState is the per-chain state a profile keeps (participants' keys, sequence counters).
// Admit checks one record against it — including, through CheckPrev, the predecessor the record
// names — and only then applies the record's effects. On error the state is unchanged.
type ProfileState interface {
	Admit(at Position, record []byte) (*Admission, error)
	Clone() ProfileState
	MarshalJSON() ([]byte, error)
}

// MetaAdmitter is implemented by a ProfileState whose records may arrive with metadata that
// is kept beside them unhashed (Admission.Meta). AdmitMeta admits a stored record together
// with the metadata split off at ingest, as a replay reads them back; it applies the same
// rules as Admit of the record and its metadata submitted together.
type MetaAdmitter interface {
	AdmitMeta(at Position, record, meta []byte) (*Admission, error)
}

// Profile is a protocol adapter: it admits one protocol's records into chains (docs/chains.md, "Profiles").
type Profile interface {
	// Name is the profile name carried by chains and seals, e.g. "chap/0.3".
	Name() string
	// NewState returns the state of an empty chain, or restores one persisted with MarshalJSON.
	NewState(persisted []byte) (ProfileState, error)
}

// CheckPrev checks the predecessor a record names (nil: it names none) against the chain head.
func CheckPrev(named *Link, head Link) error {
	if named != nil && *named != head {
		return &RecordError{Code: CodePrevMismatch, Detail: fmt.Sprintf("prev_hash %s is not the chain head %s", named, head),
			Err: &PrevMismatchError{Named: *named, Head: head}}
	}
	return nil
}

// PrevMismatchError carries the predecessor a refused record named, so a caller can tell a
// fork (the named link is an earlier entry) from a stale or foreign prev_hash.
type PrevMismatchError struct {
	Named, Head Link
}

func (e *PrevMismatchError) Error() string {
	return fmt.Sprintf("named predecessor %s, chain head %s", e.Named, e.Head)
}
