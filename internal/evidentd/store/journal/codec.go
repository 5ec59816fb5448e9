package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// A frame's payload is one group commit: a format byte, then the group's batches, each the
// chain's new state, the size it was committed from and its entries (their chain is the
// batch's). Integers are unsigned varints, times Unix nanoseconds as signed varints, byte
// strings a varint length and the bytes; a nil byte string (Entry.Meta) is length 0 behind
// a presence byte.
const payloadFormat = 1

// ErrCorrupt is wrapped by every error of a payload that cannot be decoded.
var ErrCorrupt = errors.New("journal: corrupt frame")

// encode returns the payload of batches, in a buffer sized to hold it whole.
func encode(batches []store.Batch) []byte {
	return appendPayload(make([]byte, 0, payloadBound(batches)), batches)
}

// payloadBound returns at least the length of the payload of batches: every field's bytes
// and a varint of the largest length for each integer and length prefix.
func payloadBound(batches []store.Batch) int {
	const v = binary.MaxVarintLen64
	n := 1 + v
	for i := range batches {
		c := batches[i].Chain
		n += 10*v + 2 + len(ledger.Link{}) + len(c.ID) + len(c.Profile) + len(c.Tree) + len(c.State) + len(c.LastSeal)
		for j := range batches[i].Entries {
			e := &batches[i].Entries[j]
			n += 9*v + 4 + 2*len(ledger.Link{}) + len(e.Record) + len(e.RecordID) + len(e.Method) + len(e.Sender) + len(e.Meta)
			for k, vs := range e.Attrs {
				n += 2*v + len(k)
				for _, s := range vs {
					n += v + len(s)
				}
			}
		}
	}
	return n
}

// appendPayload appends the payload of batches to dst.
func appendPayload(dst []byte, batches []store.Batch) []byte {
	dst = append(dst, payloadFormat)
	dst = binary.AppendUvarint(dst, uint64(len(batches)))
	for i := range batches {
		b := &batches[i]
		c := b.Chain
		dst = appendString(dst, c.ID)
		dst = appendString(dst, c.Profile)
		dst = binary.AppendUvarint(dst, c.Size)
		dst = append(dst, c.Head[:]...)
		dst = appendBytes(dst, c.Tree)
		dst = appendBytes(dst, c.State)
		dst = appendBool(dst, c.Closed)
		dst = appendString(dst, c.LastSeal)
		dst = binary.AppendUvarint(dst, c.SealedSize)
		dst = appendTime(dst, c.Created)
		dst = binary.AppendUvarint(dst, b.PrevSize)
		dst = binary.AppendUvarint(dst, uint64(len(b.Entries)))
		for j := range b.Entries {
			dst = appendEntry(dst, &b.Entries[j])
		}
	}
	return dst
}

func appendEntry(dst []byte, e *store.Entry) []byte {
	dst = binary.AppendUvarint(dst, e.Seq)
	dst = append(dst, e.Prev[:]...)
	dst = append(dst, e.Link[:]...)
	dst = appendTime(dst, e.Arrival)
	dst = appendBytes(dst, e.Record)
	dst = appendString(dst, e.RecordID)
	dst = appendString(dst, e.Method)
	dst = appendString(dst, e.Sender)
	dst = appendTime(dst, e.TS)
	dst = appendBool(dst, e.Signed)
	dst = appendBool(dst, e.Meta != nil)
	if e.Meta != nil {
		dst = appendBytes(dst, e.Meta)
	}
	names := make([]string, 0, len(e.Attrs))
	for k := range e.Attrs {
		names = append(names, k)
	}
	slices.Sort(names)
	dst = binary.AppendUvarint(dst, uint64(len(names)))
	for _, k := range names {
		dst = appendString(dst, k)
		vs := e.Attrs[k]
		dst = binary.AppendUvarint(dst, uint64(len(vs)))
		for _, v := range vs {
			dst = appendString(dst, v)
		}
	}
	return dst
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// appendTime keeps the zero time apart from every instant (Entry.TS is zero when the record
// gives none).
func appendTime(dst []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	return binary.AppendVarint(dst, t.UnixNano())
}

// decode returns the batches of a payload. The byte slices of the result alias p.
func decode(p []byte) ([]store.Batch, error) {
	d := decoder{p: p}
	if f := d.byte(); d.err == nil && f != payloadFormat {
		return nil, fmt.Errorf("%w: payload format %d, want %d", ErrCorrupt, f, payloadFormat)
	}
	n := d.count(40) // a batch takes at least 43 bytes
	batches := make([]store.Batch, 0, n)
	for range n {
		if d.err != nil {
			break
		}
		var b store.Batch
		c := &store.ChainRecord{}
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
		b.Chain = c
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
		d.fail("%d bytes after the last batch", len(d.p))
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
		d.err = fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
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
