package log

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkAppendAwait measures one Append (sequence + integrate + wait for a
// covering signed checkpoint) at a time.
func BenchmarkAppendAwait(b *testing.B) {
	for _, interval := range []time.Duration{100 * time.Millisecond, time.Second} {
		b.Run(fmt.Sprintf("interval=%v", interval), func(b *testing.B) {
			dir := b.TempDir()
			l := openTestLog(b, dir+"/keys", dir+"/log", interval)
			defer closeLog(b, l)
			ctx := context.Background()
			b.ResetTimer()
			start := time.Now()
			for i := 0; b.Loop(); i++ {
				if _, _, err := l.Append(ctx, testEntry("bench", i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/append")
		})
	}
}

// BenchmarkAppendAwaitParallel measures many concurrent appenders sharing
// batches and checkpoints: ns/op is inverse throughput, ms/append is the mean
// latency each caller sees.
func BenchmarkAppendAwaitParallel(b *testing.B) {
	for _, interval := range []time.Duration{100 * time.Millisecond, time.Second} {
		b.Run(fmt.Sprintf("interval=%v", interval), func(b *testing.B) {
			dir := b.TempDir()
			l := openTestLog(b, dir+"/keys", dir+"/log", interval)
			defer closeLog(b, l)
			ctx := context.Background()
			var seq, totalNanos atomic.Int64
			b.SetParallelism(64)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := seq.Add(1)
					t0 := time.Now()
					if _, _, err := l.Append(ctx, testEntry("pbench", int(i))); err != nil {
						b.Error(err)
						return
					}
					totalNanos.Add(int64(time.Since(t0)))
				}
			})
			b.ReportMetric(float64(totalNanos.Load())/float64(b.N)/1e6, "ms/append")
		})
	}
}
