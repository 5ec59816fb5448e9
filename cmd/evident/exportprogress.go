package main

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

// exportProgress writes a downloaded bundle on to w and reports the download's progress on
// out: in entries against the total the service announced before the first byte
// (api.HeaderEntries, through start), counted as the bundle streams by (entryCounter), or in
// bytes when the service gave no total (a case slice).
type exportProgress struct {
	w     io.Writer
	out   io.Writer
	quiet bool
	what  string // e.g. "export wsp_acme"

	p     *progress
	count *entryCounter // nil: progress in bytes
	bytes uint64
}

// start switches the report to entries out of total; it runs before the first Write.
func (e *exportProgress) start(total uint64) {
	if e.quiet {
		return
	}
	e.count = newEntryCounter()
	e.p = newProgress(e.out, e.quiet, e.what, "entries", total)
}

func (e *exportProgress) Write(b []byte) (int, error) {
	if e.p == nil {
		e.p = newProgress(e.out, e.quiet, e.what, "bytes", 0) // no total was announced
	}
	n, err := e.w.Write(b)
	e.bytes += uint64(n)
	if e.count == nil {
		e.p.Update(e.bytes)
		return n, err
	}
	e.count.Write(b[:n])
	e.p.Update(e.count.n.Load())
	return n, err
}

// end ends the report: how much was done and how fast, or, when the export failed, the
// live line ended so that the error starts a line of its own.
func (e *exportProgress) end(err error) {
	done := e.bytes
	if e.count != nil {
		done = e.count.Close()
	}
	if e.p == nil {
		e.p = newProgress(e.out, e.quiet, e.what, "bytes", 0)
	}
	if err != nil {
		e.p.Stop()
		return
	}
	e.p.Done(done)
}

// entryCounter takes the bytes of a bundle as they are downloaded and counts the entries of
// its chains on a goroutine of its own, which inflates the entries files (countEntries).
// It never holds the download up for long: whatever it cannot read is drained unread.
type entryCounter struct {
	pw   *io.PipeWriter
	n    atomic.Uint64
	done chan struct{}
}

func newEntryCounter() *entryCounter {
	pr, pw := io.Pipe()
	c := &entryCounter{pw: pw, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		countEntries(pr, &c.n)
		_, _ = io.Copy(io.Discard, pr)
	}()
	return c
}

// Write hands b to the counting goroutine.
func (c *entryCounter) Write(b []byte) (int, error) { return c.pw.Write(b) }

// Close ends the stream and returns the entries counted.
func (c *entryCounter) Close() uint64 {
	c.pw.Close()
	<-c.done
	return c.n.Load()
}

// countEntries walks a zip as bundle.Writer streams it (local header, deflated data, data
// descriptor, the next local header) and adds to n the lines of every chains/*/entries.jsonl
// as they are inflated. It stops at the central directory, or at anything it does not
// expect: it only feeds a progress report, and evident verify is what checks the bundle.
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
			return // sizes in the header: not what bundle.Writer writes
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
