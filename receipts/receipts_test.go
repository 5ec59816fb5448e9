package receipts

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"testing"

	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"github.com/veraison/go-cose"
)

func TestStatementRoundTrip(t *testing.T) {
	for name, s := range map[string]*Signer{
		"Ed25519": newEd25519Signer(t),
		"P-256":   newP256Signer(t),
	} {
		t.Run(name, func(t *testing.T) {
			payload := []byte(`{"artifact":"sha256:00"}`)
			raw, err := SignStatement(s, payload, StatementOptions{
				Claims:      testClaims,
				ContentType: "application/json",
				Protected:   map[int64]any{HeaderSeq: uint64(7), HeaderPrev: "sha256:abcd"},
			})
			if err != nil {
				t.Fatal(err)
			}
			st, err := ParseStatement(raw)
			if err != nil {
				t.Fatal(err)
			}
			if st.Alg != s.Algorithm() || !bytes.Equal(st.KeyID, s.KeyID()) || st.Claims != testClaims ||
				st.ContentType != "application/json" || !bytes.Equal(st.Payload, payload) || len(st.Receipts) != 0 {
				t.Fatalf("parsed %+v", st)
			}
			if seq, ok := st.Seq(); !ok || seq != 7 {
				t.Fatalf("Seq = %d, %v", seq, ok)
			}
			if prev, ok := st.Prev(); !ok || prev != "sha256:abcd" {
				t.Fatalf("Prev = %q, %v", prev, ok)
			}
			tp, _ := KeyThumbprint(s.Public())
			if !bytes.Equal(tp, s.KeyID()) || len(tp) != 32 {
				t.Fatal("kid is not the thumbprint")
			}
			if err := st.Verify(s.Public()); err != nil {
				t.Fatal(err)
			}
			// Deterministic encoding: re-encoding the header gives the same bytes.
			re, err := encMode.Marshal(map[any]any(st.Protected))
			if err != nil || !bytes.Equal(re, st.ProtectedRaw) {
				t.Fatalf("protected header is not deterministic: %x vs %x", re, st.ProtectedRaw)
			}
			// Other keys, other key types, tampering: ErrBadSignature.
			for _, pub := range []crypto.PublicKey{newEd25519Signer(t).Public(), newP256Signer(t).Public(), nil} {
				if err := st.Verify(pub); !errors.Is(err, ErrBadSignature) {
					t.Fatalf("Verify(other %T) = %v", pub, err)
				}
			}
			i := bytes.Index(raw, payload)
			bad, err := ParseStatement(flip(raw, i, 1))
			if err != nil {
				t.Fatal(err)
			}
			if err := bad.Verify(s.Public()); !errors.Is(err, ErrBadSignature) {
				t.Fatalf("tampered payload: %v", err)
			}
		})
	}
}

