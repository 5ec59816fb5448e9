package bundle

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Limits bound what a reader accepts before it reads any content. A bundle beyond one is
// refused with a *LimitError naming it, never read in part.
type Limits struct {
	Entries       int   // files (and directory entries) in the bundle
	FileSize      int64 // decompressed bytes of one file
	TotalSize     int64 // decompressed bytes of all files
	Ratio         int64 // decompressed/compressed bytes of a zip entry over RatioMinSize
	Chains        int   // chains the manifest names
	SealsPerChain int   // seal files of one chain
	Checkpoints   int   // log/checkpoints files
	ManifestSize  int64 // bytes of manifest.json
	ManifestDepth int   // nesting of manifest.json
	RatioMinSize  int64 // zip entries of at most this many decompressed bytes are exempt from Ratio
}

// DefaultLimits returns the limits of Open and OpenZipBytes: far above any bundle an exporter
// writes for a chain of millions of entries, far below what would exhaust a verifier.
func DefaultLimits() Limits {
	return Limits{
		Entries:       1 << 20,
		FileSize:      16 << 30,
		TotalSize:     64 << 30,
		Ratio:         300, // above the writer's own deflate (level 3) at its most: about 229:1 on a run of one byte
		Chains:        1 << 16,
		SealsPerChain: 1 << 20,
		Checkpoints:   1 << 16,
		ManifestSize:  MaxManifestSize,
		ManifestDepth: 32,
		RatioMinSize:  1 << 20,
	}
}

// maxJSONFile bounds the JSON files of trust/ and scitt/ that the bundle package parses.
const maxJSONFile = 64 << 20

// entry is one name a bundle holds, as the scan found it.
type entry struct {
	name string
	dir  bool
}

// nameProblem says why a name cannot be a bundle entry, or "".
func nameProblem(name string, dir bool) string {
	n := strings.TrimSuffix(name, "/")
	switch {
	case name == "" || n == "":
		return "empty name"
	case strings.HasPrefix(name, "/") || filepath.IsAbs(name) || (len(n) > 1 && n[1] == ':'):
		return "absolute path"
	case strings.Contains(name, "\\"):
		return "backslash in the name (a path separator on some systems)"
	case n == ".." || strings.HasPrefix(n, "../") || strings.HasSuffix(n, "/..") || strings.Contains(n, "/../"):
		return "path leaves the bundle (..)"
	case path.Clean(n) != n:
		return "name is not a clean path (empty, . or .. element)"
	case !dir && strings.HasSuffix(name, "/"):
		return "file name ends in /"
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; c < 0x20 || c >= 0x7f {
			if c >= 0x80 {
				return "non-ASCII name (Unicode names can differ only in normalisation; bundle names are ASCII)"
			}
			return "control character in the name"
		}
	}
	return ""
}

// foldKey is the name as a case-insensitive file system sees it (names are ASCII).
func foldKey(name string) string { return strings.ToLower(strings.TrimSuffix(name, "/")) }

// checkNames finds duplicate and colliding names.
func checkNames(entries []entry) []Ambiguity {
	var out []Ambiguity
	exact := map[string]int{}
	folded := map[string]string{}
	for _, e := range entries {
		n := strings.TrimSuffix(e.name, "/")
		if p := nameProblem(e.name, e.dir); p != "" {
			out = append(out, Ambiguity{Name: e.name, Reason: p})
			continue
		}
		exact[n]++
		if exact[n] == 2 {
			out = append(out, Ambiguity{Name: n, Reason: "the bundle holds this name more than once: readers differ on which copy they show"})
			continue
		}
		if exact[n] > 2 {
			continue
		}
		k := foldKey(n)
		if other, ok := folded[k]; ok && other != n {
			out = append(out, Ambiguity{Name: n, Reason: fmt.Sprintf("differs from %q only in case: one file on a case-insensitive file system", other)})
			continue
		}
		folded[k] = n
	}
	return out
}

