package oldfmt

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// A journal frame's payload is one group commit: a format byte (1), then the group's
// batches, each the chain's new state, the size it was committed from and its entries
// (their chain is the Batch's). Integers are unsigned varints, times a presence byte and
// Unix nanoseconds as a signed varint, byte strings a varint length and the bytes; an
// entry's Meta is behind a presence byte. This is the old package journal's codec.go,
// decoding only.
// PayloadFormat is the first byte of every payload.
const PayloadFormat = 1

// Batch is one chain's part of a journaled group commit.
type Batch struct {
	Chain    store.ChainRecord
	PrevSize uint64
	Entries  []store.Entry
}

// Decode returns the batches of a journal frame's payload; every error wraps
// ErrCorrupt. The byte slices of the result alias p.
func Decode(p []byte) ([]Batch, error) {
	d := decoder{p: p}
	if f := d.byte(); d.err == nil && f != PayloadFormat {
		return nil, fmt.Errorf("%w: payload format %d, want %d", ErrCorrupt, f, PayloadFormat)
	}
	n := d.count(40) // a Batch takes at least 43 bytes
	batches := make([]Batch, 0, n)
	for range n {
		if d.err != nil {
			break
		}
		var b Batch
		c := &b.Chain
		c.ID = d.string()
		c.Profile = d.string()
		c.Size = d.uvarint()
		d.link(&c.Head)
		c.Tree = d.bytes()
		c.State = d.bytes()
		c.Closed = d.bool()
		c.LastSeal = d.string()
		c.SealedSize = d.uvarint()
		c.Created = d.time()
		b.PrevSize = d.uvarint()
		m := d.count(70) // an entry takes at least 74 bytes
		b.Entries = make([]store.Entry, 0, m)
		for range m {
			if d.err != nil {
				break
			}
			b.Entries = append(b.Entries, d.entry(c.ID))
		}
		batches = append(batches, b)
	}
	if d.err == nil && len(d.p) != 0 {
		d.fail("%d bytes after the last Batch", len(d.p))
	}
	if d.err != nil {
		return nil, d.err
	}
	return batches, nil
}

// decoder reads a payload; its first error sticks and every later read returns zero values.
type decoder struct {
	p   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: journal frame: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
	d.p = nil
}

func (d *decoder) byte() byte {
	if len(d.p) < 1 {
		d.fail("truncated")
		return 0
	}
	b := d.p[0]
	d.p = d.p[1:]
	return b
}

func (d *decoder) bool() bool {
	switch d.byte() {
	case 0:
		return false
	case 1:
		return true
	default:
		d.fail("a boolean is neither 0 nor 1")
		return false
	}
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.p)
	if n <= 0 {
		d.fail("bad unsigned varint")
		return 0
	}
	d.p = d.p[n:]
	return v
}

// count reads a number of items each taking at least min bytes, refusing one the rest of
// the payload cannot hold (so a corrupt count allocates nothing).
func (d *decoder) count(min int) int {
	v := d.uvarint()
	if v > uint64(len(d.p)/min) {
		d.fail("count %d exceeds what %d bytes hold", v, len(d.p))
		return 0
	}
	return int(v)
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.p)) {
		d.fail("a %d-byte string in %d bytes", n, len(d.p))
		return nil
	}
	b := d.p[:n:n]
	d.p = d.p[n:]
	return b
}

func (d *decoder) string() string { return string(d.bytes()) }

func (d *decoder) link(l *ledger.Link) {
	if len(d.p) < len(l) {
		d.fail("truncated link")
		return
	}
	copy(l[:], d.p)
	d.p = d.p[len(l):]
}

func (d *decoder) time() time.Time {
	if !d.bool() {
		return time.Time{}
	}
	v, n := binary.Varint(d.p)
	if n <= 0 {
		d.fail("bad signed varint")
		return time.Time{}
	}
	d.p = d.p[n:]
	return time.Unix(0, v).UTC()
}

func (d *decoder) entry(chain string) store.Entry {
	e := store.Entry{Chain: chain}
	e.Seq = d.uvarint()
	d.link(&e.Prev)
	d.link(&e.Link)
	e.Arrival = d.time()
	e.Record = d.bytes()
	e.RecordID = d.string()
	e.Method = d.string()
	e.Sender = d.string()
	e.TS = d.time()
	e.Signed = d.bool()
	if d.bool() {
		e.Meta = d.bytes()
		if e.Meta == nil {
			e.Meta = []byte{}
		}
	}
	names := d.count(2)
	if names > 0 {
		e.Attrs = make(map[string][]string, names)
	}
	for range names {
		k := d.string()
		nv := d.count(1)
		vs := make([]string, 0, nv)
		for range nv {
			vs = append(vs, d.string())
		}
		if d.err != nil {
			break
		}
		if _, dup := e.Attrs[k]; dup {
			d.fail("attribute %q twice", k)
			break
		}
		e.Attrs[k] = vs
	}
	return e
}
