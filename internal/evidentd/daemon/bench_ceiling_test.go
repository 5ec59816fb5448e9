package daemon

import (
	"bytes"
	"crypto/ed25519"
	"testing"
)

// BenchmarkVerifyEd25519AllCores measures the all-core Ed25519 ceiling: ed25519.Verify of one
// 500-byte message (about a CHAP envelope's signed bytes) in a tight loop on every core
// (b.RunParallel), in verifies/s. Each envelope costs Evident one such verification, so every
// ingest figure of the same run is read as a share of this one.
func BenchmarkVerifyEd25519AllCores(b *testing.B) {
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
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !ed25519.Verify(pub, msg, sig) {
				b.Error("a valid signature does not verify")
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "verifies/s")
}
