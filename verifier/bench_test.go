package verifier_test

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/evident-log/evident/internal/benchutil"
	"github.com/evident-log/evident/verifier"
	"github.com/evident-log/evident/verifier/internal/testbundle"
)

const benchEntries = 100_000

var (
	benchOnce sync.Once
	benchZip  []byte
)

// BenchmarkVerify verifies a 100k-entry signed, sealed chain. Besides time and allocations it
// reports the largest live heap seen during the replay (sampled at each Progress call), which
// stays flat as the chain grows: entries are streamed, never held. cpu-µs/entry is the process
// CPU time per entry, steadier than entries/s on a shared machine.
func BenchmarkVerify(b *testing.B) {
	benchOnce.Do(func() {
		bb := testbundle.Build(b, testbundle.Options{Entries: benchEntries, Participants: 8, Unsigned: 0,
			SealAt: []int{25_000, 50_000, 75_000, benchEntries}, ReceiptsAtEnd: true, PayloadSize: 200})
		benchZip = bb.Zip(b)
	})
	runtime.GC()
	var peak uint64
	var ms runtime.MemStats
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchutil.StartCPU()
	for b.Loop() {
		rep, err := verifier.Verify(context.Background(), mustOpen(b, benchZip), verifier.Options{
			Trust: testbundle.Trust(b), // pinned, or the verdict is at best not_evaluated
			Progress: func(stage string, done, total uint64) {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			},
		})
		if err != nil || rep.Verdict != verifier.Verified {
			b.Fatalf("%v %s", err, rep.Verdict)
		}
	}
	cpu.Report(b, benchEntries*b.N, "entry")
	b.ReportMetric(float64(benchEntries)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

// BenchmarkVerifyEd25519AllCores is the ceiling BenchmarkVerify is held to: a tight
// ed25519.Verify loop of a ~500-byte message on every core (b.RunParallel, GOMAXPROCS
// goroutines), reported as verifies/s. Run beside BenchmarkVerify, entries/s ÷ verifies/s is
// the share of the machine's signature rate the whole offline verification reaches; so is
// cpu-µs/verify ÷ cpu-µs/entry, the share of its CPU time, which a busy machine disturbs less.
func BenchmarkVerifyEd25519AllCores(b *testing.B) { benchutil.VerifyEd25519AllCores(b) }
