package ledger

// Identity is what a submitted record would be stored as, read from the record alone
// without the chain's state: its canonical bytes and whatever it says about its own place.
// The ingest pipeline uses it to recognise a record that is already in the chain (a
// retried submission) before the profile's admission rules run.
type Identity struct {
	Canonical []byte  // the bytes the link hashes (Admission.Canonical)
	Seq       *uint64 // the chain position the record states (a CHAP audit entry's seq); nil when none
	PrevHash  *Link   // the predecessor the record names; nil when none
	RecordID  string  // the record's own id, unique in its chain; "" when none
	// Meta is what the record carries beside its canonical bytes, unhashed (Admission.Meta: a
	// CHAP audit entry's seq, arrived and prev_hash); nil when none. A stored entry is the
	// record only if it kept the same.
	Meta []byte
	// Parsed is the profile's own reading of the record, which its AdmitIdentified
	// (IdentifiedAdmitter) admits without reading the record again; nil when it keeps none.
	Parsed any
}

// IdentifiedAdmitter is implemented by a ProfileState whose Identify keeps its reading of
// the record in Identity.Parsed: AdmitIdentified admits the record id was read from,
// exactly as Admit would admit its bytes, without parsing them again. Parsed may depend on
// the record's bytes and Identify's Position's Chain and Submitter only, never on the
// state Identify ran on: the identity is read before the record's place is known, and
// admitted on another copy of the state.
type IdentifiedAdmitter interface {
	AdmitIdentified(at Position, id *Identity) (*Admission, error)
}

// Identifier is implemented by a ProfileState that can read a record's Identity without
// admitting it. at carries the chain and the submitter (a profile that writes the
// submitter into the hashed record needs it); its Head and Seq are not used.
type Identifier interface {
	Identify(at Position, record []byte) (*Identity, error)
}
