package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/evident-log/evident/internal/durable"
)

// The journal's files are segments in one directory, named by a number that grows with
// each new segment (segmentName). A segment begins with segmentMagic; then come frames,
// each a header of the payload's length and its CRC-32C (Castagnoli), both 4-byte little
// endian, and the payload. A frame is appended with one write and fsynced before Append
// returns; a segment is closed (never written again) once it holds segmentBytes.
const (
	segmentMagic = "EVJRNL1\n"
	frameHeader  = 8
	// maxFrame bounds a frame's payload: a group commit holds at most a few thousand
	// records, each far below it.
	maxFrame = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// segmentName is the file name of segment n.
func segmentName(n uint64) string { return fmt.Sprintf("%016d.seg", n) }

// segment is a segment file of the log.
type segment struct {
	n    uint64
	last uint64 // number of the last frame it holds (0: none yet)
}

// Log is the append-only file of the journal: frames, numbered from 1 in the order they
// were appended, in segment files of about segmentBytes each.
type Log struct {
	dir          string
	segmentBytes int64

	mu     sync.Mutex
	f      *os.File  // the segment frames are appended to
	size   int64     // its size
	segs   []segment // every segment on disk, the last one f's
	frames uint64    // number of the last frame appended
	broken error     // a failed write or fsync: the file's state is unknown, appends stop
	buf    []byte
}

// openLog reads the segments in dir (creating dir when absent) and returns the payloads
// of their frames in order, then a Log that appends to a new segment after them.
//
// Only the last segment may end in a torn frame — one whose header or payload stops at the
// end of the file, or a tail of zeros — which a crash during its Append leaves (that
// Append never returned, so nothing in it was acknowledged); it is ignored. Any other
// frame that does not check is corruption of acknowledged data, and an error wrapping
// ErrCorrupt.
func openLog(dir string, segmentBytes int64) (*Log, [][]byte, error) {
	if err := durable.Mkdir(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("journal directory: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("journal directory: %w", err)
	}
	var nums []uint64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".seg")
		if !ok || e.IsDir() {
			continue
		}
		n, err := strconv.ParseUint(name, 10, 64)
		if err != nil || segmentName(n) != e.Name() {
			return nil, nil, fmt.Errorf("journal directory holds %q, which is not a segment name", e.Name())
		}
		nums = append(nums, n)
	}
	slices.Sort(nums)
	l := &Log{dir: dir, segmentBytes: segmentBytes}
	var payloads [][]byte
	for i, n := range nums {
		data, err := os.ReadFile(filepath.Join(dir, segmentName(n)))
		if err != nil {
			return nil, nil, fmt.Errorf("journal segment: %w", err)
		}
		ps, err := readSegment(data, i == len(nums)-1)
		if err != nil {
			return nil, nil, fmt.Errorf("journal segment %s: %w", segmentName(n), err)
		}
		payloads = append(payloads, ps...)
		l.frames += uint64(len(ps))
		l.segs = append(l.segs, segment{n: n, last: l.frames})
	}
	next := uint64(1)
	if len(nums) > 0 {
		next = nums[len(nums)-1] + 1
	}
	if err := l.create(next); err != nil {
		return nil, nil, err
	}
	return l, payloads, nil
}

// readSegment returns the payloads of the frames of a segment's bytes; last says whether it
// is the log's last segment, the only one that may end in a torn frame.
func readSegment(data []byte, last bool) ([][]byte, error) {
	if len(data) < len(segmentMagic) || string(data[:len(segmentMagic)]) != segmentMagic {
		if last && allZero(data) {
			return nil, nil // created, its first write lost in a crash
		}
		return nil, fmt.Errorf("%w: not a journal segment", ErrCorrupt)
	}
	var out [][]byte
	off := len(segmentMagic)
	for off < len(data) {
		rest := data[off:]
		if len(rest) >= frameHeader {
			n := binary.LittleEndian.Uint32(rest)
			sum := binary.LittleEndian.Uint32(rest[4:])
			if n > 0 && n <= maxFrame && uint64(n) <= uint64(len(rest)-frameHeader) {
				p := rest[frameHeader : frameHeader+int(n)]
				if crc32.Checksum(p, castagnoli) == sum {
					out = append(out, p[:len(p):len(p)])
					off += frameHeader + int(n)
					continue
				}
				if last && frameHeader+int(n) == len(rest) {
					return out, nil // torn: its payload was not all written
				}
			}
			if last && (uint64(n) > uint64(len(rest)-frameHeader) || allZero(rest)) {
				return out, nil // torn
			}
		} else if last {
			return out, nil // torn header
		}
		return nil, fmt.Errorf("%w: bad frame at byte %d", ErrCorrupt, off)
	}
	return out, nil
}

func allZero(b []byte) bool { return len(bytes.Trim(b, "\x00")) == 0 }

// create starts segment n and makes it the one appended to.
func (l *Log) create(n uint64) error {
	path := filepath.Join(l.dir, segmentName(n))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("journal segment: %w", err)
	}
	if _, err := f.Write([]byte(segmentMagic)); err != nil {
		f.Close()
		return fmt.Errorf("journal segment %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("journal segment %s: %w", path, err)
	}
	if err := durable.SyncDir(l.dir); err != nil {
		f.Close()
		return fmt.Errorf("journal directory: %w", err)
	}
	if l.f != nil {
		l.f.Close()
	}
	l.f, l.size = f, int64(len(segmentMagic))
	l.segs = append(l.segs, segment{n: n, last: l.frames})
	return nil
}

// Append writes payload as the next frame, durably (fsync), and returns its number. After
// a failed write or fsync every Append fails: what the file then holds is not known.
func (l *Log) Append(payload []byte) (uint64, error) {
	if len(payload) == 0 || len(payload) > maxFrame {
		return 0, fmt.Errorf("journal: a frame of %d bytes", len(payload))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken != nil {
		return 0, l.broken
	}
	if l.size >= l.segmentBytes {
		if err := l.create(l.segs[len(l.segs)-1].n + 1); err != nil {
			return 0, err
		}
	}
	l.buf = binary.LittleEndian.AppendUint32(l.buf[:0], uint32(len(payload)))
	l.buf = binary.LittleEndian.AppendUint32(l.buf, crc32.Checksum(payload, castagnoli))
	l.buf = append(l.buf, payload...)
	if _, err := l.f.Write(l.buf); err != nil {
		l.broken = fmt.Errorf("journal: write failed, no more appends until restart: %w", err)
		return 0, l.broken
	}
	if err := l.f.Sync(); err != nil {
		l.broken = fmt.Errorf("journal: fsync failed, no more appends until restart: %w", err)
		return 0, l.broken
	}
	if cap(l.buf) > 4<<20 {
		l.buf = nil // do not keep one large group's buffer
	}
	l.size += int64(frameHeader + len(payload))
	l.frames++
	l.segs[len(l.segs)-1].last = l.frames
	return l.frames, nil
}

// Release deletes the segments, but the one appended to, whose frames all have numbers up
// to upTo: the store holds them.
func (l *Log) Release(upTo uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	for len(l.segs) > 1 && l.segs[0].last <= upTo {
		if rerr := os.Remove(filepath.Join(l.dir, segmentName(l.segs[0].n))); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = fmt.Errorf("journal: %w", rerr)
			break
		}
		l.segs = l.segs[1:]
	}
	return err
}

// Frames returns the number of the last frame appended.
func (l *Log) Frames() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.frames
}

// Close closes the segment appended to.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if l.broken == nil {
		l.broken = errors.New("journal: closed")
	}
	return err
}
