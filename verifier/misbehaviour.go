package verifier

import (
	"bytes"
	"crypto/sha256"

	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/misbehaviour"
)

// Observer is the Observer of the proofs of misbehaviour the verifier builds.
const Observer = "evident verify"

// maxReferences bounds the cosigned checkpoints kept with each proof the verifier builds.
const maxReferences = 4

// fork is a pair of verified checkpoints that cannot both be true, as a check found it:
// the notes themselves when the check had them, else their size and root, resolved from the
// verified notes when the proofs are built.
type fork struct {
	a, b       []byte
	keyA, keyB cpKey
	hashes     [][]byte // the consistency proof from the smaller tree; nil for one size
}

// recordFork keeps two contradicting checkpoint notes and the consistency proof between them.
func (v *verifier) recordFork(a, b []byte, hashes [][]byte) {
	v.forks = append(v.forks, fork{a: a, b: b, hashes: hashes})
}

// recordForkKeys keeps two contradicting verified checkpoints known by size and root.
func (v *verifier) recordForkKeys(a, b cpKey, hashes [][]byte) {
	v.forks = append(v.forks, fork{keyA: a, keyB: b, hashes: hashes})
}

// noteOf returns a verified checkpoint note of the given size and root, nil if none.
func (v *verifier) noteOf(k cpKey) []byte {
	for _, n := range v.wit.notes {
		if n.size == k.size && bytes.Equal(n.root, k.root[:]) {
			return n.raw
		}
	}
	return nil
}

// misbehaviourProofs builds a proof of misbehaviour from every fork the checks found, once
// per pair of notes, with up to maxReferences other verified checkpoints that carry
// cosignatures (what else the world was shown).
func (v *verifier) misbehaviourProofs() []*misbehaviour.Proof {
	if len(v.forks) == 0 {
		return nil
	}
	var out []*misbehaviour.Proof
	seen := map[[32]byte]bool{}
	refs := v.cosignedNotes()
	for _, f := range v.forks {
		a, b := f.a, f.b
		if a == nil {
			a, b = v.noteOf(f.keyA), v.noteOf(f.keyB)
		}
		if a == nil || b == nil {
			continue
		}
		if bytes.Compare(a, b) > 0 && noteSize(a) == noteSize(b) {
			a, b = b, a // one order for a pair of one size, whichever check found it
		}
		id := sha256.Sum256(append(append(append([]byte(nil), a...), 0), b...))
		if seen[id] {
			continue
		}
		seen[id] = true
		p, err := misbehaviour.New(a, b, f.hashes, Observer, v.o.Now())
		if err != nil {
			continue // both notes verified under the log key, so they parse: cannot happen
		}
		for _, r := range refs {
			if len(p.References) == maxReferences {
				break
			}
			p.AddReference(r)
		}
		out = append(out, p)
	}
	return out
}

// cosignedNotes returns the distinct verified checkpoint notes that carry signatures by
// others than the log (witness cosignatures), in the order they were found; none without a
// usable log key, since then no note is known to be the log's.
func (v *verifier) cosignedNotes() [][]byte {
	if v.logKey == nil {
		return nil
	}
	vs := append([]note.Verifier{v.logKey}, v.pqVerifiers()...)
	var out [][]byte
	for _, n := range v.distinctNotes() {
		if nn, err := note.Open(n.raw, note.VerifierList(vs...)); err == nil && len(nn.UnverifiedSigs) > 0 {
			out = append(out, n.raw)
		}
	}
	return out
}
