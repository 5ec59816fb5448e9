package receipts

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// typed reports whether err wraps one of the package's sentinel errors.
func typed(err error) bool {
	for _, s := range []error{ErrMalformed, ErrUnsupportedAlg, ErrBadSignature, ErrBadProof, ErrUnsupportedVDS} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func addFileSeeds(f *testing.F, paths ...string) {
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func FuzzParseStatement(f *testing.F) {
	addFileSeeds(f,
		filepath.Join(vectorDir, "statement.cose"),
		filepath.Join("testdata", "statement-ed25519.cose"),
		filepath.Join("testdata", "transparent-ed25519.cose"),
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseStatement(data)
		if err != nil {
			if !typed(err) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		entry, err := EntryHash(data)
		if err != nil {
			t.Fatalf("parsed but EntryHash failed: %v", err)
		}
		// Splitting and re-attaching keeps the entry and the receipts.
		plain, rcs, err := SplitTransparent(data)
		if err != nil {
			t.Fatalf("parsed but SplitTransparent failed: %v", err)
		}
		if !reflect.DeepEqual(rcs, st.Receipts) && !(len(rcs) == 0 && len(st.Receipts) == 0) {
			t.Fatalf("SplitTransparent receipts differ from ParseStatement's")
		}
		if e, err := EntryHash(plain); err != nil || e != entry {
			t.Fatalf("EntryHash of split statement: %x, %v", e, err)
		}
		pst, err := ParseStatement(plain)
		if err != nil {
			t.Fatalf("split statement does not parse: %v", err)
		}
		if len(pst.Receipts) != 0 || !bytes.Equal(pst.ProtectedRaw, st.ProtectedRaw) ||
			!bytes.Equal(pst.Payload, st.Payload) || !bytes.Equal(pst.Signature, st.Signature) {
			t.Fatal("split statement differs")
		}
		if len(rcs) == 0 {
			if !bytes.Equal(plain, data) {
				t.Fatal("statement without receipts changed by SplitTransparent")
			}
			return
		}
		valid := true
		for _, r := range rcs {
			if _, _, err := decodeSign1(r, MaxReceiptSize, "receipt"); err != nil {
				valid = false
			}
		}
		if !valid {
			return
		}
		again, err := AttachReceipts(plain, rcs...)
		if err != nil {
			t.Fatalf("re-attach: %v", err)
		}
		ast, err := ParseStatement(again)
		if err != nil {
			t.Fatalf("re-attached statement does not parse: %v", err)
		}
		if e, _ := EntryHash(again); e != entry || !reflect.DeepEqual(ast.Receipts, st.Receipts) {
			t.Fatal("re-attached statement differs")
		}
		// Re-attaching yields the deterministic form, a fixed point.
		p2, r2, err := SplitTransparent(again)
		if err != nil || !bytes.Equal(p2, plain) || !reflect.DeepEqual(r2, rcs) {
			t.Fatalf("split(attach(split(x))) != split(x): %v", err)
		}
	})
}

func FuzzParseReceipt(f *testing.F) {
	addFileSeeds(f,
		filepath.Join(vectorDir, "receipt.cose"),
		filepath.Join("testdata", "receipt-ed25519.cose"),
		filepath.Join("testdata", "consistency-ed25519.cose"),
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseReceipt(data)
		if err != nil {
			if !typed(err) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		// Re-encode from the parsed fields: it must parse to the same
		// receipt, and re-encoding that is a fixed point.
		enc, err := encodeReceipt(RootSignature{Protected: r.Protected, Signature: r.Signature}, r.Inclusion, r.Consistency, r.Checkpoint)
		if err != nil {
			if len(data) > MaxReceiptSize-64 && errors.Is(err, ErrMalformed) {
				return // re-encoding may grow past the bound by a few bytes
			}
			t.Fatalf("re-encode: %v", err)
		}
		r2, err := ParseReceipt(enc)
		if err != nil {
			t.Fatalf("re-encoded receipt does not parse: %v", err)
		}
		if r2.Alg != r.Alg || !bytes.Equal(r2.KeyID, r.KeyID) || r2.Claims != r.Claims ||
			!bytes.Equal(r2.Protected, r.Protected) || !bytes.Equal(r2.Signature, r.Signature) ||
			!bytes.Equal(r2.Checkpoint, r.Checkpoint) ||
			!reflect.DeepEqual(r2.Inclusion, r.Inclusion) || !reflect.DeepEqual(r2.Consistency, r.Consistency) {
			t.Fatalf("round trip changed the receipt:\n%+v\n%+v", r, r2)
		}
		enc2, err := encodeReceipt(RootSignature{Protected: r2.Protected, Signature: r2.Signature}, r2.Inclusion, r2.Consistency, r2.Checkpoint)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not a fixed point: %v", err)
		}
		// A receipt in deterministic encoding without other unprotected
		// labels comes back byte for byte.
		if canonicalReceipt(data) && !bytes.Equal(enc, data) {
			t.Fatalf("canonical receipt re-encoded differently:\n%x\n%x", data, enc)
		}
	})
}

// canonicalReceipt reports whether data is in core deterministic encoding
// (including its protected header) and its unprotected header holds only
// vdp and the checkpoint.
func canonicalReceipt(data []byte) bool {
	var v any
	if headerDec.Unmarshal(data, &v) != nil {
		return false
	}
	if re, err := encMode.Marshal(v); err != nil || !bytes.Equal(re, data) {
		return false
	}
	_, parts, err := decodeSign1(data, MaxReceiptSize, "receipt")
	if err != nil {
		return false
	}
	var p any
	praw, err := unwrapBstr(parts.Protected)
	if err != nil || headerDec.Unmarshal(praw, &p) != nil {
		return false
	}
	if re, err := encMode.Marshal(p); err != nil || !bytes.Equal(re, praw) {
		return false
	}
	u, err := unprotectedRaw(parts.Unprotected)
	if err != nil {
		return false
	}
	for k := range u {
		if k != HeaderVDP && k != HeaderCheckpoint {
			return false
		}
	}
	return true
}
