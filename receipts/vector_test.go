package receipts

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/veraison/go-cose"
)

const vectorDir = "../testvectors/external/scitt/valid-es256"

type vectorExpect struct {
	StatementSHA256 string `json:"statement_sha256"`
	ReceiptSHA256   string `json:"receipt_sha256"`
	LogKeySHA256    string `json:"log_key_sha256"`
	VDS             int64  `json:"vds"`
	Alg             int64  `json:"alg"`
	TreeSize        uint64 `json:"tree_size"`
	LeafIndex       uint64 `json:"leaf_index"`
	Entry           string `json:"entry"`
	Root            string `json:"root"`
	SignatureValid  bool   `json:"signature_valid"`
}

type vector struct {
	statement, receipt []byte
	key                *ecdsa.PublicKey
	want               vectorExpect
}

func readVector(t testing.TB) vector {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(vectorDir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var v vector
	v.statement, v.receipt = read("statement.cose"), read("receipt.cose")
	keyFile := read("log-key.pub")
	if err := json.Unmarshal(read("expected.json"), &v.want); err != nil {
		t.Fatal(err)
	}
	for name, pair := range map[string][2]any{
		"statement": {v.statement, v.want.StatementSHA256},
		"receipt":   {v.receipt, v.want.ReceiptSHA256},
		"log key":   {keyFile, v.want.LogKeySHA256},
	} {
		h := sha256.Sum256(pair[0].([]byte))
		if got := hex.EncodeToString(h[:]); got != pair[1].(string) {
			t.Fatalf("%s file sha256 = %s, expected.json says %s", name, got, pair[1])
		}
	}
	// log-key.pub is a PEM "PUBLIC KEY" block: a PKIX SubjectPublicKeyInfo.
	blk, rest := pem.Decode(keyFile)
	if blk == nil || blk.Type != "PUBLIC KEY" || len(bytes.TrimSpace(rest)) != 0 {
		t.Fatalf("log-key.pub is not a single PEM PUBLIC KEY block")
	}
	pub, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	k, ok := pub.(*ecdsa.PublicKey)
	if !ok || k.Curve != elliptic.P256() {
		t.Fatalf("log key is %T, want P-256", pub)
	}
	v.key = k
	return v
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestIETFVectorAccepted(t *testing.T) {
	v := readVector(t)

	entry, err := EntryHash(v.statement)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(entry[:], mustHex(t, v.want.Entry)) {
		t.Fatalf("entry = %x, want %s", entry, v.want.Entry)
	}
	leaf := LeafHash(entry[:])

	st, err := ParseStatement(v.statement)
	if err != nil {
		t.Fatal(err)
	}
	if st.ContentType != "application/json" || st.Claims.Issuer == "" || st.Claims.Subject == "" || len(st.Receipts) != 0 {
		t.Fatalf("statement parsed as %+v", st)
	}

	root, r, err := VerifyInclusion(v.receipt, leaf[:], v.key)
	if err != nil {
		t.Fatalf("VerifyInclusion: %v", err)
	}
	if !v.want.SignatureValid {
		t.Fatal("expected.json says the signature is invalid")
	}
	if !bytes.Equal(root, mustHex(t, v.want.Root)) {
		t.Fatalf("root = %x, want %s", root, v.want.Root)
	}
	if int64(r.Alg) != v.want.Alg || r.Alg != cose.AlgorithmES256 {
		t.Fatalf("alg = %v, want %d", r.Alg, v.want.Alg)
	}
	if v.want.VDS != VDSRFC9162SHA256 {
		t.Fatalf("expected.json vds %d", v.want.VDS)
	}
	if len(r.Inclusion) != 1 || len(r.Consistency) != 0 {
		t.Fatalf("proofs: %+v", r)
	}
	p := r.Inclusion[0]
	if p.TreeSize != v.want.TreeSize || p.LeafIndex != v.want.LeafIndex || len(p.Path) != 3 {
		t.Fatalf("proof = size %d index %d path %d", p.TreeSize, p.LeafIndex, len(p.Path))
	}
	if r.KeyID != nil || r.Claims != (Claims{}) || r.Checkpoint != nil {
		t.Fatalf("receipt carries kid/claims/checkpoint: %+v", r)
	}
	// As a transparent statement the vector still verifies.
	ts, err := AttachReceipts(v.statement, v.receipt)
	if err != nil {
		t.Fatal(err)
	}
	e2, err := EntryHash(ts)
	if err != nil || e2 != entry {
		t.Fatalf("EntryHash(transparent) = %x, %v", e2, err)
	}
	s2, rs, err := SplitTransparent(ts)
	if err != nil || !bytes.Equal(s2, v.statement) || len(rs) != 1 || !bytes.Equal(rs[0], v.receipt) {
		t.Fatalf("SplitTransparent: %v", err)
	}

	// A wrong key, wrong leaf and wrong index are refused.
	other, _ := ecdsa.GenerateKey(elliptic.P256(), randReader{})
	if _, _, err := VerifyInclusion(v.receipt, leaf[:], &other.PublicKey); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("wrong key: %v", err)
	}
	if _, _, err := VerifyInclusion(v.receipt, entry[:], v.key); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("entry instead of leaf hash: %v", err)
	}
}

