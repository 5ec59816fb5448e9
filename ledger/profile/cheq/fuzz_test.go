package cheq_test

import (
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/cheqscenario"
	"github.com/evident-log/evident/ledger/internal/profiletest"
	"github.com/evident-log/evident/ledger/profile/cheq"
)

// FuzzAdmit fuzzes the record after the travel fixture's first two (profiletest.FuzzAdmit).
func FuzzAdmit(f *testing.F) {
	recs := cheqscenario.Travel(time.Date(2025, 7, 23, 11, 59, 0, 0, time.UTC))
	profiletest.FuzzAdmit(f, cheq.Adapter{}, "cheq-travel-alice", recs[:2], recs)
}
