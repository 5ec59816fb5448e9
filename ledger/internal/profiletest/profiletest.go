// Package profiletest holds the checks every profile adapter's tests share.
package profiletest

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/evident-log/evident/ledger"
)

// FuzzAdmit fuzzes one record appended after prefix on a chain of profile p: any input is
// refused with a typed *ledger.RecordError that leaves the chain as it was, or admitted;
// an admitted record's canonical bytes (its stored form) are admitted again, identically,
// by a fresh replay of the same prefix. seeds are added to the corpus.
func FuzzAdmit(f *testing.F, p ledger.Profile, chain string, prefix, seeds [][]byte) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`[1,2]`))
	replay := func(t *testing.T) *ledger.Chain {
		c, err := ledger.NewChain(chain, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range prefix {
			if _, err := c.Append(r, time.Time{}); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := replay(t)
		head, size := c.Head, c.Size
		a, err := c.Append(data, time.Time{})
		if err != nil {
			var re *ledger.RecordError
			if !errors.As(err, &re) {
				t.Fatalf("untyped refusal %T: %v", err, err)
			}
			if c.Head != head || c.Size != size {
				t.Fatal("a refusal changed the chain")
			}
			return
		}
		if a.Admission.Verify != nil {
			a.Admission.Verify() // must not panic
		}
		b, err := replay(t).Append(a.Admission.Canonical, time.Time{})
		if err != nil || !bytes.Equal(b.Admission.Canonical, a.Admission.Canonical) {
			t.Fatalf("the stored form does not replay: %v", err)
		}
	})
}
