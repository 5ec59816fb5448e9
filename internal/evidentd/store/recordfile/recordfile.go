// Package recordfile is the embedded store's file of records: the canonical bytes of every
// accepted entry, appended one frame each (package frame: length, CRC-32Cs, payload) after
// an 8-byte magic, and read back by place (offset and length). The database beside it keeps
// the places and how many bytes of the file it holds, so a record's bytes are written once,
// sequentially, instead of into the database's B-tree pages, its WAL and again at each
// checkpoint.
//
// The file never shrinks and kept bytes are never rewritten. A writer writes at the end the
// database names (inside its write transaction, so writers of several processes take
// turns), fsyncs (Sync), and only then commits the places and the new end: the database
// never names bytes that are not on disk. Bytes past that end are what a transaction that
// did not commit left behind; the next write overwrites them.
package recordfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/evident-log/evident/internal/durable"
	"github.com/evident-log/evident/internal/evidentd/store/frame"
)

// magic begins the file; offsets count from after it.
const magic = "EVRECS1\n"

// maxRead bounds one read of contiguous frames, so a long page of entries is read in
// pieces rather than into one buffer.
const maxRead = 4 << 20

// ErrCorrupt means the file does not hold what the database says it holds: a frame that
// does not check, a place outside the file, or fewer bytes than the database names.
var ErrCorrupt = errors.New("record file corrupt")

// Place is where one record is: the offset of its frame (from the end of the magic) and the
// record's length.
type Place struct {
	Off int64
	Len int
}

// end returns the offset just past the frame at p.
func (p Place) end() int64 { return p.Off + frame.Header + int64(p.Len) }

// File is an open record file.
type File struct {
	path string
	f    *os.File

	mu     sync.Mutex
	buf    []byte
	dirty  bool  // written since the last Sync
	broken error // a failed write or fsync: what the file holds past its kept end is unknown
}

// Open opens the record file at path, creating it (durably, with its magic) when absent;
// kept is the number of bytes past the magic the database says the file holds, and a file
// holding fewer is refused with an error wrapping ErrCorrupt. An absent file is created
// only when kept is 0.
func Open(path string, kept int64) (*File, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if kept != 0 {
			return nil, fmt.Errorf("record file %s is missing, and the database names %d bytes of it: %w", path, kept, ErrCorrupt)
		}
		if err := durable.CreateFile(path, []byte(magic), 0o644); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("record file: %w", err)
		}
		f, err = os.OpenFile(path, os.O_RDWR, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("record file: %w", err)
	}
	if err := check(f, kept); err != nil {
		f.Close()
		return nil, fmt.Errorf("record file %s: %w", path, err)
	}
	return &File{path: path, f: f}, nil
}

