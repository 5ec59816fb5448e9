package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// Values are CBOR arrays (RFC 8949) of the fields below, in this order, so that any CBOR
// decoder can read a copy of the database's values. Times are Unix milliseconds, as the SQL
// stores kept them, except a chain's creation time (Unix nanoseconds); a missing time
// (Entry.TS) is null. Numbers in the indexes' values are 8-byte big endian.

type chainV struct {
	_          struct{} `cbor:",toarray"`
	Profile    string
	Size       uint64
	Head       []byte
	Tree       []byte
	State      []byte
	Closed     bool
	LastSeal   string
	SealedSize uint64
	Created    int64
}

type entryV struct {
	_        struct{} `cbor:",toarray"`
	Prev     []byte
	Link     []byte
	Arrival  int64
	Record   []byte
	RecordID string
	Method   string
	Sender   string
	TS       *int64
	Signed   bool
	Meta     []byte
	Attrs    map[string][]string
}

type sealV struct {
	_          struct{} `cbor:",toarray"`
	Size       uint64
	Closed     bool
	Statement  []byte
	EntryHash  []byte
	SealedAt   int64
	Registered bool
	LogIndex   uint64
	Checkpoint []byte
	Receipt    []byte
}

type forkV struct {
	_           struct{} `cbor:",toarray"`
	Seq         uint64
	ExistingSeq uint64
	Record      []byte
	Arrival     int64
}

type headV struct {
	_          struct{} `cbor:",toarray"`
	Head       []byte
	AuditCount uint64
	ReportedAt int64
}

type regV struct {
	_          struct{} `cbor:",toarray"`
	Kind       string
	Statement  []byte
	Issuer     string
	Subject    string
	PolicyID   string
	Received   int64
	Seq        uint64
	Registered bool
	LogIndex   uint64
	Checkpoint []byte
	Receipt    []byte
}

type claimV struct {
	_        struct{} `cbor:",toarray"`
	Owner    string
	Until    int64
	From     uint64
	Appended bool
	Index    uint64
}

// ErrCorrupt is wrapped by the error of a value that does not decode.
var ErrCorrupt = errors.New("embedded ledger store: corrupt value")

var (
	encMode, _ = cbor.EncOptions{}.EncMode()
	decMode, _ = cbor.DecOptions{MaxArrayElements: 1 << 20, MaxMapPairs: 1 << 20}.DecMode()
)

func encode(v any) []byte {
	b, err := encMode.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("embedded: encoding %T: %v", v, err)) // the types above always encode
	}
	return b
}

func decode(b []byte, v any) error {
	if err := decMode.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %T: %v", ErrCorrupt, v, err)
	}
	return nil
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func encodeUint(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

func decodeUint(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: a number of %d bytes", ErrCorrupt, len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

func link(b []byte) (l ledger.Link, err error) {
	if len(b) != len(l) {
		return l, fmt.Errorf("%w: a hash of %d bytes", ErrCorrupt, len(b))
	}
	copy(l[:], b)
	return l, nil
}

func encodeChain(c *store.ChainRecord) []byte {
	return encode(&chainV{Profile: c.Profile, Size: c.Size, Head: c.Head[:], Tree: c.Tree, State: c.State,
		Closed: c.Closed, LastSeal: c.LastSeal, SealedSize: c.SealedSize, Created: c.Created.UnixNano()})
}

func decodeChain(id string, b []byte) (*store.ChainRecord, error) {
	var v chainV
	if err := decode(b, &v); err != nil {
		return nil, fmt.Errorf("chain %q: %w", id, err)
	}
	h, err := link(v.Head)
	if err != nil {
		return nil, fmt.Errorf("chain %q: %w", id, err)
	}
	return &store.ChainRecord{ID: id, Profile: v.Profile, Size: v.Size, Head: h, Tree: v.Tree, State: v.State, Closed: v.Closed,
		LastSeal: v.LastSeal, SealedSize: v.SealedSize, Created: time.Unix(0, v.Created).UTC()}, nil
}

// encodeEntry encodes e with attrs, the attributes the store keeps of it (indexedAttrs).
func encodeEntry(e *store.Entry, attrs map[string][]string) []byte {
	v := entryV{Prev: e.Prev[:], Link: e.Link[:], Arrival: ms(e.Arrival), Record: e.Record, RecordID: e.RecordID,
		Method: e.Method, Sender: e.Sender, Signed: e.Signed, Meta: e.Meta, Attrs: attrs}
	if !e.TS.IsZero() {
		ts := ms(e.TS)
		v.TS = &ts
	}
	return encode(&v)
}

func decodeEntry(chain string, seq uint64, b []byte) (store.Entry, error) {
	var v entryV
	if err := decode(b, &v); err != nil {
		return store.Entry{}, fmt.Errorf("entry %q/%d: %w", chain, seq, err)
	}
	e := store.Entry{Chain: chain, Seq: seq, Arrival: fromMS(v.Arrival), Record: v.Record, RecordID: v.RecordID,
		Method: v.Method, Sender: v.Sender, Signed: v.Signed, Meta: v.Meta, Attrs: v.Attrs}
	var err1, err2 error
	e.Prev, err1 = link(v.Prev)
	e.Link, err2 = link(v.Link)
	if err := errors.Join(err1, err2); err != nil {
		return store.Entry{}, fmt.Errorf("entry %q/%d: %w", chain, seq, err)
	}
	if v.TS != nil {
		e.TS = fromMS(*v.TS)
	}
	return e, nil
}

func encodeSeal(s *store.Seal) []byte {
	return encode(&sealV{Size: s.Size, Closed: s.Closed, Statement: s.Statement, EntryHash: s.EntryHash[:], SealedAt: ms(s.SealedAt),
		Registered: s.Registered, LogIndex: s.LogIndex, Checkpoint: s.Checkpoint, Receipt: s.Receipt})
}

func decodeSeal(chain string, n uint64, b []byte) (store.Seal, error) {
	var v sealV
	if err := decode(b, &v); err != nil {
		return store.Seal{}, fmt.Errorf("seal %q/%d: %w", chain, n, err)
	}
	h, err := link(v.EntryHash)
	if err != nil {
		return store.Seal{}, fmt.Errorf("seal %q/%d: %w", chain, n, err)
	}
	return store.Seal{Chain: chain, N: n, Size: v.Size, Closed: v.Closed, Statement: v.Statement, EntryHash: h, SealedAt: fromMS(v.SealedAt),
		Registered: v.Registered, LogIndex: v.LogIndex, Checkpoint: v.Checkpoint, Receipt: v.Receipt}, nil
}

func encodeReg(r *store.Registration, seq uint64) []byte {
	return encode(&regV{Kind: r.Kind, Statement: r.Statement, Issuer: r.Issuer, Subject: r.Subject, PolicyID: r.PolicyID,
		Received: ms(r.Received), Seq: seq, Registered: r.Registered, LogIndex: r.LogIndex, Checkpoint: r.Checkpoint, Receipt: r.Receipt})
}

func decodeReg(id string, b []byte) (*store.Registration, uint64, error) {
	var v regV
	if err := decode(b, &v); err != nil {
		return nil, 0, fmt.Errorf("registration %.80s: %w", id, err)
	}
	return &store.Registration{ID: id, Kind: v.Kind, Statement: v.Statement, Issuer: v.Issuer, Subject: v.Subject, PolicyID: v.PolicyID,
		Received: fromMS(v.Received), Registered: v.Registered, LogIndex: v.LogIndex, Checkpoint: v.Checkpoint, Receipt: v.Receipt}, v.Seq, nil
}
