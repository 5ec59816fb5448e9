package verifier

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
)

// TestPrefixRoot: the root of the first m leaves, read from the inclusion proof of leaf m in
// a tree of n leaves (transparency-dev/merkle's), is that tree's root, for every 0 < m < n ≤ 70.
func TestPrefixRoot(t *testing.T) {
	tree := testonly.New(rfc6962.DefaultHasher)
	for i := range 70 {
		tree.AppendData([]byte(fmt.Sprintf("leaf %d", i)))
	}
	for n := uint64(1); n <= 70; n++ {
		for m := uint64(0); m < n; m++ {
			p, err := tree.InclusionProof(m, n)
			if err != nil {
				t.Fatal(err)
			}
			got := prefixRoot(m, n, p)
			if m == 0 {
				if got != nil {
					t.Errorf("m=0 n=%d: %x, want nil", n, got)
				}
				continue
			}
			if want := tree.HashAt(m); !bytes.Equal(got, want) {
				t.Fatalf("m=%d n=%d: %x, want %x", m, n, got, want)
			}
		}
	}
	if prefixRoot(5, 5, nil) != nil || prefixRoot(6, 5, nil) != nil || prefixRoot(1, 2, nil) != nil {
		t.Error("impossible index or empty path gave a root")
	}
}
