package ingest

import (
	"context"
	"crypto/ed25519"
	"testing"
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
	batch := func() [][]byte {
		out := make([][]byte, batchSize)
		for i := range out {
			out[i] = members[i%len(members)].msg(b, "wsp_bench", nil)
		}
		return out
	}
	var bytes int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		recs := batch()
		for _, r := range recs {
			bytes += int64(len(r))
		}
		b.StartTimer()
		if _, err := p.Ingest(ctx, "wsp_bench", "", recs); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
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
