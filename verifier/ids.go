package verifier

import "crypto/sha256"

// idSet holds the record ids a replay has seen, each as the first 16 bytes of its SHA-256
// (a collision takes 2^64 work) with the seq that first used it. On a million-entry chain it
// is the largest part of a replay's memory, so a seq below 2^32 (any chain a verifier can
// replay in a day) is kept in 4 bytes rather than 8.
type idSet struct {
	low  map[[16]byte]uint32
	high map[[16]byte]uint64 // seqs from 2^32 on
}

func newIDSet() *idSet { return &idSet{low: map[[16]byte]uint32{}} }

// add records that seq uses id, unless an earlier seq did: then it returns that seq and true.
func (s *idSet) add(id string, seq uint64) (first uint64, used bool) {
	h := sha256.Sum256([]byte(id))
	k := [16]byte(h[:16])
	if q, ok := s.low[k]; ok {
		return uint64(q), true
	}
	if q, ok := s.high[k]; ok {
		return q, true
	}
	if seq <= 1<<32-1 {
		s.low[k] = uint32(seq)
		return 0, false
	}
	if s.high == nil {
		s.high = map[[16]byte]uint64{}
	}
	s.high[k] = seq
	return 0, false
}
