package cop

import (
	"crypto"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/evident-log/evident/internal/sigalg"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
)

// GenesisPrevHash is the prevHash value of a ledger's first record (64 zeros).
var GenesisPrevHash = strings.Repeat("0", 64)

// ErrLedger is matched by every *LedgerError.
var ErrLedger = errors.New("COP ledger broken")

// LedgerError names the first ledger record that fails verification.
type LedgerError struct {
	Index  int // position in the ledger (0-based)
	Detail string
}

func (e *LedgerError) Error() string {
	return fmt.Sprintf("COP ledger record %d: %s", e.Index, e.Detail)
}

// Unwrap lets errors.Is match ErrLedger.
func (e *LedgerError) Unwrap() error { return ErrLedger }

// Node is a COP node that writes ledger records: its id (urn:cop:node:…), key id and signer.
type Node struct {
	ID     string
	KeyID  string
	Signer crypto.Signer
}

// LedgerWriter emits the COP Ledger records (§9.6) of accepted events, one per event in chain
// order: index, eventId, eventHash (= the event's copHash, recomputed), prevHash =
// sha-256(JCS(previous record, signature included)), all zeros for the first, topicId,
// createdAt (the arrival time at which Evident made the event durable), nodeId and the node's
// signature {alg, keyId, value} over JCS(record − signature). With an Ed25519 node key the
// records are a deterministic function of the chain, so they can be re-derived at any time.
type LedgerWriter struct {
	node  Node
	index uint64
	prev  string
}

// NewLedgerWriter starts a ledger written by node.
func NewLedgerWriter(node Node) *LedgerWriter {
	return &LedgerWriter{node: node, prev: GenesisPrevHash}
}

// Append returns the JCS bytes of the ledger record for one accepted record of the chain.
func (w *LedgerWriter) Append(record []byte, arrival time.Time) ([]byte, error) {
	e, err := Parse(record)
	if err != nil {
		return nil, err
	}
	h, err := e.CopHash()
	if err != nil {
		return nil, err
	}
	rec := &canonical.Object{Members: []canonical.Member{
		{Key: "index", Value: canonical.Number(fmt.Sprint(w.index))},
		{Key: "eventId", Value: e.ID},
		{Key: "eventHash", Value: hashObj(h.Alg, hex.EncodeToString(h.Value))},
		{Key: "prevHash", Value: hashObj(sigalg.SHA256, w.prev)},
		{Key: "topicId", Value: e.TopicID},
		{Key: "createdAt", Value: ledger.Timestamp(arrival)},
		{Key: "nodeId", Value: w.node.ID},
	}}
	in, err := canonical.Encode(rec)
	if err != nil {
		return nil, err
	}
	alg := sigalg.DefaultAlg(w.node.Signer.Public())
	sv, err := sigalg.Sign(w.node.Signer, alg, in)
	if err != nil {
		return nil, fmt.Errorf("cop ledger: sign: %w", err)
	}
	rec.Members = append(rec.Members, canonical.Member{Key: "signature", Value: (&sigalg.Signature{Alg: alg, Kid: w.node.KeyID, Value: sv}).Object("keyId")})
	out, err := canonical.Encode(rec)
	if err != nil {
		return nil, err
	}
	d, _ := sigalg.Hash(sigalg.SHA256, out)
	w.prev = hex.EncodeToString(d.Value)
	w.index++
	return out, nil
}

func hashObj(alg, value string) *canonical.Object {
	return &canonical.Object{Members: []canonical.Member{{Key: "alg", Value: alg}, {Key: "value", Value: value}}}
}

// LedgerCheck verifies a COP ledger record by record (§9.7, §11.5): index strictly +1 from
// the first record's, prevHash chaining (genesis all zeros when the first index is 0), the
// node signature under Keys (keyId → public key; a record without a signature, or with an
// unknown keyId, is refused when RequireSignature is set), and — when Events holds the
// event (eventId → the event record, as in the chain) — eventHash against the recomputed copHash.
type LedgerCheck struct {
	Keys map[string]crypto.PublicKey
	// AnyKey, when set, verifies records whose keyId Keys does not list (a key given without
	// a key id, e.g. a PEM public key handed over by the other node's operator).
	AnyKey           crypto.PublicKey
	RequireSignature bool
	Events           map[string][]byte
	next             uint64
	prev             string
	n                int
	// Matched counts records whose eventHash was checked against an event.
	Matched int
	// Signed counts records whose node signature verified.
	Signed int
	// Last is the record the latest successful Next checked.
	Last LedgerRecord
}

