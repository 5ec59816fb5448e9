package receipts

import (
	"crypto/ed25519"
	"crypto/sha256"
	"testing"

	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
)

func BenchmarkSignStatement(b *testing.B) {
	seed := sha256.Sum256([]byte("bench"))
	s, err := NewSigner(ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 1024)
	o := StatementOptions{Claims: testClaims, ContentType: "application/json", Protected: map[int64]any{HeaderSeq: uint64(1)}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SignStatement(s, payload, o); err != nil {
			b.Fatal(err)
		}
	}
}

func benchVerifyInclusion(b *testing.B, s *Signer) {
	tree := testonly.New(rfc6962.DefaultHasher)
	const size = 1 << 20
	for i := 0; i < size; i++ {
		h := sha256.Sum256([]byte{byte(i), byte(i >> 8), byte(i >> 16)})
		tree.Append(h[:])
	}
	idx := uint64(size / 3)
	path, err := tree.InclusionProof(idx, size)
	if err != nil {
		b.Fatal(err)
	}
	rs, err := SignRoot(s, Claims{Subject: "origin"}, tree.Hash())
	if err != nil {
		b.Fatal(err)
	}
	rc, err := NewInclusionReceipt(rs, InclusionProof{TreeSize: size, LeafIndex: idx, Path: path}, nil)
	if err != nil {
		b.Fatal(err)
	}
	leaf := tree.LeafHash(idx)
	pub := s.Public()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := VerifyInclusion(rc, leaf, pub); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyInclusion(b *testing.B) {
	b.Run("Ed25519", func(b *testing.B) { benchVerifyInclusion(b, newEd25519Signer(b)) })
	b.Run("ES256", func(b *testing.B) { benchVerifyInclusion(b, newP256Signer(b)) })
}
