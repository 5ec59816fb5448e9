package chieflab_test

import (
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/chieflabscenario"
	"github.com/evident-log/evident/ledger/internal/profiletest"
	"github.com/evident-log/evident/ledger/profile/chieflab"
)

// FuzzAdmit fuzzes the record after the launch fixture's first two (profiletest.FuzzAdmit).
func FuzzAdmit(f *testing.F) {
	recs := chieflabscenario.Records("run-1", "ws-acme", time.Date(2026, 5, 12, 9, 0, 0, 0, time.UTC), chieflabscenario.Launch)
	profiletest.FuzzAdmit(f, chieflab.Adapter{}, "run-1", recs[:2], recs)
}
