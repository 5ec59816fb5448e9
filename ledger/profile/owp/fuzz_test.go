package owp_test

import (
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/owpscenario"
	"github.com/evident-log/evident/ledger/internal/profiletest"
	"github.com/evident-log/evident/ledger/profile/owp"
)

// FuzzAdmit fuzzes the record after the coverage envelope's first two (profiletest.FuzzAdmit).
func FuzzAdmit(f *testing.F) {
	const chain = "envelope:wf-coverage-prod:env-0001"
	b, _, err := owpscenario.CoverageOutreach(chain, time.Date(2026, 5, 7, 3, 14, 0, 0, time.UTC))
	if err != nil {
		f.Fatal(err)
	}
	recs := b.Records()
	profiletest.FuzzAdmit(f, owp.Adapter{}, chain, recs[:2], recs)
}
