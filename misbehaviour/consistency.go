package misbehaviour

import (
	"bytes"

	"github.com/transparency-dev/merkle/rfc6962"
)

// Verdict is what a consistency proof shows about two trees.
type Verdict int

const (
	// Undetermined: the proof does not lead to the larger tree's root, so it shows nothing
	// about the smaller one (a faulty proof, or one for other trees).
	Undetermined Verdict = iota
	// Consistent: the smaller tree is a prefix of the larger one.
	Consistent
	// Inconsistent: the proof leads to the larger tree's root and implies another root for
	// the smaller tree than the one given: the two trees are not views of one append-only log.
	Inconsistent
)

func (v Verdict) String() string {
	switch v {
	case Consistent:
		return "consistent"
	case Inconsistent:
		return "inconsistent"
	}
	return "undetermined"
}

// Consistency runs the RFC 9162 §2.1.4.2 consistency verification from tree (size1, root1) to
// tree (size2, root2), keeping apart the two ways it can fail: the proof does not lead to
// root2 (Undetermined), or it does and implies an old root other than root1 (Inconsistent;
// by collision resistance the proof binds the old root through root2, so whoever signed both
// roots signed two histories). When size1 is a power of two the old root is not in the
// proof but taken as root1, so such a proof can never show Inconsistent.
func Consistency(size1, size2 uint64, path [][]byte, root1, root2 []byte) Verdict {
	if size1 == 0 || size1 >= size2 || len(path) == 0 {
		return Undetermined
	}
	h := rfc6962.DefaultHasher
	seeded := size1&(size1-1) == 0 // a power of two: the old root is the first node, not in the path
	if seeded {
		path = append([][]byte{root1}, path...)
	}
	fn, sn := size1-1, size2-1
	for fn&1 == 1 {
		fn >>= 1
		sn >>= 1
	}
	fr, sr := path[0], path[0]
	for _, c := range path[1:] {
		if sn == 0 {
			return Undetermined
		}
		if fn&1 == 1 || fn == sn {
			fr = h.HashChildren(c, fr)
			sr = h.HashChildren(c, sr)
			if fn&1 == 0 {
				for fn&1 == 0 && fn != 0 {
					fn >>= 1
					sn >>= 1
				}
			}
		} else {
			sr = h.HashChildren(sr, c)
		}
		fn >>= 1
		sn >>= 1
	}
	if sn != 0 || !bytes.Equal(sr, root2) {
		return Undetermined
	}
	if bytes.Equal(fr, root1) {
		return Consistent
	}
	if seeded {
		return Undetermined // cannot happen: fr is root1
	}
	return Inconsistent
}
