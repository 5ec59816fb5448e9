package verifier

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/evident-log/evident/internal/rawjson"
	"github.com/evident-log/evident/ledger/canonical"
)

// MaxLineSize returns the longest line of entries.jsonl the verifier reads under the record
// limits l: a record and its metadata, each up to l's size limit (evident's
// --max-record-bytes), and the line's own members.
func MaxLineSize(l canonical.Limits) int {
	return 2*l.OrDefault().MaxSize + 64<<10
}

// lineBuffer is the buffer a bundle file is read through; a longer line is gathered beside it.
const lineBuffer = 64 << 10

// Lines reads a bundle file line by line, lines of up to MaxLineSize bytes, holding no more
// memory than the longest line read needs (a maximal line is not allocated up front).
type Lines struct {
	br   *bufio.Reader
	buf  []byte
	max  int
	long int // the length of the last line refused as too long
}

// TooLong says how to read a line Next refused as too long: its length, the limit, and the
// --max-record-bytes that takes it (the line's length is enough: it holds the record).
func (l *Lines) TooLong() string {
	return fmt.Sprintf("line is %d bytes, over %d: if the evidentd that made the bundle took it with a wider --max-record-bytes, verify with --max-record-bytes %d", l.long, l.max, l.long)
}

// NewLines returns a Lines reading r, lines of up to max bytes (MaxLineSize).
func NewLines(r io.Reader, max int) *Lines {
	return &Lines{br: bufio.NewReaderSize(r, lineBuffer), max: max}
}

// Max is the longest line l reads.
func (l *Lines) Max() int { return l.max }

// Next returns the next line, its newline included when there is one; the line is valid until
// the next call. A line over Max is read to its end and skipped, reported by tooLong with a
// nil line. err is as bufio.Reader.ReadSlice's: io.EOF once nothing is left, with the last
// line when it has no newline.
func (l *Lines) Next() (line []byte, tooLong bool, err error) {
	line, err = l.br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return line, false, err
	}
	buf := append(l.buf[:0], line...)
	for err == bufio.ErrBufferFull {
		line, err = l.br.ReadSlice('\n')
		if len(buf)+len(line) > l.max {
			l.long = len(buf) + len(line)
			for err == bufio.ErrBufferFull {
				line, err = l.br.ReadSlice('\n')
				l.long += len(line)
			}
			l.buf = buf[:0]
			return nil, true, err
		}
		buf = append(buf, line...)
	}
	l.buf = buf
	return buf, false, err
}

// limitHint is what a refusal of a record for one of the verifier's record limits l adds to its
// detail: which flag to raise and how far this record needs it. A bundle from an evidentd
// whose limits are wider than the verifier's is not broken for that; it verifies once the
// verifier's limits are as wide. "" for any other refusal.
func limitHint(err error, record []byte, l canonical.Limits) string {
	var ce *canonical.Error
	if !errors.As(err, &ce) || ce.Limit == 0 {
		return ""
	}
	l = l.OrDefault()
	switch {
	case errors.Is(ce, canonical.ErrTooDeep) && ce.Limit == l.MaxDepth:
		return fmt.Sprintf(" (the record nests %d levels, past evident's --max-depth %d: if the evidentd that made the bundle took it with a wider --max-depth, verify with --max-depth %d)",
			rawjson.Depth(record), l.MaxDepth, rawjson.Depth(record))
	case errors.Is(ce, canonical.ErrTooLarge) && ce.Limit == l.MaxSize:
		return fmt.Sprintf(" (the record is %d bytes, past evident's --max-record-bytes %d: if the evidentd that made the bundle took it with a wider --max-record-bytes, verify with --max-record-bytes %d)",
			len(record), l.MaxSize, len(record))
	}
	return ""
}