// LedgerRecord is what LedgerCheck read from one ledger record.
type LedgerRecord struct {
	Index     uint64
	EventID   string
	EventHash string // "<alg>:<hex>"
	TopicID   string
	CreatedAt string
	NodeID    string
	KeyID     string // "" when unsigned
}

// Next checks the next ledger record (one JSON object).
func (c *LedgerCheck) Next(line []byte) error {
	i := c.n
	c.n++
	fail := func(format string, args ...any) error {
		return &LedgerError{Index: i, Detail: fmt.Sprintf(format, args...)}
	}
	v, err := canonical.Parse(line, canonical.Options{})
	if err != nil {
		return fail("not strict JSON: %v", err)
	}
	o, ok := v.(*canonical.Object)
	if !ok {
		return fail("a ledger record is an object")
	}
	idx, _ := o.Get("index")
	num, _ := idx.(canonical.Number)
	n, isInt := num.Int64()
	if !isInt || n < 0 {
		return fail("index must be a non-negative integer")
	}
	ph, _ := o.Object("prevHash")
	alg, _ := ph.String("alg")
	pv, _ := ph.String("value")
	if i == 0 {
		c.next = uint64(n)
		if n == 0 {
			c.prev = GenesisPrevHash
		} else {
			c.prev = pv // an imported ledger may start mid-way: its first prevHash is taken as given
		}
	}
	if uint64(n) != c.next {
		return fail("index %d where %d was expected", n, c.next)
	}
	if alg != sigalg.SHA256 || pv != c.prev {
		return fail("prevHash %s:%.64s is not the hash of the previous record %s:%s", alg, pv, sigalg.SHA256, c.prev)
	}
	eh, _ := o.Object("eventHash")
	ealg, _ := eh.String("alg")
	eval, _ := eh.String("value")
	if _, err := sigalg.ParseDigest(ealg + ":" + eval); err != nil {
		return fail("eventHash: %v", err)
	}
	rec := LedgerRecord{Index: uint64(n), EventHash: ealg + ":" + eval}
	rec.EventID, _ = o.String("eventId")
	rec.TopicID, _ = o.String("topicId")
	rec.CreatedAt, _ = o.String("createdAt")
	rec.NodeID, _ = o.String("nodeId")
	if rec.EventID == "" || rec.TopicID == "" {
		return fail("eventId and topicId must be non-empty strings")
	}
	if ev, ok := c.Events[rec.EventID]; ok {
		e, err := Parse(ev)
		if err != nil {
			return fail("event: %v", err)
		}
		got, err := e.CopHash()
		if err != nil || got.Alg != ealg || hex.EncodeToString(got.Value) != eval {
			return fail("eventHash %s:%s does not match the event's copHash", ealg, eval)
		}
		c.Matched++
	}
	if sv, ok := o.Get("signature"); ok {
		so, _ := sv.(*canonical.Object)
		if so != nil && len(so.Members) > 0 {
			sig, err := sigalg.ParseSignature(so, "keyId")
			if err != nil {
				return fail("signature: %v", err)
			}
			pub, ok := c.Keys[sig.Kid]
			if !ok && c.AnyKey != nil {
				pub, ok = c.AnyKey, true
			}
			if !ok {
				return fail("signature by unknown node key %.60q", sig.Kid)
			}
			in, err := canonical.Encode(o.Without("signature"))
			if err != nil {
				return fail("%v", err)
			}
			if err := sigalg.Verify(pub, sig.Alg, in, sig.Value); err != nil {
				return fail("node signature: %v", err)
			}
			rec.KeyID = sig.Kid
			c.Signed++
		} else if c.RequireSignature {
			return fail("unsigned record")
		}
	} else if c.RequireSignature {
		return fail("unsigned record")
	}
	d, _ := sigalg.Hash(sigalg.SHA256, mustEncode(o))
	c.prev = hex.EncodeToString(d.Value)
	c.next++
	c.Last = rec
	return nil
}

func mustEncode(o *canonical.Object) []byte {
	b, _ := canonical.Encode(o)
	return b
}
