package misbehaviour_test

import (
	"testing"

	"github.com/evident-log/evident/misbehaviour"
)

// BenchmarkCheck checks a proof of each kind under each key type the log signs with: the
// cost of an offline check is two signature verifications and, for a consistency proof,
// the proof's hashes.
func BenchmarkCheck(b *testing.B) {
	l := forkedLog(b)
	kinds := []struct {
		name string
		p    *misbehaviour.Proof
	}{
		{"same_size", mustNew(b, l.checkpoint(b, "a", 7), l.checkpoint(b, "b", 7), nil)},
		{"consistency", mustNew(b, l.checkpoint(b, "a", 7), l.checkpoint(b, "b", 12), l.proof(b, "b", 7, 12))},
	}
	keys := []struct {
		name string
		keys []string
	}{{"ed25519", []string{l.ed}}, {"mldsa44", []string{l.pq}}}
	for _, k := range kinds {
		for _, key := range keys {
			b.Run(k.name+"/"+key.name, func(b *testing.B) {
				for b.Loop() {
					if r := misbehaviour.Check(k.p, misbehaviour.Keys{LogKeys: key.keys}); !r.Proven {
						b.Fatal(r.Reason)
					}
				}
			})
		}
	}
}
