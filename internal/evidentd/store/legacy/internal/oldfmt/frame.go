package oldfmt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The framing of the old store's own files (the old package frame): a 12-byte header — the
// payload's length, the CRC-32C of those 4 bytes, the CRC-32C of the payload, all little
// endian — then the payload, never empty.
const (
	FrameHeader     = 12      // the size of a frame's header
	FrameMaxPayload = 1 << 30 // bounds a payload's length
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ParseFrame returns the payload of the frame b begins with, if a whole frame that checks
// is there.
func ParseFrame(b []byte) ([]byte, bool) {
	if len(b) < FrameHeader {
		return nil, false
	}
	n := binary.LittleEndian.Uint32(b)
	if crc32.Checksum(b[:4], castagnoli) != binary.LittleEndian.Uint32(b[4:]) || n == 0 || n > FrameMaxPayload || uint64(n) > uint64(len(b)-FrameHeader) {
		return nil, false
	}
	p := b[FrameHeader : FrameHeader+int(n)]
	if crc32.Checksum(p, castagnoli) != binary.LittleEndian.Uint32(b[8:]) {
		return nil, false
	}
	return p[:n:n], true
}

// AppendFrame appends the frame of payload to dst (tests build journals with it).
func AppendFrame(dst, payload []byte) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:start+4], castagnoli))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(payload, castagnoli))
	return append(dst, payload...)
}

// The journal's segments: files named %016d.seg in the journal directory, each beginning
// with SegmentMagic, then frames, one group commit each.
// SegmentMagic begins every segment.
const SegmentMagic = "EVJRNL1\n"

func segmentName(n uint64) string { return fmt.Sprintf("%016d.seg", n) }

// ReadJournal returns the payloads of the frames of the journal in dir, in order. An
// absent directory is an empty journal. Only the last segment may end in a torn frame (a
// frame that does not check, after which none does: an append a crash cut short, never
// acknowledged), which is left out as the old store cut it off; any other frame that does
// not check is an error wrapping ErrCorrupt. Nothing is written.
func ReadJournal(dir string) ([][]byte, error) {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal directory: %w", err)
	}
	var nums []uint64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".seg")
		if !ok || e.IsDir() {
			continue
		}
		n, err := strconv.ParseUint(name, 10, 64)
		if err != nil || segmentName(n) != e.Name() {
			return nil, fmt.Errorf("journal directory holds %q, which is not a segment name: %w", e.Name(), ErrCorrupt)
		}
		nums = append(nums, n)
	}
	slices.Sort(nums)
	var payloads [][]byte
	for i, n := range nums {
		data, err := os.ReadFile(filepath.Join(dir, segmentName(n)))
		if err != nil {
			return nil, fmt.Errorf("journal segment: %w", err)
		}
		ps, err := ReadSegment(data, i == len(nums)-1)
		if err != nil {
			return nil, fmt.Errorf("journal segment %s: %w", segmentName(n), err)
		}
		payloads = append(payloads, ps...)
	}
	return payloads, nil
}

// ReadSegment returns the payloads of a segment's frames; last says whether it is the
// journal's last segment, the only one that may end in a torn frame.
func ReadSegment(data []byte, last bool) ([][]byte, error) {
	if len(data) < len(SegmentMagic) || string(data[:len(SegmentMagic)]) != SegmentMagic {
		if last && (bytes.HasPrefix([]byte(SegmentMagic), data) || len(bytes.Trim(data, "\x00")) == 0) {
			return nil, nil // created, its first write lost in a crash
		}
		return nil, fmt.Errorf("not a journal segment: %w", ErrCorrupt)
	}
	var payloads [][]byte
	off := len(SegmentMagic)
	for off < len(data) {
		p, ok := ParseFrame(data[off:])
		if !ok {
			if last && !anyFrameAfter(data, off+1) {
				return payloads, nil // torn tail
			}
			return nil, fmt.Errorf("bad frame at byte %d: %w", off, ErrCorrupt)
		}
		payloads = append(payloads, p)
		off += FrameHeader + len(p)
	}
	return payloads, nil
}

// anyFrameAfter reports whether a frame that checks begins anywhere in data from byte from
// on: if so, a bad frame before it is not a torn tail, since frames were fsynced one after
// the other.
func anyFrameAfter(data []byte, from int) bool {
	for i := from; i+FrameHeader <= len(data); i++ {
		if _, ok := ParseFrame(data[i:]); ok {
			return true
		}
	}
	return false
}
