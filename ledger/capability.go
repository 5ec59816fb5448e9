package ledger

import (
	"context"
	"errors"
	"io"
	"time"
)

// The interfaces below are optional capabilities of a Profile or of its ProfileState. The
// offline verifier gets a profile from the registry (ledger/profile) and type-asserts them,
// so it reaches every profile-specific rule through one of them and never names a profile.
// Auditor and ServiceAttested (finding.go) are capabilities of the same kind.

// KeyHolder is implemented by a ProfileState that builds its participants' key history from
// the chain itself (CHAP: joins, rotations and revocations). Participants returns that
// history sorted by URI, or nil when the state holds none.
type KeyHolder interface {
	Participants() []Participant
}

// Participant is one participant of a chain with the keys its records gave it.
type Participant struct {
	URI  string
	Role string // "" when the profile has no roles
	Keys []ParticipantKey
}

// ParticipantKey is one key of a participant and the time it was valid for.
type ParticipantKey struct {
	Kid     string
	From    time.Time // zero: from the start
	Until   time.Time // zero: still valid
	Revoked bool      // Until was set by a revocation, not by a rotation
}

// Linked is implemented by a Profile whose records name their predecessor themselves
// (Admission.PrevHash), so the sender keeps an evidence chain of its own beside the links
// Evident computes. The verifier reports how much of a chain those links cover.
// PredecessorField names the record field that carries the link, e.g. "evidence.prev_hash".
type Linked interface {
	PredecessorField() string
}

// OwnHeader is implemented by the ProfileState of a Linked profile, which follows its sender's
// own evidence chain. OwnHead returns that chain's head after the last admitted record and
// true when it differs from Evident's head (the sender's chain began after an unchained
// prefix); false when the two are the same.
type OwnHeader interface {
	OwnHead() (Link, bool)
}

// Sliceable is implemented by a Profile whose chains can be exported as case slices: the
// selected entries plus every record that shapes the key history, so that the included
// signatures can be checked without the rest of the chain. KeyMethods names the methods
// (Admission.Method) of the records that may be key records, so an exporter can find them;
// KeyRecord reports whether an admitted record is one.
type Sliceable interface {
	KeyMethods() []string
	KeyRecord(a *Admission) bool
}

// Reference is a reference a record makes to an entry of another chain.
type Reference struct {
	Seq   uint64 // the referring entry
	Chain string // the referenced chain
	Event string // the referenced record's id; "" when the reference names none
	Root  string // a chain Merkle root the referenced chain must have had; "" when none
}

// Referrer is implemented by a ProfileState whose records reference other chains (OWP-2
// provenance: a prior envelope). References returns the references the state kept, in seq
// order.
type Referrer interface {
	References() []Reference
}

// CrossChain is implemented by a Profile whose chains reference other chains of the same
// profile (its states are Referrers). The verifier resolves the references against the
// chains the bundle holds and reports them under ReferenceCheck, e.g. "owp.provenance".
// ReferencedID returns the id a reference names a record by, read from the record alone.
type CrossChain interface {
	ReferenceCheck() CheckName
	ReferencedID(record []byte) (string, error)
}

// BundleChecker is implemented by a Profile whose chains carry, in an offline bundle, files
// of their own beside their entries (COP 1.0: the node's ledger and the node keys that sign
// it). CheckBundle checks them against the chain and returns one verdict per check, or nil
// when it has nothing to say; it stops early, returning nil, when ctx is done.
type BundleChecker interface {
	CheckBundle(ctx context.Context, chain BundleChain) []Verdict
}

// BundleChain is one chain as an offline bundle holds it, handed by the verifier to a
// BundleChecker. File names are paths inside the bundle; reading a file through it counts as
// a check having read it, and a digest mismatch is reported by the verifier, not here.
type BundleChain interface {
	// ID is the chain's id and Dir its directory under chains/ in the bundle.
	ID() string
	Dir() string
	// Listed reports whether the bundle's manifest lists the file.
	Listed(name string) bool
	// ReadFile reads a whole listed file of at most max bytes.
	ReadFile(name string, max int64) ([]byte, error)
	// Lines opens a listed file of newline-terminated lines.
	Lines(name string) (LineReader, error)
	// Entries opens the chain's entries.
	Entries() (EntryReader, error)
	// MarkRead records that a check interpreted the file although it did not read it.
	MarkRead(name string)
}

// LineReader reads a file line by line.
type LineReader interface {
	// Next returns the next line without its newline, io.EOF when none is left.
	Next() ([]byte, error)
	io.Closer
}

// Entry is one entry of a chain as a bundle holds it.
type Entry struct {
	Seq     uint64
	Record  []byte // the record as submitted
	Arrival time.Time
	Prev    Link
	Link    Link
}

// ErrNotEntry is matched (errors.Is) by the error an EntryReader returns for a line that is
// not an entry; other errors mean the file could not be read.
var ErrNotEntry = errors.New("not an entry line")

// EntryReader reads a chain's entries in order.
type EntryReader interface {
	// Next returns the next entry, io.EOF when none is left.
	Next() (Entry, error)
	io.Closer
}

// Verdict is what a BundleChecker concludes for one check.
type Verdict struct {
	Check    CheckName
	Severity Severity // "" when the check holds; Notice when it is not evaluated; Critical when broken
	Code     Code     // "" when the check holds
	Where    string   // "file:line", a file name, or ""
	Detail   string
	Evidence []string
}
