package receipts

import (
	"bytes"
	"crypto"
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

// textError is an error whose text is msg and which wraps a sentinel for errors.Is, for the
// verifiers whose messages are shown to people as they are.
type textError struct {
	msg      string
	sentinel error
}

func (e *textError) Error() string { return e.msg }
func (e *textError) Unwrap() error { return e.sentinel }

// Key is a transparency service's public key a verifier was given, with the two ids a
// receipt's kid may name it by.
type Key struct {
	Public      crypto.PublicKey
	Thumbprint  []byte // RFC 9679 thumbprint (KeyThumbprint)
	DeclaredKID []byte // kid (2) written in the COSE_Key, nil if none
}

// NewKey makes the Key of pub, with declared as the kid its COSE_Key gives (nil if none).
func NewKey(pub crypto.PublicKey, declared []byte) (Key, error) {
	kid, err := KeyThumbprint(pub)
	if err != nil {
		return Key{}, err
	}
	return Key{Public: pub, Thumbprint: kid, DeclaredKID: declared}, nil
}

// ParseKeySet reads a COSE_KeySet (as served at /.well-known/scitt-keys) or a single
// COSE_Key into Keys. Errors name the input as name (a file name, say).
func ParseKeySet(name string, b []byte) ([]Key, error) {
	var out []Key
	var list []cbor.RawMessage
	if err := cbor.Unmarshal(b, &list); err != nil {
		list = []cbor.RawMessage{b} // a single COSE_Key
	}
	for i, kb := range list {
		pub, err := ParseCOSEKey(kb)
		if err != nil {
			return nil, fmt.Errorf("%s: key %d: %w", name, i, err)
		}
		var m map[int64]cbor.RawMessage
		var declared []byte
		if cbor.Unmarshal(kb, &m) == nil {
			if raw, ok := m[2]; ok {
				cbor.Unmarshal(raw, &declared)
			}
		}
		k, err := NewKey(pub, declared)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, &textError{fmt.Sprintf("%s: no key", name), ErrMalformed}
	}
	return out, nil
}

// KeysFor returns the keys to try for the receipt: those its kid names (by thumbprint or
// declared kid), a single key without a declared kid when the kid names none (a pinned key
// whose kid the service spells its own way), or every key when the receipt names none.
func (r *Receipt) KeysFor(keys []Key) []Key {
	if len(r.KeyID) == 0 {
		return keys
	}
	var out []Key
	for _, k := range keys {
		if bytes.Equal(k.Thumbprint, r.KeyID) || bytes.Equal(k.DeclaredKID, r.KeyID) {
			out = append(out, k)
		}
	}
	if len(out) == 0 && len(keys) == 1 && keys[0].DeclaredKID == nil {
		return keys
	}
	return out
}

// Verified is a receipt that verified: the root its proof leads to, the parsed receipt and
// the key whose signature over that root verified.
type Verified struct {
	Root    []byte
	Receipt *Receipt
	Key     Key
}

// VerifyInclusionKeys verifies a receipt of inclusion for leafHash (as VerifyInclusion)
// with the keys its kid names (Receipt.KeysFor). A kid that names none of keys fails with
// ErrUnknownKey; otherwise the error is the last key's.
func VerifyInclusionKeys(receipt, leafHash []byte, keys []Key) (*Verified, error) {
	r, err := ParseReceipt(receipt)
	if err != nil {
		return nil, err
	}
	cands := r.KeysFor(keys)
	if len(r.KeyID) > 0 && len(cands) == 0 {
		return nil, &textError{fmt.Sprintf("the receipt names kid %x, which is not among the given keys", r.KeyID), ErrUnknownKey}
	}
	var lastErr error = &textError{"no key to try", ErrUnknownKey}
	for _, k := range cands {
		root, rr, err := VerifyInclusion(receipt, leafHash, k.Public)
		if err == nil {
			return &Verified{Root: root, Receipt: rr, Key: k}, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// TreeHead is one end of a consistency receipt: a tree size (0 when only the root is known)
// and its root; Name describes it in errors (e.g. "checkpoint c.txt (origin, size 7)").
type TreeHead struct {
	Size uint64
	Root []byte
	Name string
}

// VerifyConsistencyKeys verifies an RFC 9942 consistency receipt (396 {-2: …}) between two
// tree heads with the keys its kid names: the proof leads from the old root to the new one
// (RFC 9162 section 2.1.4.2), the service's signature covers the new root, and the sizes the
// proof names are those of the tree heads that give one. A receipt of another kind fails
// with ErrMalformed, sizes or roots that do not match with ErrBadProof, a kid that names no
// key with ErrUnknownKey.
func VerifyConsistencyKeys(receipt []byte, keys []Key, old, nw TreeHead) (*Verified, error) {
	r, err := ParseReceipt(receipt)
	if err != nil {
		return nil, err
	}
	if len(r.Consistency) != 1 || len(r.Inclusion) != 0 {
		return nil, &textError{fmt.Sprintf("not a consistency receipt: %d consistency and %d inclusion proof(s)", len(r.Consistency), len(r.Inclusion)), ErrMalformed}
	}
	p := r.Consistency[0]
	if old.Size != 0 && p.Size1 != old.Size {
		return nil, &textError{fmt.Sprintf("the proof starts at tree size %d, the old %s", p.Size1, old.Name), ErrBadProof}
	}
	if nw.Size != 0 && p.Size2 != nw.Size {
		return nil, &textError{fmt.Sprintf("the proof ends at tree size %d, the new %s", p.Size2, nw.Name), ErrBadProof}
	}
	var lastErr error = &textError{"no key to try", ErrUnknownKey}
	for _, k := range r.KeysFor(keys) {
		root, rr, err := VerifyConsistency(receipt, old.Root, k.Public)
		if err != nil {
			lastErr = err
			continue
		}
		if !bytes.Equal(root, nw.Root) {
			return nil, &textError{fmt.Sprintf("the proof leads from the old root to %x, not to the new %s", root, nw.Name), ErrBadProof}
		}
		return &Verified{Root: root, Receipt: rr, Key: k}, nil
	}
	return nil, lastErr
}
