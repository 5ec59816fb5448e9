package cop_test

import (
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/copscenario"
	"github.com/evident-log/evident/ledger/internal/profiletest"
	"github.com/evident-log/evident/ledger/profile/cop"
)

// FuzzAdmit fuzzes the record after the claims topic's first two (profiletest.FuzzAdmit).
func FuzzAdmit(f *testing.F) {
	recs, err := copscenario.ClaimsTopic("urn:cop:topic:claim-4711", time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC))
	if err != nil {
		f.Fatal(err)
	}
	profiletest.FuzzAdmit(f, cop.Adapter{}, "urn:cop:topic:claim-4711", recs[:2], recs)
}
