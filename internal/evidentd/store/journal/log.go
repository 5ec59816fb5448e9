package journal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/evident-log/evident/internal/durable"
	"github.com/evident-log/evident/internal/evidentd/store/frame"
)

// The journal's files are segments in one directory, named by a number that grows with
// each new segment (segmentName). A segment begins with segmentMagic; then come frames
// (package frame: a 12-byte header of the payload's length and CRC-32Cs, then the
// payload). A frame is appended with one write and fsynced before Append returns; a
// segment is closed (never written again) once it holds segmentBytes. A frame's payload is
// at most frame.MaxPayload: a group commit holds at most a few thousand records, each far
// below it.
const segmentMagic = "EVJRNL1\n"

// segmentName is the file name of segment n.
func segmentName(n uint64) string { return fmt.Sprintf("%016d.seg", n) }

// segment is a segment file of the log.
type segment struct {
	n    uint64
	last uint64 // number of the last frame it holds (its first frame's less one when none)
}

// Log is the append-only file of the journal: frames, numbered from 1 in the order they
// were appended, in segment files of about segmentBytes each.
type Log struct {
	dir          string
	segmentBytes int64

	mu     sync.Mutex
	f      *os.File  // the segment frames are appended to; nil until start
	size   int64     // its size
	segs   []segment // every segment on disk, the last one f's once started
	frames uint64    // number of the last frame appended
	broken error     // a failed write or fsync: the file's state is unknown, appends stop
	buf    []byte
}

// openLog reads the segments in dir (creating dir when absent) and returns the payloads
// of their frames in order, the bytes of a torn tail it cut off, and a Log that appends
// after them once started (start).
//
// Only the last segment may end in a torn frame: a frame that does not check, after which
// no frame checks — what a crash during its Append leaves (that Append never returned, so
// nothing in it was acknowledged). It is cut off the file. Any other frame that does not
// check is corruption of acknowledged data, and an error wrapping ErrCorrupt.
func openLog(dir string, segmentBytes int64) (l *Log, payloads [][]byte, torn int, err error) {
	if err := durable.Mkdir(dir, 0o755); err != nil {
		return nil, nil, 0, fmt.Errorf("journal directory: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("journal directory: %w", err)
	}
	var nums []uint64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".seg")
		if !ok || e.IsDir() {
			continue
		}
		n, err := strconv.ParseUint(name, 10, 64)
		if err != nil || segmentName(n) != e.Name() {
			return nil, nil, 0, fmt.Errorf("journal directory holds %q, which is not a segment name", e.Name())
		}
		nums = append(nums, n)
	}
	slices.Sort(nums)
	l = &Log{dir: dir, segmentBytes: segmentBytes}
	for i, n := range nums {
		path := filepath.Join(dir, segmentName(n))
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("journal segment: %w", err)
		}
		last := i == len(nums)-1
		ps, end, err := readSegment(data, last)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("journal segment %s: %w", segmentName(n), err)
		}
		if end < len(data) {
			if err := cutTail(path, end); err != nil {
				return nil, nil, 0, err
			}
			torn = len(data) - end
		}
		payloads = append(payloads, ps...)
		l.frames += uint64(len(ps))
		l.segs = append(l.segs, segment{n: n, last: l.frames})
	}
	return l, payloads, torn, nil
}

