package bundle

import "fmt"

// A case slice holds some entries of a chain, not all (docs/bundle.md, "Case slices"):
//
//	chains/<dir>/slice.jsonl               the included entries, in chain order, in the entries.jsonl line format
//	chains/<dir>/proofs/entry-<seq>.cose   per included entry: an RFC 9942 chain receipt, inclusion of
//	                                       link(seq) in the chain tree of the sealed size (sub = chain id)
//	chains/<dir>/seals/<n>.cose            the chain's seals up to the one the receipts are cut against
//
// The manifest's ChainRef.Slice names that seal and counts what was included.

// SliceRef describes a case slice of a chain.
type SliceRef struct {
	// Seal is the number of the seal whose chain root every entry receipt proves against;
	// the ChainRef's Size, Head and Root are that seal's.
	Seal uint64 `json:"seal"`
	// Selected counts the entries matching the scope (task or logical_id).
	Selected uint64 `json:"selected"`
	// Context counts the entries included only so signatures can be checked: every
	// key-lifecycle record (CHAP participant.join, rotate_key, revoke_key) of the sealed chain.
	Context uint64 `json:"context"`
}

// SliceFile returns the path of a chain slice's entries.
func SliceFile(dir string) string { return "chains/" + dir + "/slice.jsonl" }

// EntryProofFile returns the path of the chain receipt of entry seq of a slice.
func EntryProofFile(dir string, seq uint64) string {
	return fmt.Sprintf("chains/%s/proofs/entry-%012d.cose", dir, seq)
}
