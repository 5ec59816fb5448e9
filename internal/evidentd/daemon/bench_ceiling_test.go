package daemon

import (
	"testing"

	"github.com/evident-log/evident/internal/benchutil"
)

// BenchmarkVerifyEd25519AllCores measures the all-core Ed25519 ceiling: ed25519.Verify of one
// 500-byte message (about a CHAP envelope's signed bytes) in a tight loop on every core
// (b.RunParallel), in verifies/s. Each envelope costs Evident one such verification, so every
// ingest figure of the same run is read as a share of this one.
func BenchmarkVerifyEd25519AllCores(b *testing.B) { benchutil.VerifyEd25519AllCores(b) }