// cutTail truncates the segment at path to its first end bytes, durably. A segment left
// without its whole header is removed.
func cutTail(path string, end int) error {
	if end < len(segmentMagic) {
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("journal: removing a torn segment: %w", err)
		}
		return durable.SyncDir(filepath.Dir(path))
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("journal: cutting a torn frame: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(int64(end)); err != nil {
		return fmt.Errorf("journal: cutting a torn frame: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("journal: cutting a torn frame: %w", err)
	}
	return nil
}

// readSegment returns the payloads of the frames of a segment's bytes and where the last
// of them ends; last says whether it is the log's last segment, the only one that may end
// in a torn frame (which end then leaves out).
func readSegment(data []byte, last bool) (payloads [][]byte, end int, err error) {
	if len(data) < len(segmentMagic) || string(data[:len(segmentMagic)]) != segmentMagic {
		if last && bytes.HasPrefix([]byte(segmentMagic), data) || last && allZero(data) {
			return nil, 0, nil // created, its first write lost in a crash
		}
		return nil, 0, fmt.Errorf("%w: not a journal segment", ErrCorrupt)
	}
	off := len(segmentMagic)
	for off < len(data) {
		p, ok := frame.Parse(data[off:])
		if !ok {
			if last && !anyFrameAfter(data, off+1) {
				return payloads, off, nil // torn
			}
			return nil, 0, fmt.Errorf("%w: bad frame at byte %d", ErrCorrupt, off)
		}
		payloads = append(payloads, p)
		off += frame.Header + len(p)
	}
	return payloads, off, nil
}

// anyFrameAfter reports whether a frame that checks begins anywhere in data from byte
// from on: if so, a bad frame before it is not a torn tail, since frames are fsynced one
// after the other.
func anyFrameAfter(data []byte, from int) bool {
	for i := from; i+frame.Header <= len(data); i++ {
		if _, ok := frame.Parse(data[i:]); ok {
			return true
		}
	}
	return false
}

func allZero(b []byte) bool { return len(bytes.Trim(b, "\x00")) == 0 }

// start begins a new segment after those on disk, which the log appends to from now on.
func (l *Log) start() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	next := uint64(1)
	if len(l.segs) > 0 {
		next = l.segs[len(l.segs)-1].n + 1
	}
	return l.create(next)
}

// create starts segment n and makes it the one appended to. A failure leaves the log
// broken: the file may exist, half written.
func (l *Log) create(n uint64) error {
	path := filepath.Join(l.dir, segmentName(n))
	err := func() error {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write([]byte(segmentMagic)); err != nil {
			f.Close()
			return err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
		if err := durable.SyncDir(l.dir); err != nil {
			f.Close()
			return err
		}
		if l.f != nil {
			l.f.Close()
		}
		l.f, l.size = f, int64(len(segmentMagic))
		return nil
	}()
	if err != nil {
		l.broken = fmt.Errorf("journal: starting segment %s failed, no more appends until restart: %w", segmentName(n), err)
		return l.broken
	}
	l.segs = append(l.segs, segment{n: n, last: l.frames})
	return nil
}

// Append writes payload as the next frame, durably (fsync), and returns its number. After
// a failed write or fsync every Append fails: what the file then holds is not known.
func (l *Log) Append(payload []byte) (uint64, error) {
	if len(payload) == 0 || len(payload) > frame.MaxPayload {
		return 0, fmt.Errorf("journal: a frame of %d bytes", len(payload))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken != nil {
		return 0, l.broken
	}
	if l.f == nil {
		return 0, errors.New("journal: not started")
	}
	if l.size >= l.segmentBytes {
		if err := l.create(l.segs[len(l.segs)-1].n + 1); err != nil {
			return 0, err
		}
	}
	l.buf = frame.Append(l.buf[:0], payload)
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
	l.size += int64(frame.Header + len(payload))
	l.frames++
	l.segs[len(l.segs)-1].last = l.frames
	return l.frames, nil
}

// Release deletes the segments, but the one appended to, whose frames all have numbers up
// to upTo: the store holds them.
func (l *Log) Release(upTo uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	keep := 0
	if l.f != nil {
		keep = 1 // the segment appended to
	}
	for len(l.segs) > keep && l.segs[0].last <= upTo {
		if err := os.Remove(filepath.Join(l.dir, segmentName(l.segs[0].n))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("journal: %w", err)
		}
		l.segs = l.segs[1:]
	}
	return nil
}

// errClosed is the broken state of a closed log.
var errClosed = errors.New("journal: closed")

// Err returns why appends fail — a failed write, fsync or segment start — or nil while
// they can succeed (and once the log is closed).
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if errors.Is(l.broken, errClosed) {
		return nil
	}
	return l.broken
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
	if l.broken == nil {
		l.broken = errClosed
	}
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
