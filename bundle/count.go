package bundle

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"io"
	"strings"
	"sync/atomic"
)

// EntryCounter counts the entries of a zipped bundle's chains while the bundle's bytes pass
// through Write, as a download progresses. It counts on a goroutine of its own, which
// inflates the entries files, and never holds the writer up for long: whatever it cannot
// read is drained unread. It only feeds a progress report; Open and the verifier are what
// check a bundle.
type EntryCounter struct {
	pw   *io.PipeWriter
	n    atomic.Uint64
	done chan struct{}
}

// NewEntryCounter starts a counter; Close ends it.
func NewEntryCounter() *EntryCounter {
	pr, pw := io.Pipe()
	c := &EntryCounter{pw: pw, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		countEntries(pr, &c.n)
		_, _ = io.Copy(io.Discard, pr)
	}()
	return c
}

// Write hands b, the next bytes of the bundle, to the counting goroutine.
func (c *EntryCounter) Write(b []byte) (int, error) { return c.pw.Write(b) }

// Count returns the entries counted so far.
func (c *EntryCounter) Count() uint64 { return c.n.Load() }

// Close ends the stream, waits for the counting goroutine and returns the entries counted.
func (c *EntryCounter) Close() uint64 {
	c.pw.Close()
	<-c.done
	return c.n.Load()
}

// countEntries walks a zip as Writer streams it (local header, deflated data, data
// descriptor, the next local header) and adds to n the lines of every chains/*/entries.jsonl
// as they are inflated. It stops at the central directory, or at anything it does not
// expect.
func countEntries(r io.Reader, n *atomic.Uint64) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		var h [30]byte
		if _, err := io.ReadFull(br, h[:]); err != nil || le32(h[:]) != 0x04034b50 {
			return
		}
		flags, method := le16(h[6:]), le16(h[8:])
		name := make([]byte, le16(h[26:]))
		if _, err := io.ReadFull(br, name); err != nil {
			return
		}
		if _, err := br.Discard(int(le16(h[28:]))); err != nil {
			return
		}
		if method != zip.Deflate || flags&0x8 == 0 {
			return // sizes in the header: not what Writer writes
		}
		// flate reads exactly its stream from an io.ByteReader, so the descriptor follows.
		cr := &countingReader{r: br}
		var w io.Writer = io.Discard
		if strings.HasPrefix(string(name), "chains/") && strings.HasSuffix(string(name), "/entries.jsonl") {
			w = lineCounter{n}
		}
		size, err := io.Copy(w, flate.NewReader(cr))
		if err != nil {
			return
		}
		if sig, err := br.Peek(4); err == nil && le32(sig) == 0x08074b50 {
			br.Discard(4)
		}
		desc := 12 // CRC-32 and two 4-byte sizes, 8-byte sizes past 4 GiB (zip64)
		if size >= 0xffffffff || cr.n >= 0xffffffff {
			desc = 20
		}
		if _, err := br.Discard(desc); err != nil {
			return
		}
	}
}

// lineCounter counts the newlines written to it into n.
type lineCounter struct{ n *atomic.Uint64 }

func (l lineCounter) Write(b []byte) (int, error) {
	l.n.Add(uint64(bytes.Count(b, []byte{'\n'})))
	return len(b), nil
}

// countingReader counts the bytes read through it, one at a time or not.
type countingReader struct {
	r *bufio.Reader
	n uint64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += uint64(n)
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }
func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
