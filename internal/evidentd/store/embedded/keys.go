package embedded

import (
	"encoding/binary"

	"github.com/evident-log/evident/ledger"
)

// The keys of the database. Each begins with a byte naming its table. A chain id inside a
// key is written as a uvarint of its length and its bytes (ck), so that no chain's keys
// run into another's; numbers are 8-byte big endian, so that they sort in order.
//
//	"\x00format"                     → uint (formatVersion)
//	'c' chain                        → chain (chain ids sort bytewise, as ListChains lists them)
//	'e' ck seq                       → entry
//	'l' ck link(32)                  → uint seq (the link index)
//	'r' ck recordID                  → uint seq (the record-id index)
//	'a' ck str(name) str(value) seq  → "" (the attribute index: entries carrying a value)
//	's' ck n                         → seal
//	'p' ck n                         → "" (a seal not yet in the log)
//	'f' ck k                         → fork (k counts a chain's forks from 0)
//	'h' chain                        → evidence head
//	'g' id                           → registration
//	'o' seq                          → id (registrations in the order they came)
//	'q' seq                          → id (registrations not yet in the log)
//	'k' entry(32)                    → claim
//
// str(x) is a uvarint of x's length and its bytes.
const (
	tagChain     = 'c'
	tagEntry     = 'e'
	tagLink      = 'l'
	tagRecordID  = 'r'
	tagAttr      = 'a'
	tagSeal      = 's'
	tagPending   = 'p'
	tagFork      = 'f'
	tagHead      = 'h'
	tagReg       = 'g'
	tagRegOrder  = 'o'
	tagRegQueued = 'q'
	tagClaim     = 'k'
)

var keyFormat = []byte("\x00format")

// ck returns tag followed by chain's id as keys hold it, with room for extra more bytes.
func ck(tag byte, chain string, extra int) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(chain)+extra)
	b = append(b, tag)
	b = binary.AppendUvarint(b, uint64(len(chain)))
	return append(b, chain...)
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func chainKey(chain string) []byte { return append([]byte{tagChain}, chain...) }

func entryKey(chain string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(ck(tagEntry, chain, 8), seq)
}

func linkKey(chain string, l ledger.Link) []byte {
	return append(ck(tagLink, chain, len(l)), l[:]...)
}

func recordIDKey(chain, id string) []byte {
	return append(ck(tagRecordID, chain, len(id)), id...)
}

// attrPrefix is the prefix of the attribute index's keys of one value.
func attrPrefix(chain, name, value string) []byte {
	b := ck(tagAttr, chain, 2*binary.MaxVarintLen64+len(name)+len(value)+8)
	return appendStr(appendStr(b, name), value)
}

func sealKey(chain string, n uint64) []byte {
	return binary.BigEndian.AppendUint64(ck(tagSeal, chain, 8), n)
}

func pendingSealKey(chain string, n uint64) []byte {
	return binary.BigEndian.AppendUint64(ck(tagPending, chain, 8), n)
}

func forkKey(chain string, k uint64) []byte {
	return binary.BigEndian.AppendUint64(ck(tagFork, chain, 8), k)
}

func headKey(chain string) []byte { return append([]byte{tagHead}, chain...) }

func regKey(id string) []byte { return append([]byte{tagReg}, id...) }

func seqKey(tag byte, seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{tag}, seq)
}

func claimKey(entry [32]byte) []byte { return append([]byte{tagClaim}, entry[:]...) }

// upperBound returns the least key greater than every key that begins with prefix.
func upperBound(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil // every key: prefix is all 0xff
}

// lastUint64 returns the big-endian number that ends key.
func lastUint64(key []byte) uint64 { return binary.BigEndian.Uint64(key[len(key)-8:]) }
