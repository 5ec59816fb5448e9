package receipts

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// TestKeySet: a COSE_KeySet and a single COSE_Key are read with their declared kids; an
// empty set and a bad key are refused, named.
func TestKeySet(t *testing.T) {
	a, b := newEd25519Signer(t), newP256Signer(t)
	ka, err := COSEKey(a.Public())
	if err != nil {
		t.Fatal(err)
	}
	kb, err := COSEKey(b.Public())
	if err != nil {
		t.Fatal(err)
	}
	set, err := encMode.Marshal([]cbor.RawMessage{ka, kb})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := ParseKeySet("set", set)
	if err != nil || len(keys) != 2 || !bytes.Equal(keys[0].Thumbprint, a.KeyID()) || !bytes.Equal(keys[1].DeclaredKID, b.KeyID()) {
		t.Fatalf("set: %v, %+v", err, keys)
	}
	if keys, err := ParseKeySet("one", ka); err != nil || len(keys) != 1 || !bytes.Equal(keys[0].DeclaredKID, a.KeyID()) {
		t.Fatalf("single key: %v, %+v", err, keys)
	}
	empty, _ := encMode.Marshal([]cbor.RawMessage{})
	if _, err := ParseKeySet("empty", empty); err == nil || err.Error() != "empty: no key" || !errors.Is(err, ErrMalformed) {
		t.Fatalf("empty set: %v", err)
	}
	if _, err := ParseKeySet("bad", []byte{0xa0}); err == nil || !strings.HasPrefix(err.Error(), "bad: key 0: ") || !errors.Is(err, ErrMalformed) {
		t.Fatalf("bad key: %v", err)
	}
}

// TestVerifyKeys: a receipt verifies with the key its kid names among others; a kid that
// names none of the keys is ErrUnknownKey; a consistency receipt whose sizes or new root do
// not match the tree heads is ErrBadProof.
func TestVerifyKeys(t *testing.T) {
	logKey, other := newEd25519Signer(t), newP256Signer(t)
	lg := newTestLog(t, logKey, 5)
	ko, err := NewKey(other.Public(), nil)
	if err != nil {
		t.Fatal(err)
	}
	kl, err := NewKey(logKey.Public(), logKey.KeyID())
	if err != nil {
		t.Fatal(err)
	}
	rs, err := SignRoot(logKey, Claims{}, lg.tree.HashAt(5))
	if err != nil {
		t.Fatal(err)
	}
	path, err := lg.tree.InclusionProof(2, 5)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := NewInclusionReceipt(rs, InclusionProof{TreeSize: 5, LeafIndex: 2, Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	leaf := LeafHash(lg.entries[2][:])
	v, err := VerifyInclusionKeys(rc, leaf[:], []Key{ko, kl})
	if err != nil || !bytes.Equal(v.Root, lg.tree.HashAt(5)) || !bytes.Equal(v.Key.Thumbprint, logKey.KeyID()) {
		t.Fatalf("inclusion: %v", err)
	}
	ko2, _ := NewKey(newEd25519Signer(t).Public(), []byte("declared"))
	if _, err := VerifyInclusionKeys(rc, leaf[:], []Key{ko, ko2}); !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), "not among the given keys") {
		t.Fatalf("unknown kid: %v", err)
	}

	cpath, err := lg.tree.ConsistencyProof(3, 5)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := NewConsistencyReceipt(rs, ConsistencyProof{Size1: 3, Size2: 5, Path: cpath}, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := TreeHead{Size: 3, Root: lg.tree.HashAt(3), Name: "old"}
	nw := TreeHead{Size: 5, Root: lg.tree.HashAt(5), Name: "new"}
	if v, err := VerifyConsistencyKeys(cr, []Key{kl}, old, nw); err != nil || !bytes.Equal(v.Root, nw.Root) {
		t.Fatalf("consistency: %v", err)
	}
	for _, tc := range []struct {
		old, nw TreeHead
		want    string
	}{
		{TreeHead{Size: 2, Root: old.Root, Name: "old"}, nw, "the proof starts at tree size 3, the old old"},
		{old, TreeHead{Size: 4, Root: nw.Root, Name: "new"}, "the proof ends at tree size 5, the new new"},
		{old, TreeHead{Root: lg.tree.HashAt(4), Name: "new"}, "the proof leads from the old root to "},
	} {
		if _, err := VerifyConsistencyKeys(cr, []Key{kl}, tc.old, tc.nw); !errors.Is(err, ErrBadProof) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.want, err)
		}
	}
	if _, err := VerifyConsistencyKeys(rc, []Key{kl}, old, nw); !errors.Is(err, ErrMalformed) || !strings.HasPrefix(err.Error(), "not a consistency receipt") {
		t.Errorf("inclusion receipt as consistency: %v", err)
	}
}

// FuzzParseKeySet: any bytes give keys or an error, never a panic; every key it returns has
// its thumbprint.
func FuzzParseKeySet(f *testing.F) {
	f.Add([]byte{0x80})
	f.Add([]byte{0xa1, 0x01, 0x01})
	f.Add([]byte("not cbor"))
	f.Fuzz(func(t *testing.T, b []byte) {
		keys, err := ParseKeySet("fuzz", b)
		if err != nil {
			return
		}
		for _, k := range keys {
			if k.Public == nil || len(k.Thumbprint) == 0 {
				t.Fatalf("key %+v", k)
			}
		}
	})
}
