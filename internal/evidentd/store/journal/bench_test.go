package journal_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/benchutil"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// BenchmarkCommitGroup is one group commit of 64 chains, one entry each (64 Coordinators
// sending single envelopes): the checks, the frame's append and fsync.
func BenchmarkCommitGroup(b *testing.B) {
	benchGroups(b, 64, 1, false)
}

// BenchmarkFold is folding journaled frames into SQLite: each op journals a group of
// chains × entries of about 450 bytes (a CHAP envelope's size) and folds it (one
// transaction), timed alone: 64 Coordinators sending a few envelopes between two folds, or
// twenty, 16 sending batches, one sending large ones.
func BenchmarkFold(b *testing.B) {
	for _, c := range []struct{ chains, per int }{{64, 5}, {64, 20}, {16, 500}, {1, 1000}} {
		b.Run(fmt.Sprintf("%dx%d", c.chains, c.per), func(b *testing.B) { benchGroups(b, c.chains, c.per, true) })
	}
}

// benchGroups commits groups of chains batches of per entries each; with fold, only the
// fold of each group into the store is timed.
func benchGroups(b *testing.B, chains, per int, fold bool) {
	ctx := context.Background()
	l := open(b, b.TempDir(), noFold)
	heads := make([]ledger.Link, chains)
	sizes := make([]uint64, chains)
	for i := range heads {
		heads[i] = ledger.Genesis
	}
	n := 0
	var cpu time.Duration // process CPU time of the timed part
	for b.Loop() {
		if fold {
			b.StopTimer()
		}
		clk := benchutil.StartCPU()
		group := make([]store.Batch, chains)
		for c := range chains {
			group[c] = paddedBatch(fmt.Sprintf("wsp_%04d", c), sizes[c], heads[c], per, 400)
		}
		for i, err := range l.CommitGroup(ctx, group) {
			if err != nil {
				b.Fatalf("batch %d: %v", i, err)
			}
		}
		for c, bt := range group {
			heads[c], sizes[c] = bt.Chain.Head, bt.Chain.Size
		}
		if fold {
			b.StartTimer()
			clk = benchutil.StartCPU()
			if _, err := l.Chains(ctx); err != nil { // folds the journal
				b.Fatal(err)
			}
		}
		cpu += clk.Used()
		n += chains * per
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(n), "µs/entry")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/entry")
}