func TestSignStatementRefusals(t *testing.T) {
	s := newEd25519Signer(t)
	for name, o := range map[string]StatementOptions{
		"no issuer":      {Claims: Claims{Subject: "x"}},
		"no subject":     {Claims: Claims{Issuer: "x"}},
		"alg override":   {Claims: testClaims, Protected: map[int64]any{1: int64(-7)}},
		"kid override":   {Claims: testClaims, Protected: map[int64]any{4: []byte("k")}},
		"receipts label": {Claims: testClaims, Protected: map[int64]any{HeaderReceipts: []any{}}},
		"bad ctype":      {Claims: testClaims, ContentType: "nonsense"},
		"unencodable":    {Claims: testClaims, Protected: map[int64]any{HeaderSeq: make(chan int)}},
	} {
		if _, err := SignStatement(s, []byte("x"), o); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := NewSigner(mustRSA(t)); !errors.Is(err, ErrUnsupportedAlg) {
		t.Errorf("RSA signer: %v", err)
	}
	k384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if _, err := NewSigner(k384); !errors.Is(err, ErrUnsupportedAlg) {
		t.Errorf("P-384 signer: %v", err)
	}
}

func mustRSA(t testing.TB) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// testLog is a log of signed statements with its Merkle tree.
type testLog struct {
	statements [][]byte
	entries    [][32]byte
	tree       *testonly.Tree
}

func newTestLog(t testing.TB, s *Signer, n int) *testLog {
	t.Helper()
	l := &testLog{tree: testonly.New(rfc6962.DefaultHasher)}
	for i := 0; i < n; i++ {
		raw, err := SignStatement(s, fmt.Appendf(nil, "statement %d", i), StatementOptions{
			Claims: testClaims, Protected: map[int64]any{HeaderSeq: uint64(i)},
		})
		if err != nil {
			t.Fatal(err)
		}
		e, err := EntryHash(raw)
		if err != nil {
			t.Fatal(err)
		}
		l.statements = append(l.statements, raw)
		l.entries = append(l.entries, e)
		l.tree.AppendData(e[:])
		lh := LeafHash(e[:])
		if !bytes.Equal(lh[:], l.tree.LeafHash(uint64(i))) {
			t.Fatal("LeafHash differs from RFC 6962 leaf hash")
		}
	}
	return l
}

func logSigners(t *testing.T) map[string]*Signer {
	return map[string]*Signer{
		"Ed25519": newEd25519Signer(t),
		"P-256":   newP256Signer(t),
		"ES384":   newVerifyOnlySigner(t, cose.AlgorithmES384),
		"PS256":   newVerifyOnlySigner(t, cose.AlgorithmPS256),
	}
}

func TestInclusionReceipts(t *testing.T) {
	issuer := newEd25519Signer(t)
	lg := newTestLog(t, issuer, 17)
	for name, logKey := range logSigners(t) {
		t.Run(name, func(t *testing.T) {
			for size := uint64(1); size <= 17; size++ {
				root := lg.tree.HashAt(size)
				claims := Claims{Issuer: "https://log.example", Subject: "log.example/origin", IssuedAt: int64(size)}
				rs, err := SignRoot(logKey, claims, root) // once per tree size
				if err != nil {
					t.Fatal(err)
				}
				for i := uint64(0); i < size; i++ {
					path, err := lg.tree.InclusionProof(i, size)
					if err != nil {
						t.Fatal(err)
					}
					var cp []byte
					if i%2 == 1 {
						cp = fmt.Appendf(nil, "log.example/origin\n%d\nroot\n", size)
					}
					rc, err := NewInclusionReceipt(rs, InclusionProof{TreeSize: size, LeafIndex: i, Path: path}, cp)
					if err != nil {
						t.Fatal(err)
					}
					leaf := LeafHash(lg.entries[i][:])
					got, r, err := VerifyInclusion(rc, leaf[:], logKey.Public())
					if err != nil {
						t.Fatalf("size %d leaf %d: %v", size, i, err)
					}
					if !bytes.Equal(got, root) || r.Claims != claims || !bytes.Equal(r.KeyID, logKey.KeyID()) ||
						!bytes.Equal(r.Checkpoint, cp) || r.Alg != logKey.Algorithm() {
						t.Fatalf("size %d leaf %d: receipt %+v", size, i, r)
					}
					// Another leaf's hash is refused.
					other := LeafHash(lg.entries[(i+1)%17][:])
					if _, _, err := VerifyInclusion(rc, other[:], logKey.Public()); !errors.Is(err, ErrBadSignature) {
						t.Fatalf("wrong leaf: %v", err)
					}
					// An inclusion receipt is not a consistency receipt.
					if _, _, err := VerifyConsistency(rc, root, logKey.Public()); !errors.Is(err, ErrMalformed) {
						t.Fatalf("VerifyConsistency on inclusion receipt: %v", err)
					}
				}
			}
		})
	}
}

func TestConsistencyReceipts(t *testing.T) {
	lg := newTestLog(t, newP256Signer(t), 17)
	for name, logKey := range logSigners(t) {
		t.Run(name, func(t *testing.T) {
			sigs := map[uint64]RootSignature{}
			for s2 := uint64(1); s2 <= 17; s2++ {
				rs, err := SignRoot(logKey, Claims{Subject: "log.example/origin"}, lg.tree.HashAt(s2))
				if err != nil {
					t.Fatal(err)
				}
				sigs[s2] = rs
			}
			for s1 := uint64(1); s1 <= 17; s1++ {
				for s2 := s1; s2 <= 17; s2++ {
					path, err := lg.tree.ConsistencyProof(s1, s2)
					if err != nil {
						t.Fatal(err)
					}
					rc, err := NewConsistencyReceipt(sigs[s2], ConsistencyProof{Size1: s1, Size2: s2, Path: path}, nil)
					if s1 == s2 {
						// RFC 9942's CDDL has no empty path: equal sizes are refused…
						if !errors.Is(err, ErrEmptyPath) || !errors.Is(err, ErrMalformed) || rc != nil {
							t.Fatalf("%d->%d: got %v, want ErrEmptyPath", s1, s2, err)
						}
						// …but one issued before (assembled here without the check) still verifies.
						if rc, err = encodeReceipt(sigs[s2], nil, []ConsistencyProof{{Size1: s1, Size2: s2}}, nil); err != nil {
							t.Fatalf("%d->%d: legacy receipt: %v", s1, s2, err)
						}
					} else if err != nil {
						t.Fatalf("%d->%d: %v", s1, s2, err)
					}
					got, r, err := VerifyConsistency(rc, lg.tree.HashAt(s1), logKey.Public())
					if err != nil {
						t.Fatalf("%d->%d: %v", s1, s2, err)
					}
					if !bytes.Equal(got, lg.tree.HashAt(s2)) || len(r.Consistency) != 1 {
						t.Fatalf("%d->%d: new root %x", s1, s2, got)
					}
					// A wrong old root is refused.
					wrong := lg.tree.HashAt(s1%17 + 1)
					if _, _, err := VerifyConsistency(rc, wrong, logKey.Public()); err == nil {
						t.Fatalf("%d->%d: wrong old root accepted", s1, s2)
					} else if !errors.Is(err, ErrBadProof) && !errors.Is(err, ErrBadSignature) {
						t.Fatalf("%d->%d: wrong old root: %v", s1, s2, err)
					}
					// Tampering with any path byte is refused.
					for k := range path {
						off := bytes.Index(rc, path[k])
						if _, _, err := VerifyConsistency(flip(rc, off+3, 0x10), lg.tree.HashAt(s1), logKey.Public()); err == nil {
							t.Fatalf("%d->%d: tampered path %d accepted", s1, s2, k)
						}
					}
					if _, _, err := VerifyInclusion(rc, make([]byte, 32), logKey.Public()); !errors.Is(err, ErrMalformed) {
						t.Fatalf("VerifyInclusion on consistency receipt: %v", err)
					}
				}
			}
		})
	}
}

func TestTransparentStatement(t *testing.T) {
	issuer := newP256Signer(t)
	lg := newTestLog(t, issuer, 5)
	logA, logB := newEd25519Signer(t), newP256Signer(t)
	stmt := lg.statements[3]
	entry := lg.entries[3]

	receipt := func(s *Signer) []byte {
		path, _ := lg.tree.InclusionProof(3, 5)
		rs, err := SignRoot(s, Claims{Subject: "origin"}, lg.tree.HashAt(5))
		if err != nil {
			t.Fatal(err)
		}
		rc, err := NewInclusionReceipt(rs, InclusionProof{TreeSize: 5, LeafIndex: 3, Path: path}, []byte("note"))
		if err != nil {
			t.Fatal(err)
		}
		return rc
	}
	ra, rb := receipt(logA), receipt(logB)

	ts1, err := AttachReceipts(stmt, ra)
	if err != nil {
		t.Fatal(err)
	}
	ts2, err := AttachReceipts(ts1, rb) // appends to the existing 394
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range [][]byte{ts1, ts2} {
		e, err := EntryHash(ts)
		if err != nil || e != entry {
			t.Fatalf("EntryHash changed: %x %v", e, err)
		}
	}
	st, err := ParseStatement(ts2)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Receipts) != 2 || !bytes.Equal(st.Receipts[0], ra) || !bytes.Equal(st.Receipts[1], rb) {
		t.Fatalf("receipts: %d", len(st.Receipts))
	}
	if err := st.Verify(issuer.Public()); err != nil {
		t.Fatal(err)
	}
	leaf := LeafHash(entry[:])
	for i, k := range []*Signer{logA, logB} {
		if _, _, err := VerifyInclusion(st.Receipts[i], leaf[:], k.Public()); err != nil {
			t.Fatalf("receipt %d: %v", i, err)
		}
	}
	plain, rcs, err := SplitTransparent(ts2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(plain, stmt) || len(rcs) != 2 || !bytes.Equal(rcs[0], ra) || !bytes.Equal(rcs[1], rb) {
		t.Fatal("SplitTransparent did not give back the statement and receipts")
	}
	same, none, err := SplitTransparent(stmt)
	if err != nil || !bytes.Equal(same, stmt) || none != nil {
		t.Fatalf("SplitTransparent(plain) = %v", err)
	}
	if _, err := AttachReceipts(stmt); !errors.Is(err, ErrMalformed) {
		t.Fatalf("attach nothing: %v", err)
	}
	if _, err := AttachReceipts(stmt, []byte("not a receipt")); !errors.Is(err, ErrMalformed) {
		t.Fatalf("attach garbage: %v", err)
	}
	many := make([][]byte, MaxReceipts+1)
	for i := range many {
		many[i] = ra
	}
	if _, err := AttachReceipts(stmt, many...); !errors.Is(err, ErrMalformed) {
		t.Fatalf("attach too many: %v", err)
	}
}

func TestTransparentKeepsOtherUnprotected(t *testing.T) {
	s := newEd25519Signer(t)
	raw, err := SignStatement(s, []byte("p"), StatementOptions{Claims: testClaims})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := ParseStatement(raw)
	// Same statement carrying an extra unprotected parameter.
	withX, err := encodeSign1(st.ProtectedRaw, map[int64]any{-65537: "hint"}, st.Payload, st.Signature)
	if err != nil {
		t.Fatal(err)
	}
	e0, _ := EntryHash(raw)
	e1, err := EntryHash(withX)
	if err != nil || e0 != e1 {
		t.Fatal("unprotected parameter changed the entry hash")
	}
	rc := mustInclusionReceipt(t, s)
	ts, err := AttachReceipts(withX, rc)
	if err != nil {
		t.Fatal(err)
	}
	back, rcs, err := SplitTransparent(ts)
	if err != nil || !bytes.Equal(back, withX) || len(rcs) != 1 {
		t.Fatalf("split: %v", err)
	}
}

func mustInclusionReceipt(t testing.TB, s *Signer) []byte {
	t.Helper()
	rs, err := SignRoot(s, Claims{}, make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := NewInclusionReceipt(rs, InclusionProof{TreeSize: 1, LeafIndex: 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func TestBuilderRefusals(t *testing.T) {
	s := newEd25519Signer(t)
	if _, err := SignRoot(s, Claims{}, make([]byte, 31)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("short root: %v", err)
	}
	rs, err := SignRoot(s, Claims{}, make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	h := make([]byte, 32)
	for name, p := range map[string]InclusionProof{
		"index = size":   {TreeSize: 2, LeafIndex: 2, Path: [][]byte{h}},
		"empty tree":     {TreeSize: 0, LeafIndex: 0},
		"short path":     {TreeSize: 2, LeafIndex: 0},
		"long path":      {TreeSize: 2, LeafIndex: 0, Path: [][]byte{h, h}},
		"31-byte hash":   {TreeSize: 2, LeafIndex: 0, Path: [][]byte{h[:31]}},
		"33-byte hashes": {TreeSize: 2, LeafIndex: 1, Path: [][]byte{append(h, 0)}},
	} {
		if _, err := NewInclusionReceipt(rs, p, nil); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, p := range map[string]ConsistencyProof{
		"size1 0":       {Size1: 0, Size2: 3},
		"size1 > size2": {Size1: 4, Size2: 3, Path: [][]byte{h}},
		"wrong length":  {Size1: 1, Size2: 3},
	} {
		if _, err := NewConsistencyReceipt(rs, p, nil); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := NewInclusionReceipt(rs, InclusionProof{TreeSize: 1}, make([]byte, MaxCheckpointSize+1)); !errors.Is(err, ErrMalformed) {
		t.Errorf("huge checkpoint: %v", err)
	}
	if _, err := NewInclusionReceipt(RootSignature{}, InclusionProof{TreeSize: 1}, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("empty root signature: %v", err)
	}
	// A statement's protected header is not a receipt header.
	st, _ := ParseStatement(mustStatement(t, s))
	if _, err := NewInclusionReceipt(RootSignature{Protected: st.ProtectedRaw, Signature: st.Signature}, InclusionProof{TreeSize: 1}, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("statement header as receipt: %v", err)
	}
}

func mustStatement(t testing.TB, s *Signer) []byte {
	t.Helper()
	raw, err := SignStatement(s, []byte("payload"), StatementOptions{Claims: testClaims})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestKeys(t *testing.T) {
	// RFC 9679 section 6 example (EC2 P-256).
	x := mustHex(t, "65eda5a12577c2bae829437fe338701a10aaa375e1bb5b5de108de439c08551d")
	y := mustHex(t, "1e52ed75701163f7f9e40ddf9f341b3dc9ba860af7e0ca7ca7e9eecd0084d19c")
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
	if err != nil {
		t.Fatal(err)
	}
	tp, err := KeyThumbprint(pub)
	if err != nil {
		t.Fatal(err)
	}
	if want := mustHex(t, "496bd8afadf307e5b08c64b0421bf9dc01528a344a43bda88fadd1669da253ec"); !bytes.Equal(tp, want) {
		t.Fatalf("thumbprint %x, want %x", tp, want)
	}

	ed, _, _ := ed25519.GenerateKey(rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	for _, k := range []crypto.PublicKey{pub, ed, &p384.PublicKey, &mustRSA(t).PublicKey} {
		enc, err := COSEKey(k)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseCOSEKey(enc)
		if err != nil {
			t.Fatalf("%T: %v", k, err)
		}
		if !back.(interface{ Equal(crypto.PublicKey) bool }).Equal(k) {
			t.Fatalf("%T did not round-trip", k)
		}
		tp2, _ := KeyThumbprint(back)
		var m map[any]any
		if err := strictDec.Unmarshal(enc, &m); err != nil || !bytes.Equal(m[keyKid].([]byte), tp2) {
			t.Fatalf("COSE_Key kid is not the thumbprint")
		}
		if _, kid, err := ParseCOSEKeyKid(enc); err != nil || !bytes.Equal(kid, tp2) {
			t.Fatalf("ParseCOSEKeyKid: kid %x, %v; want the thumbprint %x", kid, err, tp2)
		}
		delete(m, keyKid)
		bare, _ := encMode.Marshal(m)
		if _, kid, err := ParseCOSEKeyKid(bare); err != nil || kid != nil {
			t.Fatalf("ParseCOSEKeyKid of a key without kid: %x, %v", kid, err)
		}
		m[keyKid] = "text"
		bad, _ := encMode.Marshal(m)
		if _, _, err := ParseCOSEKeyKid(bad); !errors.Is(err, ErrMalformed) {
			t.Fatalf("ParseCOSEKeyKid of a text kid: %v", err)
		}
	}

	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	for name, tc := range map[string]struct {
		key  map[int64]any
		want error
	}{
		"private OKP":     {map[int64]any{1: 1, -1: 6, -2: make([]byte, 32), -4: []byte(edPriv)}, ErrMalformed},
		"no kty":          {map[int64]any{-1: 6, -2: make([]byte, 32)}, ErrMalformed},
		"X25519":          {map[int64]any{1: 1, -1: 4, -2: make([]byte, 32)}, ErrUnsupportedAlg},
		"symmetric":       {map[int64]any{1: 4, -1: make([]byte, 16)}, ErrUnsupportedAlg},
		"short x":         {map[int64]any{1: 1, -1: 6, -2: make([]byte, 31)}, ErrMalformed},
		"EC2 not a point": {map[int64]any{1: 2, -1: 1, -2: make([]byte, 32), -3: make([]byte, 32)}, ErrMalformed},
		"EC2 compressed":  {map[int64]any{1: 2, -1: 1, -2: x, -3: true}, ErrMalformed},
		"alg mismatch":    {map[int64]any{1: 1, -1: 6, -2: make([]byte, 32), 3: -7}, ErrMalformed},
	} {
		enc, _ := encMode.Marshal(tc.key)
		if _, err := ParseCOSEKey(enc); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if _, err := ParseCOSEKey([]byte{0xa1, 0x01}); !errors.Is(err, ErrMalformed) {
		t.Errorf("truncated: %v", err)
	}
	if _, err := KeyThumbprint("not a key"); !errors.Is(err, ErrUnsupportedAlg) {
		t.Errorf("thumbprint of string: %v", err)
	}
}
