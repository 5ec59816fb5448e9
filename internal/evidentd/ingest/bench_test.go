package ingest

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"sync"
	"testing"

	"github.com/evident-log/evident/internal/benchutil"
	"github.com/evident-log/evident/internal/evidentd/store"
)

// BenchmarkIngestBatch ingests batches of 500 signed CHAP envelopes into a real SQLite store:
// parse, canonicalise, link, verify every signature, commit durably.
func BenchmarkIngestBatch(b *testing.B) {
	const batchSize = 500
	ctx := context.Background()
	st := openStore(b, b.TempDir())
	p := newPipeline(b, st, nil)
	members := []*member{newMember("human:bench-a"), newMember("agent:bench-b"), newMember("agent:bench-c")}
	var joins [][]byte
	for _, m := range members {
		joins = append(joins, m.join(b, "wsp_bench"))
	}
	if _, err := p.Ingest(ctx, "wsp_bench", "", joins); err != nil {
		b.Fatal(err)
	}
	batches := make([][][]byte, b.N)
	var bytes int64
	for i := range batches {
		batches[i] = make([][]byte, batchSize)
		for j := range batches[i] {
			batches[i][j] = members[j%len(members)].msg(b, "wsp_bench", nil)
			bytes += int64(len(batches[i][j]))
		}
	}
	b.ResetTimer()
	cpu := benchutil.StartCPU()
	for _, recs := range batches {
		if _, err := p.Ingest(ctx, "wsp_bench", "", recs); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	listChains(b, st)
	cpu.Report(b, b.N*batchSize, "envelope")
	b.ReportMetric(float64(b.N*batchSize)/b.Elapsed().Seconds(), "envelopes/s")
	b.ReportMetric(float64(bytes)/float64(b.N*batchSize), "B/envelope")
}

// BenchmarkVerifyEd25519 is the ceiling: one raw ed25519.Verify of a ~500-byte message per op.
func BenchmarkVerifyEd25519(b *testing.B) {
	m := newMember("human:bench-verify")
	msg := make([]byte, 500)
	for i := range msg {
		msg[i] = byte('a' + i%26)
	}
	pub := m.priv.Public().(ed25519.PublicKey)
	sig := ed25519.Sign(m.priv, msg)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !ed25519.Verify(pub, msg, sig) {
			b.Fatal("verify failed")
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "verifies/s")
}

// BenchmarkIngestSingleConcurrent: 64 writers, each on its own chain, ingest one signed
// envelope per call into a real SQLite store, each durable before its call returns — what
// 64 Coordinators sending one envelope per CHAP call ask of the pipeline.
func BenchmarkIngestSingleConcurrent(b *testing.B) {
	const writers = 64
	ctx := context.Background()
	st := openStore(b, b.TempDir())
	p := newPipeline(b, st, nil)
	per := (b.N + writers - 1) / writers
	recs := make([][][]byte, writers)
	for w := range writers {
		ws := fmt.Sprintf("wsp_bench_%d", w)
		m := newMember("human:bench")
		if _, err := p.Ingest(ctx, ws, "", [][]byte{m.join(b, ws)}); err != nil {
			b.Fatal(err)
		}
		for range per {
			recs[w] = append(recs[w], m.msg(b, ws, nil))
		}
	}
	b.ResetTimer()
	cpu := benchutil.StartCPU()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for _, r := range recs[w] {
				if _, err := p.Ingest(ctx, fmt.Sprintf("wsp_bench_%d", w), "", [][]byte{r}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	listChains(b, st)
	cpu.Report(b, per*writers, "envelope")
	b.ReportMetric(float64(per*writers)/b.Elapsed().Seconds(), "envelopes/s")
	if groups, batches := p.GroupCommits(); groups > 0 {
		b.ReportMetric(float64(batches)/float64(groups), "requests/fsync")
	}
}

// listChains lists st's chains once, the read that ends each benchmark (with the journal
// the embedded store had before Pebble, it folded what the journal held).
func listChains(b *testing.B, st store.Store) {
	b.Helper()
	if _, err := st.Chains(context.Background()); err != nil {
		b.Fatal(err)
	}
}
