package cheq_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/cheq"
	"github.com/evident-log/evident/ledger/cheq/scenario"
)

// FuzzAdmit: after the fixture's first records, any input is refused with a typed error or
// admitted; an admitted record's canonical bytes are admitted again identically by a fresh
// replay of the same prefix (the stored form replays), and a refusal leaves the chain as it was.
func FuzzAdmit(f *testing.F) {
	recs := scenario.Travel(time.Date(2025, 7, 23, 11, 59, 0, 0, time.UTC))
	for _, r := range recs {
		f.Add(r)
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`[1,2]`))
	prefix := recs[:2]
	f.Fuzz(func(t *testing.T, data []byte) {
		c, _ := ledger.NewChain("cheq-travel-alice", cheq.Adapter{})
		for _, r := range prefix {
			if _, err := c.Append(r, time.Time{}); err != nil {
				t.Fatal(err)
			}
		}
		head := c.Head
		a, err := c.Append(data, time.Time{})
		if err != nil {
			var re *ledger.RecordError
			if !asRecordError(err, &re) {
				t.Fatalf("untyped refusal %T: %v", err, err)
			}
			if c.Head != head || c.Size != 2 {
				t.Fatal("a refusal changed the chain")
			}
			return
		}
		if a.Admission.Verify != nil {
			a.Admission.Verify() // must not panic
		}
		d, _ := ledger.NewChain("cheq-travel-alice", cheq.Adapter{})
		for _, r := range prefix {
			d.Append(r, time.Time{})
		}
		b, err := d.Append(a.Admission.Canonical, time.Time{})
		if err != nil || !bytes.Equal(b.Admission.Canonical, a.Admission.Canonical) {
			t.Fatalf("the stored form does not replay: %v", err)
		}
	})
}

func asRecordError(err error, re **ledger.RecordError) bool { return errors.As(err, re) }
