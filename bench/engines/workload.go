package engines

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
)

// Envelope is one accepted record of a chain, as the store writes it.
type Envelope struct {
	Seq      uint64
	RecordID string   // 36-character UUID-like id
	Link     [32]byte // link hash
	Value    []byte   // ~700-byte JSON-ish record
	TaskID   string   // attribute "task_id": one value per 10 entries
	Method   string   // attribute "method": one of 5 values
}

var methods = [5]string{"tools/call", "tools/list", "resources/read", "prompts/get", "sampling/createMessage"}

// ChainName is the name of the i-th chain of a benchmark.
func ChainName(i int) []byte { return fmt.Appendf(nil, "tenant-acme/agent-%04d", i) }

// rng is the deterministic generator of envelope seq of chain ci.
func rng(ci int, seq uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(ci)+0x9e3779b97f4a7c15, seq))
}

// RecordID is the record id of envelope seq of chain ci; a seq that was never
// written gives an id that is absent from the store.
func RecordID(ci int, seq uint64) string {
	r := rng(ci, seq)
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], r.Uint64())
	binary.LittleEndian.PutUint64(b[8:], r.Uint64())
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// NewEnvelope builds envelope seq of chain ci deterministically.
func NewEnvelope(ci int, chain []byte, seq uint64) Envelope {
	r := rng(ci, seq^0xabcdef)
	e := Envelope{Seq: seq, RecordID: RecordID(ci, seq)}
	for i := 0; i < 32; i += 8 {
		binary.LittleEndian.PutUint64(e.Link[i:], r.Uint64())
	}
	e.TaskID = fmt.Sprintf("task-%08x", rng(ci, seq/10).Uint32())
	e.Method = methods[r.IntN(len(methods))]
	// 544 bytes of random hex (compressible about 2:1) and ~155 of fields.
	var rnd [272]byte
	for i := 0; i < len(rnd); i += 8 {
		binary.LittleEndian.PutUint64(rnd[i:], r.Uint64())
	}
	h := hex.EncodeToString(rnd[:])
	e.Value = fmt.Appendf(make([]byte, 0, 720),
		`{"seq":%d,"record_id":%q,"task_id":%q,"method":%q,"prev":"%s","payload_hash":"%s","sig":"%s","key_id":"%s"}`,
		seq, e.RecordID, e.TaskID, e.Method, h[0:64], h[64:128], h[128:256], h[256:544])
	return e
}

// StateValue is the chain's ~300-byte state record after seq.
func StateValue(chain []byte, seq uint64, head [32]byte) []byte {
	return fmt.Appendf(make([]byte, 0, 320),
		`{"chain":%q,"next_seq":%d,"head":"%x","checkpoint":{"size":%d,"root":"%x"},"key_id":"ed25519:%x","policy":"default","created":"2026-11-28T12:00:00Z"}`,
		chain, seq+1, head, seq+1, head, head[:16])
}

func appendChain(dst []byte, tag byte, chain []byte) []byte {
	dst = append(dst, tag)
	dst = binary.AppendUvarint(dst, uint64(len(chain)))
	return append(dst, chain...)
}

func appendSeq(dst []byte, seq uint64) []byte { return binary.BigEndian.AppendUint64(dst, seq) }

// EntryPrefix is 'e' + uvarint(len(chain)) + chain.
func EntryPrefix(chain []byte) []byte { return appendChain(nil, 'e', chain) }

// EntryKey is 'e' + uvarint(len(chain)) + chain + seq (8 bytes, big-endian).
func EntryKey(chain []byte, seq uint64) []byte {
	return appendSeq(appendChain(make([]byte, 0, 12+len(chain)), 'e', chain), seq)
}

// RecordKey is 'r' + uvarint(len(chain)) + chain + record id.
func RecordKey(chain []byte, id string) []byte {
	return append(appendChain(make([]byte, 0, 4+len(chain)+len(id)), 'r', chain), id...)
}

// LinkKey is 'l' + uvarint(len(chain)) + chain + 32-byte link.
func LinkKey(chain []byte, link [32]byte) []byte {
	return append(appendChain(make([]byte, 0, 36+len(chain)), 'l', chain), link[:]...)
}

// AttrKey is 'a' + uvarint(len(chain)) + chain + uvarint(len(name)) + name +
// uvarint(len(value)) + value + seq.
func AttrKey(chain []byte, name, value string, seq uint64) []byte {
	k := appendChain(make([]byte, 0, 16+len(chain)+len(name)+len(value)), 'a', chain)
	k = binary.AppendUvarint(k, uint64(len(name)))
	k = append(k, name...)
	k = binary.AppendUvarint(k, uint64(len(value)))
	k = append(k, value...)
	return appendSeq(k, seq)
}

// ChainKey is 'c' + chain.
func ChainKey(chain []byte) []byte { return append([]byte{'c'}, chain...) }

// KV is one key and its value.
type KV struct{ K, V []byte }

// Writes are the five pairs one envelope writes.
func Writes(chain []byte, e *Envelope) [5]KV {
	seq := appendSeq(nil, e.Seq)
	return [5]KV{
		{EntryKey(chain, e.Seq), e.Value},
		{RecordKey(chain, e.RecordID), seq},
		{LinkKey(chain, e.Link), seq},
		{AttrKey(chain, "task_id", e.TaskID, e.Seq), nil},
		{AttrKey(chain, "method", e.Method, e.Seq), nil},
	}
}
