// Package frame is the framing of the embedded store's own files, the entry journal's
// segments and the record file: a 12-byte header — the payload's length, the CRC-32C
// (Castagnoli) of those 4 bytes, the CRC-32C of the payload, all little endian — then the
// payload. A reader that finds a frame whose header or payload does not check knows the
// bytes are torn or corrupt, never silently different.
package frame

import (
	"encoding/binary"
	"hash/crc32"
)

const (
	// Header is the size of a frame's header.
	Header = 12
	// MaxPayload bounds a payload's length. A frame is never empty.
	MaxPayload = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Append appends to dst the frame of payload, which must hold 1 to MaxPayload bytes.
func Append(dst, payload []byte) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:start+4], castagnoli))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(payload, castagnoli))
	return append(dst, payload...)
}

// Parse returns the payload of the frame b begins with, if a whole frame that checks is
// there; the payload is b's bytes, capped at its length.
func Parse(b []byte) ([]byte, bool) {
	if len(b) < Header {
		return nil, false
	}
	n := binary.LittleEndian.Uint32(b)
	if crc32.Checksum(b[:4], castagnoli) != binary.LittleEndian.Uint32(b[4:]) || n == 0 || n > MaxPayload || uint64(n) > uint64(len(b)-Header) {
		return nil, false
	}
	p := b[Header : Header+int(n)]
	if crc32.Checksum(p, castagnoli) != binary.LittleEndian.Uint32(b[8:]) {
		return nil, false
	}
	return p[:n:n], true
}