// flip returns a copy of b with byte i changed by x.
func flip(b []byte, i int, x byte) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= x
	return c
}

var flipMasks = []byte{0x01, 0x80, 0xff}

func TestIETFVectorTamperedRefused(t *testing.T) {
	v := readVector(t)
	entry, err := EntryHash(v.statement)
	if err != nil {
		t.Fatal(err)
	}
	leaf := LeafHash(entry[:])
	r, err := ParseReceipt(v.receipt)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("proof path", func(t *testing.T) {
		n := 0
		for _, h := range r.Inclusion[0].Path {
			off := bytes.Index(v.receipt, h)
			if off < 0 || bytes.Index(v.receipt[off+1:], h) >= 0 {
				t.Fatalf("path element %x not found exactly once", h)
			}
			for i := off; i < off+len(h); i++ {
				for _, m := range flipMasks {
					if _, _, err := VerifyInclusion(flip(v.receipt, i, m), leaf[:], v.key); err == nil {
						t.Fatalf("receipt with byte %d ^ %#x accepted", i, m)
					} else if !errors.Is(err, ErrBadSignature) {
						t.Fatalf("byte %d: %v, want ErrBadSignature", i, err)
					}
					n++
				}
			}
		}
		if n != 3*32*len(flipMasks) {
			t.Fatalf("tested %d mutations", n)
		}
	})

	t.Run("proof framing", func(t *testing.T) {
		// Every byte of the encoded proof (sizes, index, array heads)
		// matters too: changing any is refused.
		enc, _ := encodeProof(8, 2, r.Inclusion[0].Path)
		off := bytes.Index(v.receipt, enc)
		if off < 0 {
			t.Fatal("proof not found")
		}
		for i := off - 2; i < off+len(enc); i++ { // include the bstr head
			for _, m := range flipMasks {
				if _, _, err := VerifyInclusion(flip(v.receipt, i, m), leaf[:], v.key); err == nil {
					t.Fatalf("receipt with byte %d ^ %#x accepted", i, m)
				}
			}
		}
	})

	t.Run("signature", func(t *testing.T) {
		sig := r.Signature
		if len(sig) != 64 || !bytes.HasSuffix(v.receipt, sig) {
			t.Fatalf("signature is not the last 64 bytes")
		}
		for i := len(v.receipt) - len(sig); i < len(v.receipt); i++ {
			for _, m := range flipMasks {
				if _, _, err := VerifyInclusion(flip(v.receipt, i, m), leaf[:], v.key); !errors.Is(err, ErrBadSignature) {
					t.Fatalf("receipt with signature byte %d ^ %#x: %v", i, m, err)
				}
			}
		}
	})

	t.Run("receipt protected header", func(t *testing.T) {
		for i := 0; i < 2+1+len(r.Protected); i++ {
			for _, m := range flipMasks {
				if _, _, err := VerifyInclusion(flip(v.receipt, i, m), leaf[:], v.key); err == nil {
					t.Fatalf("receipt with byte %d ^ %#x accepted", i, m)
				}
			}
		}
	})

	t.Run("statement", func(t *testing.T) {
		st, err := ParseStatement(v.statement)
		if err != nil {
			t.Fatal(err)
		}
		// The statement's unprotected header is not covered by the entry
		// hash (that is what lets receipts be attached); everything else
		// is: tag, array head, protected header, payload and signature.
		uOff := 2 + len(encBstrHead(len(st.ProtectedRaw))) + len(st.ProtectedRaw)
		if v.statement[uOff] != 0xa0 {
			t.Fatalf("unprotected header not at %d", uOff)
		}
		covered := 0
		for i := range v.statement {
			for _, m := range flipMasks {
				mut := flip(v.statement, i, m)
				e, err := EntryHash(mut)
				if i == uOff {
					// Changing the empty map either breaks the CBOR or
					// leaves the entry unchanged.
					if err == nil && e != entry {
						t.Fatalf("unprotected byte changed the entry hash")
					}
					continue
				}
				if err == nil {
					l := LeafHash(e[:])
					if _, _, err = VerifyInclusion(v.receipt, l[:], v.key); err == nil {
						t.Fatalf("statement with byte %d ^ %#x accepted", i, m)
					}
				}
				covered++
			}
		}
		if covered != (len(v.statement)-1)*len(flipMasks) {
			t.Fatalf("covered %d", covered)
		}
	})
}

// encBstrHead returns the CBOR head of a bstr of length n.
func encBstrHead(n int) []byte {
	b, _ := encMode.Marshal(make([]byte, n))
	return b[:len(b)-n]
}