// scanZip checks a zip's structure byte by byte against its central directory (as archive/zip
// read it): the local headers follow one another from offset 0 with nothing between or
// around them, each names the same file with the same method, flags, CRC and sizes as its
// central directory record, and the central directory and its end record close the file.
// Readers that walk local headers (streaming unzip tools) then see exactly the files
// archive/zip sees.
func scanZip(ra io.ReaderAt, size int64, zr *zip.Reader, l Limits) ([]entry, []Ambiguity, error) {
	if len(zr.File) > l.Entries {
		return nil, nil, &LimitError{Limit: "entries", Value: int64(len(zr.File)), Max: int64(l.Entries)}
	}
	var amb []Ambiguity
	entries := make([]entry, 0, len(zr.File))
	var total int64
	byData := make(map[int64]*zip.File, len(zr.File))
	for _, f := range zr.File {
		mode := f.Mode()
		dir := strings.HasSuffix(f.Name, "/")
		entries = append(entries, entry{name: f.Name, dir: dir})
		switch {
		case mode&fs.ModeSymlink != 0:
			amb = append(amb, Ambiguity{Name: f.Name, Reason: "a symbolic link: extracted, it points outside what the manifest binds"})
		case dir && f.UncompressedSize64 != 0: // archive/zip gives every name ending in / ModeDir
			amb = append(amb, Ambiguity{Name: f.Name, Reason: "a directory entry with content"})
		case !dir && mode.Type() != 0:
			amb = append(amb, Ambiguity{Name: f.Name, Reason: "not a regular file (" + mode.Type().String() + ")"})
		case f.Flags&0x1 != 0:
			amb = append(amb, Ambiguity{Name: f.Name, Reason: "an encrypted entry"})
		case f.Method != zip.Store && f.Method != zip.Deflate:
			amb = append(amb, Ambiguity{Name: f.Name, Reason: fmt.Sprintf("compression method %d (only stored and deflated entries are read)", f.Method)})
		}
		us := int64(f.UncompressedSize64)
		if f.UncompressedSize64 > 1<<62 {
			us = 1 << 62
		}
		if us > l.FileSize {
			return nil, nil, &LimitError{Limit: "file_size", Name: f.Name, Value: us, Max: l.FileSize}
		}
		if total += us; total > l.TotalSize {
			return nil, nil, &LimitError{Limit: "total_size", Name: f.Name, Value: total, Max: l.TotalSize}
		}
		if us > l.RatioMinSize && us > l.Ratio*int64(max(f.CompressedSize64, 1)) {
			return nil, nil, &LimitError{Limit: "ratio", Name: f.Name, Value: us / int64(max(f.CompressedSize64, 1)), Max: l.Ratio}
		}
		off, err := f.DataOffset()
		if err != nil {
			amb = append(amb, Ambiguity{Name: f.Name, Reason: "no local header where the central directory points: " + err.Error()})
			continue
		}
		if g, dup := byData[off]; dup {
			amb = append(amb, Ambiguity{Name: f.Name, Reason: fmt.Sprintf("shares its data with %q", g.Name)})
			continue
		}
		byData[off] = f
	}
	amb = append(amb, checkNames(entries)...)
	if len(amb) > 0 {
		return entries, amb, nil // the layout walk below assumes distinct, sane entries
	}
	return entries, walkZip(ra, size, zr, byData), nil
}

