// Package benchutil holds what the benchmarks share: the all-core Ed25519 ceiling every
// throughput is read against, and the CPU time a unit of work costs (steadier than a rate on
// a shared machine).
package benchutil

import (
	"bytes"
	"crypto/ed25519"
	"testing"
	"time"
)

// CPUClock measures the CPU time (user and system, every thread) the test process spends
// between its start and Report: on a shared, noisy machine the CPU a unit of work costs is
// steadier than its wall-clock rate.
type CPUClock struct{ start time.Duration }

// StartCPU starts a CPUClock.
func StartCPU() CPUClock { return CPUClock{start: processCPU()} }

// Used returns the process CPU time spent since the clock started.
func (c CPUClock) Used() time.Duration { return processCPU() - c.start }

// Report reports, on b, the process CPU time spent since the clock started per unit of n
// units, in microseconds, as the metric "cpu-µs/"+unit.
func (c CPUClock) Report(b *testing.B, n int, unit string) {
	if used := processCPU() - c.start; n > 0 && used > 0 {
		b.ReportMetric(float64(used.Microseconds())/float64(n), "cpu-µs/"+unit)
	}
}

// VerifyEd25519AllCores is the body of the ceiling benchmarks: ed25519.Verify of one 500-byte
// message (about a CHAP envelope's signed bytes) in a tight loop on every core
// (b.RunParallel), reported as verifies/s. Evident verifies one signature per envelope, so a
// throughput measured in the same run is read as a share of this one.
func VerifyEd25519AllCores(b *testing.B) {
	pub, priv, err := ed25519.GenerateKey(bytes.NewReader(make([]byte, ed25519.SeedSize)))
	if err != nil {
		b.Fatal(err)
	}
	msg := bytes.Repeat([]byte{'e'}, 500)
	sig := ed25519.Sign(priv, msg)
	tampered := bytes.Clone(msg)
	tampered[250] ^= 1
	if ed25519.Verify(pub, tampered, sig) {
		b.Fatal("a tampered message verifies")
	}
	cpu := StartCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !ed25519.Verify(pub, msg, sig) {
				b.Error("a valid signature does not verify")
				return
			}
		}
	})
	b.StopTimer()
	cpu.Report(b, b.N, "verify")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "verifies/s")
}
