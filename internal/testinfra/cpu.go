package testinfra

import (
	"testing"
	"time"
)

// CPUClock measures the CPU time (user and system, every thread) the test process spends
// between its start and Report: on a shared, noisy machine the CPU a unit of work costs is
// steadier than its wall-clock rate.
type CPUClock struct{ start time.Duration }

// StartCPU starts a CPUClock.
func StartCPU() CPUClock { return CPUClock{start: processCPU()} }

// Report reports, on b, the process CPU time spent since the clock started per unit of n
// units, in microseconds, as the metric "cpu-µs/"+unit.
func (c CPUClock) Report(b *testing.B, n int, unit string) {
	if used := processCPU() - c.start; n > 0 && used > 0 {
		b.ReportMetric(float64(used.Microseconds())/float64(n), "cpu-µs/"+unit)
	}
}
