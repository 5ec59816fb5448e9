package receipts

import (
	"bytes"
	"errors"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// rawSign1 encodes a tagged COSE_Sign1 from arbitrary parts (no signing).
func rawSign1(t testing.TB, protected any, unprotected any, payload any, sig any) []byte {
	t.Helper()
	var p []byte
	switch v := protected.(type) {
	case []byte:
		p = v
	default:
		var err error
		if p, err = encMode.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	b, err := encMode.Marshal(cbor.Tag{Number: 18, Content: []any{p, unprotected, payload, sig}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func proofBstr(t testing.TB, v any) []byte {
	t.Helper()
	b, err := encMode.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseReceiptErrors(t *testing.T) {
	h := bytes.Repeat([]byte{7}, 32)
	sig := bytes.Repeat([]byte{1}, 64)
	goodP := map[int64]any{1: -7, 395: 1}
	incl := func(p ...[]byte) map[int64]any {
		return map[int64]any{396: map[int64]any{-1: p}}
	}
	good := proofBstr(t, []any{2, 1, [][]byte{h}})

	v := readVector(t)
	base := rawSign1(t, goodP, incl(good), nil, sig)
	if _, err := ParseReceipt(base); err != nil {
		t.Fatalf("base case: %v", err)
	}

	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"untagged", base[1:], ErrMalformed},
		{"tag 98", append([]byte{0xd8, 0x62}, base[1:]...), ErrMalformed},
		{"tag 18 long form", append([]byte{0xd8, 0x12}, base[1:]...), ErrMalformed},
		{"tag 18 on a map", []byte{0xd2, 0xa0}, ErrMalformed},
		{"3-item array", append([]byte{0xd2, 0x83}, base[2:len(base)-66]...), ErrMalformed},
		{"trailing byte", append(append([]byte(nil), base...), 0), ErrMalformed},
		{"too large", append(append([]byte(nil), base...), make([]byte, MaxReceiptSize)...), ErrMalformed},
		{"vds 2", rawSign1(t, map[int64]any{1: -7, 395: 2}, incl(good), nil, sig), ErrUnsupportedVDS},
		{"vds text", rawSign1(t, map[int64]any{1: -7, 395: "RFC9162_SHA256"}, incl(good), nil, sig), ErrUnsupportedVDS},
		{"vds missing", rawSign1(t, map[int64]any{1: -7}, incl(good), nil, sig), ErrMalformed},
		{"vds unprotected", rawSign1(t, map[int64]any{1: -7}, map[int64]any{395: 1, 396: map[int64]any{-1: [][]byte{good}}}, nil, sig), ErrMalformed},
		{"alg missing", rawSign1(t, map[int64]any{395: 1}, incl(good), nil, sig), ErrMalformed},
		{"alg RS256", rawSign1(t, map[int64]any{1: -257, 395: 1}, incl(good), nil, sig), ErrUnsupportedAlg},
		{"alg text", rawSign1(t, map[int64]any{1: "ES256", 395: 1}, incl(good), nil, sig), ErrUnsupportedAlg},
		{"alg in both buckets", rawSign1(t, goodP, map[int64]any{1: -7, 396: map[int64]any{-1: [][]byte{good}}}, nil, sig), ErrMalformed},
		{"crit unknown", rawSign1(t, map[int64]any{1: -7, 395: 1, 2: []any{-99}, -99: 0}, incl(good), nil, sig), ErrMalformed},
		{"empty protected", rawSign1(t, []byte{}, incl(good), nil, sig), ErrMalformed},
		{"missing 396", rawSign1(t, goodP, map[int64]any{}, nil, sig), ErrMalformed},
		{"396 not a map", rawSign1(t, goodP, map[int64]any{396: [][]byte{good}}, nil, sig), ErrMalformed},
		{"396 empty map", rawSign1(t, goodP, map[int64]any{396: map[int64]any{}}, nil, sig), ErrMalformed},
		{"396 unknown proof label", rawSign1(t, goodP, map[int64]any{396: map[int64]any{-3: [][]byte{good}}}, nil, sig), ErrMalformed},
		{"no proofs in list", rawSign1(t, goodP, incl(), nil, sig), ErrMalformed},
		{"proof not bstr", rawSign1(t, goodP, map[int64]any{396: map[int64]any{-1: []any{[]any{2, 1, [][]byte{h}}}}}, nil, sig), ErrMalformed},
		{"path element 31 bytes", rawSign1(t, goodP, incl(proofBstr(t, []any{2, 1, [][]byte{h[:31]}})), nil, sig), ErrMalformed},
		{"path element 33 bytes", rawSign1(t, goodP, incl(proofBstr(t, []any{2, 1, [][]byte{append(h, 0)}})), nil, sig), ErrMalformed},
		{"path element text", rawSign1(t, goodP, incl(proofBstr(t, []any{2, 1, []any{string(h)}})), nil, sig), ErrMalformed},
		{"path element as int array", rawSign1(t, goodP, incl(proofBstr(t, []any{2, 1, []any{[]int{1, 2, 3}}})), nil, sig), ErrMalformed},
		{"path too short", rawSign1(t, goodP, incl(proofBstr(t, []any{4, 1, [][]byte{h}})), nil, sig), ErrMalformed},
		{"path too long", rawSign1(t, goodP, incl(proofBstr(t, []any{2, 1, [][]byte{h, h}})), nil, sig), ErrMalformed},
		{"leaf index = size", rawSign1(t, goodP, incl(proofBstr(t, []any{2, 2, [][]byte{h}})), nil, sig), ErrMalformed},
		{"leaf index > size", rawSign1(t, goodP, incl(proofBstr(t, []any{2, 9, [][]byte{h}})), nil, sig), ErrMalformed},
		{"tree size 0", rawSign1(t, goodP, incl(proofBstr(t, []any{0, 0, [][]byte{}})), nil, sig), ErrMalformed},
		{"negative size", rawSign1(t, goodP, incl(proofBstr(t, []any{-2, 1, [][]byte{h}})), nil, sig), ErrMalformed},
		{"4-item proof", rawSign1(t, goodP, incl(proofBstr(t, []any{2, 1, [][]byte{h}, 0})), nil, sig), ErrMalformed},
		{"proof trailing byte", rawSign1(t, goodP, incl(append(append([]byte(nil), good...), 0)), nil, sig), ErrMalformed},
		{"proof non-minimal int", rawSign1(t, goodP, incl(append([]byte{0x83, 0x18, 0x02}, good[2:]...)), nil, sig), ErrMalformed},
		{"proof tagged", rawSign1(t, goodP, incl(append([]byte{0x83, 0xc1}, good[1:]...)), nil, sig), ErrMalformed},
		{"consistency size1 0", rawSign1(t, goodP, map[int64]any{396: map[int64]any{-2: [][]byte{proofBstr(t, []any{0, 2, [][]byte{}})}}}, nil, sig), ErrMalformed},
		{"consistency size1 > size2", rawSign1(t, goodP, map[int64]any{396: map[int64]any{-2: [][]byte{proofBstr(t, []any{3, 2, [][]byte{h}})}}}, nil, sig), ErrMalformed},
		{"attached payload", rawSign1(t, goodP, incl(good), h, sig), ErrMalformed},
		{"empty signature", rawSign1(t, goodP, incl(good), nil, []byte{}), ErrMalformed},
		{"checkpoint text", rawSign1(t, goodP, map[int64]any{396: map[int64]any{-1: [][]byte{good}}, HeaderCheckpoint: "note"}, nil, sig), ErrMalformed},
		{"checkpoint too large", rawSign1(t, goodP, map[int64]any{396: map[int64]any{-1: [][]byte{good}}, HeaderCheckpoint: make([]byte, MaxCheckpointSize+1)}, nil, sig), ErrMalformed},
		{"kid not bstr", rawSign1(t, map[int64]any{1: -7, 395: 1, 4: "kid"}, incl(good), nil, sig), ErrMalformed},
		{"claims not map", rawSign1(t, map[int64]any{1: -7, 395: 1, 15: []any{}}, incl(good), nil, sig), ErrMalformed},
		{"iss not text", rawSign1(t, map[int64]any{1: -7, 395: 1, 15: map[int64]any{1: 5}}, incl(good), nil, sig), ErrMalformed},
		{"iat float", rawSign1(t, map[int64]any{1: -7, 395: 1, 15: map[int64]any{6: 1.5}}, incl(good), nil, sig), ErrMalformed},
		// Huge declared lengths must fail without allocating them.
		{"huge bstr", []byte{0xd2, 0x84, 0x5b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, ErrMalformed},
		{"huge array", []byte{0xd2, 0x9b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, ErrMalformed},
		{"huge map", append([]byte{0xd2, 0x84, 0x43, 0xa1, 0x01, 0x26, 0xbb, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0xf6), ErrMalformed},
		{"huge proof array", rawSign1(t, goodP, incl([]byte{0x83, 0x02, 0x01, 0x9b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), nil, sig), ErrMalformed},
		{"huge path bstr", rawSign1(t, goodP, incl([]byte{0x83, 0x02, 0x01, 0x81, 0x5b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), nil, sig), ErrMalformed},
		{"indefinite array", append([]byte{0xd2, 0x9f}, append(base[2:], 0xff)...), ErrMalformed},
		{"duplicate unprotected key", dupKeyReceipt(t, goodP, good, sig), ErrMalformed},
		{"statement as receipt", v.statement, ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseReceipt(tc.in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("ParseReceipt = %v, want %v", err, tc.want)
			}
			// The verifiers report the same class of error.
			if _, _, err := VerifyInclusion(tc.in, h, v.key); !errors.Is(err, tc.want) {
				t.Fatalf("VerifyInclusion = %v, want %v", err, tc.want)
			}
		})
	}

	// Every truncation of a valid receipt is refused.
	for _, rc := range [][]byte{v.receipt, base} {
		for n := 0; n < len(rc); n++ {
			if _, err := ParseReceipt(rc[:n]); !errors.Is(err, ErrMalformed) {
				t.Fatalf("truncated to %d: %v", n, err)
			}
		}
	}

	// Verifier argument errors.
	if _, _, err := VerifyInclusion(v.receipt, h[:31], v.key); !errors.Is(err, ErrBadProof) {
		t.Fatalf("short leaf hash: %v", err)
	}
	cons := rawSign1(t, goodP, map[int64]any{396: map[int64]any{-2: [][]byte{proofBstr(t, []any{1, 2, [][]byte{h}})}}}, nil, sig)
	if _, _, err := VerifyConsistency(cons, h[:5], v.key); !errors.Is(err, ErrBadProof) {
		t.Fatalf("short old root: %v", err)
	}
	if _, _, err := VerifyConsistency(cons, h, v.key); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("consistency with bogus signature: %v", err)
	}
	both := rawSign1(t, goodP, map[int64]any{396: map[int64]any{-1: [][]byte{good}, -2: [][]byte{proofBstr(t, []any{1, 2, [][]byte{h}})}}}, nil, sig)
	if _, err := ParseReceipt(both); err != nil {
		t.Fatalf("receipt with both proof kinds: %v", err)
	}
	if _, _, err := VerifyInclusion(both, h, v.key); !errors.Is(err, ErrMalformed) {
		t.Fatalf("VerifyInclusion(both): %v", err)
	}
	two := rawSign1(t, goodP, incl(good, good), nil, sig)
	if _, _, err := VerifyInclusion(two, h, v.key); !errors.Is(err, ErrMalformed) {
		t.Fatalf("VerifyInclusion(two proofs): %v", err)
	}
	// A key of the wrong type for the receipt's alg.
	leaf := mustHex(t, v.want.Entry)
	lh := LeafHash(leaf)
	if _, _, err := VerifyInclusion(v.receipt, lh[:], newEd25519Signer(t).Public()); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("Ed25519 key for ES256 receipt: %v", err)
	}
}

// dupKeyReceipt encodes a receipt whose unprotected map repeats label 396.
func dupKeyReceipt(t testing.TB, p map[int64]any, proof, sig []byte) []byte {
	pb, _ := encMode.Marshal(p)
	vdp, _ := encMode.Marshal(map[int64]any{-1: [][]byte{proof}})
	var b []byte
	b = append(b, 0xd2, 0x84)
	pbs, _ := encMode.Marshal(pb)
	b = append(b, pbs...)
	b = append(b, 0xa2, 0x19, 0x01, 0x8c)
	b = append(b, vdp...)
	b = append(b, 0x19, 0x01, 0x8c)
	b = append(b, vdp...)
	b = append(b, 0xf6)
	sb, _ := encMode.Marshal(sig)
	return append(b, sb...)
}

func TestParseStatementErrors(t *testing.T) {
	s := newEd25519Signer(t)
	good := mustStatement(t, s)
	st, err := ParseStatement(good)
	if err != nil {
		t.Fatal(err)
	}
	sig := st.Signature
	p := func(extra map[int64]any) map[int64]any {
		m := map[int64]any{1: -8, 15: map[int64]any{1: "iss", 2: "sub"}}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"untagged", good[1:], ErrMalformed},
		{"tag 98", append([]byte{0xd8, 0x62}, good[1:]...), ErrMalformed},
		{"trailing", append(append([]byte(nil), good...), 0xf6), ErrMalformed},
		{"too large", make([]byte, MaxStatementSize+1), ErrMalformed},
		{"alg missing", rawSign1(t, map[int64]any{3: "text/plain"}, map[int64]any{}, []byte("x"), sig), ErrMalformed},
		{"alg unsupported", rawSign1(t, p(map[int64]any{1: -65535}), map[int64]any{}, []byte("x"), sig), ErrUnsupportedAlg},
		{"kid empty", rawSign1(t, p(map[int64]any{4: []byte{}}), map[int64]any{}, []byte("x"), sig), ErrMalformed},
		{"sub not text", rawSign1(t, p(map[int64]any{15: map[int64]any{2: []byte("s")}}), map[int64]any{}, []byte("x"), sig), ErrMalformed},
		{"content type bad", rawSign1(t, p(map[int64]any{3: "nonsense"}), map[int64]any{}, []byte("x"), sig), ErrMalformed},
		{"394 not array", rawSign1(t, p(nil), map[int64]any{394: []byte("r")}, []byte("x"), sig), ErrMalformed},
		{"394 empty", rawSign1(t, p(nil), map[int64]any{394: []any{}}, []byte("x"), sig), ErrMalformed},
		{"394 text element", rawSign1(t, p(nil), map[int64]any{394: []any{"r"}}, []byte("x"), sig), ErrMalformed},
		{"label in both buckets", rawSign1(t, p(map[int64]any{3: "text/plain"}), map[int64]any{3: "text/plain"}, []byte("x"), sig), ErrMalformed},
		{"unprotected not map", rawSign1(t, p(nil), []any{}, []byte("x"), sig), ErrMalformed},
		{"payload text", rawSign1(t, p(nil), map[int64]any{}, "x", sig), ErrMalformed},
		{"huge payload length", append(append([]byte(nil), good[:bytes.Index(good, []byte("payload"))-1]...), 0x5b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseStatement(tc.in); !errors.Is(err, tc.want) {
				t.Fatalf("ParseStatement = %v, want %v", err, tc.want)
			}
		})
	}
	for n := 0; n < len(good); n++ {
		if _, err := ParseStatement(good[:n]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
		if _, err := EntryHash(good[:n]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("EntryHash truncated to %d: %v", n, err)
		}
	}
	// Detached payloads parse and hash but do not verify here.
	det := rawSign1(t, st.ProtectedRaw, map[int64]any{}, nil, sig)
	dst, err := ParseStatement(det)
	if err != nil {
		t.Fatal(err)
	}
	if err := dst.Verify(s.Public()); !errors.Is(err, ErrMalformed) {
		t.Fatalf("detached Verify: %v", err)
	}
	if err := (&Statement{}).Verify(s.Public()); !errors.Is(err, ErrMalformed) {
		t.Fatalf("zero Statement Verify: %v", err)
	}
}