// check reads the magic of f and its size against kept.
func check(f *os.File, kept int64) error {
	head := make([]byte, len(magic))
	if _, err := io.ReadFull(f, head); err != nil || string(head) != magic {
		return fmt.Errorf("does not begin with the record file's magic: %w", ErrCorrupt)
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if have := st.Size() - int64(len(magic)); have < kept {
		return fmt.Errorf("holds %d bytes of records, the database names %d: %w", have, kept, ErrCorrupt)
	}
	return nil
}

// Write writes recs, one frame each, from offset at (the end the database names) on, and
// returns their places and the new end. Nothing written is durable before Sync. After a
// failed write every later Write fails (Err says why): what the file then holds past the
// kept end is not known. Reads of kept records go on.
func (f *File) Write(at int64, recs [][]byte) ([]Place, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken != nil {
		return nil, 0, f.broken
	}
	for _, r := range recs {
		if len(r) == 0 || len(r) > frame.MaxPayload {
			return nil, 0, fmt.Errorf("record file: a record of %d bytes", len(r))
		}
	}
	places := make([]Place, len(recs))
	end := at
	from := at // where f.buf goes
	f.buf = f.buf[:0]
	for i, r := range recs {
		if len(f.buf) > 0 && len(f.buf)+frame.Header+len(r) > writeChunk {
			if err := f.writeAt(from); err != nil {
				return nil, 0, err
			}
			from, f.buf = end, f.buf[:0]
		}
		places[i] = Place{Off: end, Len: len(r)}
		f.buf = frame.Append(f.buf, r)
		end = places[i].end()
	}
	if err := f.writeAt(from); err != nil {
		return nil, 0, err
	}
	if cap(f.buf) > 2*writeChunk {
		f.buf = nil // do not keep the buffer of one outsized record
	}
	f.dirty = f.dirty || len(recs) > 0
	return places, end, nil
}

// writeChunk is about how many bytes of frames Write gathers into one write: a buffer
// kept from one Write to the next instead of one as large as a whole fold.
const writeChunk = 1 << 20

// writeAt writes f.buf at offset off past the magic; the caller holds mu.
func (f *File) writeAt(off int64) error {
	if len(f.buf) == 0 {
		return nil
	}
	if _, err := f.f.WriteAt(f.buf, int64(len(magic))+off); err != nil {
		f.broken = fmt.Errorf("record file %s: write failed, no more writes until restart: %w", f.path, err)
		f.dirty = false // the transaction that wrote fails: nothing of it is to be made durable
		return f.broken
	}
	return nil
}

// Sync makes what Write wrote since the last Sync durable (fsync); it does nothing when
// nothing was. A failed fsync fails the transaction whose records it was to make durable,
// and every later Write (Err says why); transactions that write no records go on.
func (f *File) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.dirty {
		return nil
	}
	f.dirty = false
	if err := f.f.Sync(); err != nil {
		f.broken = fmt.Errorf("record file %s: fsync failed, no more writes until restart: %w", f.path, err)
		return f.broken
	}
	return nil
}

// Err returns why the file takes no more writes (a failed write or fsync), or nil.
func (f *File) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.broken
}

// Read returns the records at places, each checked against its frame; places that follow
// each other in the file are read together. A record is a slice of a buffer shared with
// its neighbours, capped at its length. A place outside the file (as a damaged database
// could name) or a frame that does not check is an error wrapping ErrCorrupt.
func (f *File) Read(places []Place) ([][]byte, error) {
	st, err := f.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("record file %s: %w", f.path, err)
	}
	size := st.Size() - int64(len(magic))
	for _, p := range places {
		if p.Off < 0 || p.Len < 1 || p.Len > frame.MaxPayload || p.Off > size-frame.Header-int64(p.Len) {
			return nil, fmt.Errorf("record file %s: a record of %d bytes at %d is outside the file's %d bytes: %w", f.path, p.Len, p.Off, size, ErrCorrupt)
		}
	}
	out := make([][]byte, len(places))
	for i := 0; i < len(places); {
		j := i + 1 // places[i:j] are contiguous, read at once
		for j < len(places) && places[j].Off == places[j-1].end() && places[j].end()-places[i].Off <= maxRead {
			j++
		}
		buf := make([]byte, places[j-1].end()-places[i].Off)
		if _, err := f.f.ReadAt(buf, int64(len(magic))+places[i].Off); err != nil {
			if errors.Is(err, io.EOF) { // cut short since the bounds were checked
				err = errors.Join(ErrCorrupt, err)
			}
			return nil, fmt.Errorf("record file %s: reading %d bytes at %d: %w", f.path, len(buf), places[i].Off, err)
		}
		for k := i; k < j; k++ {
			b := buf[places[k].Off-places[i].Off:]
			p, ok := frame.Parse(b)
			if !ok || len(p) != places[k].Len {
				return nil, fmt.Errorf("record file %s: the record at %d (%d bytes) does not check: %w", f.path, places[k].Off, places[k].Len, ErrCorrupt)
			}
			out[k] = p
		}
		i = j
	}
	return out, nil
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// PathFor returns the record file's path beside the database file at dbPath:
// "ledger.db" → "ledger.db.records", so that what names the database's files
// ("ledger.db*") names it too.
func PathFor(dbPath string) string { return filepath.Clean(dbPath) + ".records" }
