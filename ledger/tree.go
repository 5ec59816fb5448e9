package ledger

import (
	"crypto"
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"
)

// Hasher is the RFC 6962 SHA-256 hasher used for chain trees (0x00 leaf, 0x01 node prefixes).
var Hasher = rfc6962.New(crypto.SHA256)

var rangeFactory = compact.RangeFactory{Hash: hashChildren}

// hashLeaf is Hasher.HashLeaf of a link's 32 bytes: SHA-256 of 0x00 and the link.
func hashLeaf(l Link) []byte {
	var b [1 + len(l)]byte
	b[0] = rfc6962.RFC6962LeafHashPrefix
	copy(b[1:], l[:])
	h := sha256.Sum256(b[:])
	return h[:]
}

// hashChildren is Hasher.HashChildren, SHA-256 of 0x01 and the two hashes, computed on the
// stack for the 32-byte hashes of chain trees (the generic hasher allocates a hash.Hash and
// its sum on every call: once per link, on average, of every replay and export).
func hashChildren(l, r []byte) []byte {
	if len(l) != sha256.Size || len(r) != sha256.Size {
		return Hasher.HashChildren(l, r)
	}
	var b [1 + 2*sha256.Size]byte
	b[0] = rfc6962.RFC6962NodeHashPrefix
	copy(b[1:], l)
	copy(b[1+sha256.Size:], r)
	h := sha256.Sum256(b[:])
	return h[:]
}

// Tree is a chain's Merkle tree kept as a compact range: O(log n) hashes for a chain of any length.
// Its leaves are the 32 raw bytes of each link. The zero Tree is not usable; use NewTree.
type Tree struct {
	r *compact.Range
}

// NewTree returns an empty chain tree.
func NewTree() *Tree { return &Tree{r: rangeFactory.NewEmptyRange(0)} }

// Append adds link l as the next leaf.
func (t *Tree) Append(l Link) {
	// Append on a range that begins at 0 cannot fail.
	if err := t.r.Append(hashLeaf(l), nil); err != nil {
		panic(fmt.Sprintf("ledger: compact range append: %v", err))
	}
}

// Size returns the number of leaves.
func (t *Tree) Size() uint64 { return t.r.End() }

// Root returns the RFC 6962 root of the tree; the empty tree's root is SHA-256 of the empty string.
func (t *Tree) Root() [32]byte { return rangeRoot(t.r) }

// rangeRoot returns the RFC 6962 root of the tree a compact range from 0 covers.
func rangeRoot(r *compact.Range) [32]byte {
	var out [32]byte
	if r.End() == 0 {
		copy(out[:], Hasher.EmptyRoot())
		return out
	}
	h, err := r.GetRootHash(nil)
	if err != nil {
		panic(fmt.Sprintf("ledger: compact range root: %v", err))
	}
	copy(out[:], h)
	return out
}

// Clone returns an independent copy of t.
func (t *Tree) Clone() *Tree {
	hs := t.r.Hashes()
	cp := make([][]byte, len(hs))
	copy(cp, hs)
	r, err := rangeFactory.NewRange(0, t.r.End(), cp)
	if err != nil {
		panic(fmt.Sprintf("ledger: clone compact range: %v", err))
	}
	return &Tree{r: r}
}

type treeState struct {
	Size   uint64   `json:"size"`
	Hashes [][]byte `json:"hashes"`
}

// MarshalJSON stores the compact range (size and its O(log n) hashes).
func (t *Tree) MarshalJSON() ([]byte, error) {
	return json.Marshal(treeState{Size: t.r.End(), Hashes: t.r.Hashes()})
}

// UnmarshalJSON restores a tree written by MarshalJSON, refusing an inconsistent range.
func (t *Tree) UnmarshalJSON(b []byte) error {
	var s treeState
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("chain tree state: %w", err)
	}
	r, err := rangeFactory.NewRange(0, s.Size, s.Hashes)
	if err != nil {
		return fmt.Errorf("chain tree state: %w", err)
	}
	t.r = r
	return nil
}