// walkZip follows the local headers from offset 0, then the central directory, then its end.
func walkZip(ra io.ReaderAt, size int64, zr *zip.Reader, byData map[int64]*zip.File) []Ambiguity {
	bad := func(name, format string, args ...any) []Ambiguity {
		return []Ambiguity{{Name: name, Reason: fmt.Sprintf(format, args...)}}
	}
	read := func(off int64, n int) ([]byte, bool) {
		if off < 0 || n < 0 || off > size || int64(n) > size-off {
			return nil, false
		}
		b := make([]byte, n)
		_, err := ra.ReadAt(b, off)
		return b, err == nil
	}
	var pos int64
	seen := 0
	for seen < len(zr.File) {
		h, ok := read(pos, 30)
		if !ok || binary.LittleEndian.Uint32(h) != 0x04034b50 {
			return bad("(zip)", "offset %d: expected the local header of the next entry: the archive holds bytes no entry accounts for, or fewer local headers than its central directory lists", pos)
		}
		nameLen, extraLen := int64(binary.LittleEndian.Uint16(h[26:])), int64(binary.LittleEndian.Uint16(h[28:]))
		dataOff := pos + 30 + nameLen + extraLen
		f, ok := byData[dataOff]
		if !ok {
			return bad("(zip)", "offset %d: a local header the central directory does not list (a hidden entry)", pos)
		}
		name, ok := read(pos+30, int(nameLen))
		if !ok || string(name) != f.Name {
			return bad(f.Name, "the local header names it %q: the central directory and the local headers disagree", name)
		}
		flags, method := binary.LittleEndian.Uint16(h[6:]), binary.LittleEndian.Uint16(h[8:])
		if method != f.Method || flags&0x9 != f.Flags&0x9 {
			return bad(f.Name, "the local header's method or flags differ from the central directory's")
		}
		crc, csize, usize := binary.LittleEndian.Uint32(h[14:]), binary.LittleEndian.Uint32(h[18:]), binary.LittleEndian.Uint32(h[22:])
		zip64 := f.CompressedSize64 >= 0xffffffff || f.UncompressedSize64 >= 0xffffffff
		end := dataOff + int64(f.CompressedSize64)
		if end < dataOff || end > size {
			return bad(f.Name, "its data runs past the end of the archive")
		}
		if flags&0x8 == 0 {
			if crc != f.CRC32 || (!zip64 && (uint64(csize) != f.CompressedSize64 || uint64(usize) != f.UncompressedSize64)) {
				return bad(f.Name, "the local header's CRC or sizes differ from the central directory's")
			}
		} else {
			dlen := 12
			if zip64 {
				dlen = 20
			}
			d, ok := read(end, dlen+4)
			if ok && binary.LittleEndian.Uint32(d) == 0x08074b50 {
				d, end = d[4:], end+4
			} else if d, ok = read(end, dlen); !ok {
				return bad(f.Name, "its data descriptor runs past the end of the archive")
			}
			var dc, du uint64
			if zip64 {
				dc, du = binary.LittleEndian.Uint64(d[4:]), binary.LittleEndian.Uint64(d[12:])
			} else {
				dc, du = uint64(binary.LittleEndian.Uint32(d[4:])), uint64(binary.LittleEndian.Uint32(d[8:]))
			}
			if binary.LittleEndian.Uint32(d) != f.CRC32 || dc != f.CompressedSize64 || du != f.UncompressedSize64 {
				return bad(f.Name, "its data descriptor's CRC or sizes differ from the central directory's")
			}
			end += int64(dlen)
		}
		pos = end
		seen++
	}
	// The central directory: one record per file, in the order archive/zip listed them.
	for _, f := range zr.File {
		h, ok := read(pos, 46)
		if !ok || binary.LittleEndian.Uint32(h) != 0x02014b50 {
			return bad("(zip)", "offset %d: expected a central directory record: the archive holds bytes no entry accounts for", pos)
		}
		n, e, c := int64(binary.LittleEndian.Uint16(h[28:])), int64(binary.LittleEndian.Uint16(h[30:])), int64(binary.LittleEndian.Uint16(h[32:]))
		if name, ok := read(pos+46, int(n)); !ok || string(name) != f.Name {
			return bad("(zip)", "offset %d: the central directory is not where the entries end", pos)
		}
		pos += 46 + n + e + c
	}
	// Optional zip64 end record and locator, then the end record and its comment, then nothing.
	if h, ok := read(pos, 12); ok && binary.LittleEndian.Uint32(h) == 0x06064b50 {
		rec := binary.LittleEndian.Uint64(h[4:])
		if rec > uint64(size) {
			return bad("(zip)", "a zip64 end record longer than the archive")
		}
		pos += 12 + int64(rec)
		if l, ok := read(pos, 20); !ok || binary.LittleEndian.Uint32(l) != 0x07064b50 {
			return bad("(zip)", "offset %d: expected the zip64 end locator", pos)
		}
		pos += 20
	}
	h, ok := read(pos, 22)
	if !ok || binary.LittleEndian.Uint32(h) != 0x06054b50 {
		return bad("(zip)", "offset %d: expected the end of the central directory: the archive holds bytes no entry accounts for", pos)
	}
	if pos+22+int64(binary.LittleEndian.Uint16(h[20:])) != size {
		return bad("(zip)", "bytes after the end of the central directory and its comment")
	}
	return nil
}

