package journal

import (
	"hash/maphash"

	"github.com/evident-log/evident/internal/evidentd/store"
)

// idFilter is a Bloom filter of the (chain, record id) pairs the store and the journal
// hold: when it says a pair is absent, it is, and the commit's check that a record id is
// unused (checkStored) and the retry check's lookup (FindRecordIDs) need not ask the store.
// It may say a pair is present that is not, and then the store is asked as before: about
// 0.4 % of absent pairs for each part it has (TestIDFilter), so under 1 % up to three
// million pairs and a few percent at the most.
//
// It is built once per Ledger: every pair the journal takes from the Ledger's opening on
// is added as it is journaled (overlay), and a scan of the store (loadIDs) adds the pairs
// it held before; it answers only once that scan is done (ready). It lives in memory and
// is rebuilt at every start: nothing about it is on disk. Blocked: the bits of one pair are
// in one 512-bit block, one cache line, so a query reads one line per part.
type idFilter struct {
	seeds [2]maphash.Seed
	parts []idBloom // each twice the capacity of the one before; pairs go to the last
	ready bool      // the store's pairs have all been added
	off   bool      // the pairs outgrew maxFilterBytes: the filter answers nothing
	// offLog is called once, when the filter switches itself off.
	offLog   func(pairs int)
	maxBytes int // maxFilterBytes, but in tests
}

// idBloom is one part of an idFilter.
type idBloom struct {
	blocks   [][8]uint64
	n, limit int // pairs added, and how many it takes
}

const (
	// filterBitsPerID sizes a part: with 8 bits set in a 512-bit block, a full part takes
	// about 0.4 % of absent pairs for present.
	filterBitsPerID = 12
	// firstFilterIDs is the capacity of the first part.
	firstFilterIDs = 1 << 20
	// maxFilterBytes bounds the filter's memory: the ninth part would pass it, so the
	// filter switches itself off at 255 × 2^20 (about 267 million) record ids and 382.5
	// MiB, and every check asks the store, as without it.
	maxFilterBytes = 512 << 20
)

func newIDFilter(offLog func(pairs int)) *idFilter {
	return &idFilter{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, offLog: offLog, maxBytes: maxFilterBytes}
}

func (f *idFilter) hash(k store.ChainRecordID) uint64 {
	return maphash.String(f.seeds[0], k.ID) ^ maphash.String(f.seeds[1], k.Chain)*0x9e3779b97f4a7c15
}

// add adds k; the caller holds ov for writing.
func (f *idFilter) add(k store.ChainRecordID) {
	if f.off {
		return
	}
	if len(f.parts) == 0 || f.parts[len(f.parts)-1].n >= f.parts[len(f.parts)-1].limit {
		limit := firstFilterIDs << len(f.parts)
		if f.bytes()+limit*filterBitsPerID/8 > f.maxBytes {
			pairs := 0
			for i := range f.parts {
				pairs += f.parts[i].n
			}
			f.switchOff()
			if f.offLog != nil {
				f.offLog(pairs)
			}
			return
		}
		blocks := (limit*filterBitsPerID + 511) / 512
		f.parts = append(f.parts, idBloom{blocks: make([][8]uint64, blocks), limit: limit})
	}
	p := &f.parts[len(f.parts)-1]
	h := f.hash(k)
	b := &p.blocks[block(h, len(p.blocks))]
	for _, bit := range bitsOf(h) {
		b[bit>>6] |= 1 << (bit & 63)
	}
	p.n++
}

// absent reports whether k is certainly not held; the caller holds ov.
func (f *idFilter) absent(k store.ChainRecordID) bool {
	if !f.ready || f.off {
		return false
	}
	h := f.hash(k)
	bits := bitsOf(h)
	for i := range f.parts {
		p := &f.parts[i]
		b := &p.blocks[block(h, len(p.blocks))]
		in := true
		for _, bit := range bits {
			if b[bit>>6]&(1<<(bit&63)) == 0 {
				in = false
				break
			}
		}
		if in {
			return false
		}
	}
	return true
}

// switchOff makes f answer nothing from now on and lets its memory go.
func (f *idFilter) switchOff() { f.off, f.parts = true, nil }

func (f *idFilter) bytes() int {
	n := 0
	for i := range f.parts {
		n += len(f.parts[i].blocks) * 64
	}
	return n
}

// bitsOf returns the eight bits (0 … 511) of a pair hashing to h within its block.
func bitsOf(h uint64) (bits [8]uint64) {
	for i := range bits {
		h = h*0xbf58476d1ce4e5b9 + 0x94d049bb133111eb
		bits[i] = h >> 55
	}
	return bits
}

// block maps h's high half onto n blocks.
func block(h uint64, n int) uint64 { return (h >> 32) * uint64(n) >> 32 }
