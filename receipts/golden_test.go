package receipts

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// goldenSigner is an Ed25519 key from a fixed seed; Ed25519 signatures are
// deterministic, so everything it signs is byte-stable.
func goldenSigner(t testing.TB) *Signer {
	seed := sha256.Sum256([]byte("evident receipts golden key"))
	s, err := NewSigner(ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func goldenStatement(t testing.TB) []byte {
	raw, err := SignStatement(goldenSigner(t), []byte(`{"artifact":"evident-golden","digest":"sha256:0000"}`), StatementOptions{
		Claims:      Claims{Issuer: "https://issuer.evident.example", Subject: "urn:evident:golden", IssuedAt: 1767225600},
		ContentType: "application/json",
		Protected:   map[int64]any{HeaderSeq: uint64(42), HeaderPrev: "sha256:1111111111111111111111111111111111111111111111111111111111111111"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run Golden -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s drifted:\n got %x\nwant %x\n(if intended, run go test -run Golden -update)", name, got, want)
	}
}

func TestGolden(t *testing.T) {
	s := goldenSigner(t)
	stmt := goldenStatement(t)
	checkGolden(t, "statement-ed25519.cose", stmt)

	// The golden statement at index 2 of a 5-entry log whose other
	// entries are fixed hashes; receipt with a checkpoint note.
	tree := testonly.New(rfc6962.DefaultHasher)
	entry, err := EntryHash(stmt)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		e := sha256.Sum256([]byte{byte(i)})
		if i == 2 {
			e = entry
		}
		tree.AppendData(e[:])
	}
	rs, err := SignRoot(s, Claims{Issuer: "https://log.evident.example", Subject: "log.evident.example/golden", IssuedAt: 1767225700}, tree.HashAt(5))
	if err != nil {
		t.Fatal(err)
	}
	path, _ := tree.InclusionProof(2, 5)
	rc, err := NewInclusionReceipt(rs, InclusionProof{TreeSize: 5, LeafIndex: 2, Path: path}, []byte("log.evident.example/golden\n5\nroot\n"))
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "receipt-ed25519.cose", rc)
	cpath, _ := tree.ConsistencyProof(3, 5)
	crc, err := NewConsistencyReceipt(rs, ConsistencyProof{Size1: 3, Size2: 5, Path: cpath}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "consistency-ed25519.cose", crc)
	ts, err := AttachReceipts(stmt, rc)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "transparent-ed25519.cose", ts)
	key, err := COSEKey(s.Public())
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "key-ed25519.cbor", key)

	// And the golden files verify.
	st, err := ParseStatement(ts)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Verify(s.Public()); err != nil {
		t.Fatal(err)
	}
	leaf := LeafHash(entry[:])
	if _, _, err := VerifyInclusion(st.Receipts[0], leaf[:], s.Public()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := VerifyConsistency(crc, tree.HashAt(3), s.Public()); err != nil {
		t.Fatal(err)
	}
}