// scanDir lists a directory bundle without following links: a symbolic link, device, pipe or
// socket anywhere is refused (a pipe would block a reader forever).
func scanDir(fsys fs.FS, l Limits) ([]entry, []Ambiguity, error) {
	var entries []entry
	var amb []Ambiguity
	var total int64
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if len(entries) >= l.Entries {
			return &LimitError{Limit: "entries", Value: int64(len(entries)) + 1, Max: int64(l.Entries)}
		}
		t := d.Type()
		switch {
		case t&fs.ModeSymlink != 0:
			amb = append(amb, Ambiguity{Name: p, Reason: "a symbolic link: it points outside what the manifest binds"})
			return nil
		case d.IsDir():
			entries = append(entries, entry{name: p + "/", dir: true})
			return nil
		case t != 0:
			amb = append(amb, Ambiguity{Name: p, Reason: "not a regular file (" + t.String() + ")"})
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > l.FileSize {
			return &LimitError{Limit: "file_size", Name: p, Value: info.Size(), Max: l.FileSize}
		}
		if total += info.Size(); total > l.TotalSize {
			return &LimitError{Limit: "total_size", Name: p, Value: total, Max: l.TotalSize}
		}
		entries = append(entries, entry{name: p})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return entries, append(amb, checkNames(entries)...), nil
}

// checkListed refuses entries the manifest does not list (directories that hold a listed
// file excepted) and counts chains, seals and checkpoints against the limits.
func (r *Reader) checkListed(entries []entry, l Limits) ([]Ambiguity, error) {
	m := &r.Manifest
	if len(m.Chains) > l.Chains {
		return nil, &LimitError{Limit: "chains", Value: int64(len(m.Chains)), Max: int64(l.Chains)}
	}
	parents := map[string]bool{}
	seals := map[string]int{}
	checkpoints := 0
	for name := range m.Files {
		for d := path.Dir(name); d != "." && d != "/" && !parents[d]; d = path.Dir(d) {
			parents[d] = true
		}
		if rest, ok := strings.CutPrefix(name, "chains/"); ok {
			if dir, file, ok := strings.Cut(rest, "/seals/"); ok && !strings.Contains(file, "/") {
				if seals[dir]++; seals[dir] > l.SealsPerChain {
					return nil, &LimitError{Limit: "seals_per_chain", Name: "chains/" + dir, Value: int64(seals[dir]), Max: int64(l.SealsPerChain)}
				}
			}
		}
		if strings.HasPrefix(name, CheckpointsDir) {
			if checkpoints++; checkpoints > l.Checkpoints {
				return nil, &LimitError{Limit: "checkpoints", Value: int64(checkpoints), Max: int64(l.Checkpoints)}
			}
		}
	}
	var amb []Ambiguity
	for _, e := range entries {
		n := strings.TrimSuffix(e.name, "/")
		switch {
		case e.dir && parents[n]:
		case e.dir:
			amb = append(amb, Ambiguity{Name: e.name, Reason: "a directory that holds no file the manifest lists"})
		case n == ManifestFile:
		default:
			if _, ok := m.Files[n]; !ok {
				amb = append(amb, Ambiguity{Name: n, Reason: "not listed in the manifest: no digest binds it, yet a reader of the bundle sees it"})
			}
		}
	}
	sort.Slice(amb, func(i, j int) bool { return amb[i].Name < amb[j].Name })
	return amb, nil
}

// readWindow is an io.ReaderAt that serves reads from a cached 256 KiB window of ra, refilled
// at the offset of a read that falls outside it. Not safe for concurrent use.
type readWindow struct {
	ra   io.ReaderAt
	size int64
	off  int64
	buf  []byte
}

func (w *readWindow) ReadAt(p []byte, off int64) (int, error) {
	const span = 256 << 10
	if len(p) > span/4 {
		return w.ra.ReadAt(p, off) // large reads gain nothing from the cache
	}
	if off < w.off || off+int64(len(p)) > w.off+int64(len(w.buf)) {
		if off < 0 || off >= w.size {
			return 0, io.EOF
		}
		n := min(int64(span), w.size-off)
		if cap(w.buf) < int(n) {
			w.buf = make([]byte, span)
		}
		w.buf = w.buf[:n]
		if m, err := w.ra.ReadAt(w.buf, off); m < int(n) {
			w.buf = w.buf[:0]
			return 0, err
		}
		w.off = off
	}
	n := copy(p, w.buf[off-w.off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
