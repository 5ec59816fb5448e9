package bundle

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// file is one zip entry of a crafted archive.
type file struct {
	name string
	data string
	mode fs.FileMode // 0: regular
}

const entriesName = "chains/ws/entries.jsonl"

// manifestFor lists the named files of fs with their digests.
func manifestFor(files []file, listed ...string) string {
	m := Manifest{Format: Format, Log: LogInfo{Origin: "example.org/log"}, Files: map[string]string{}}
	for _, n := range listed {
		for _, f := range files {
			if f.name == n {
				d := sha256.Sum256([]byte(f.data))
				m.Files[n] = "sha256:" + hex.EncodeToString(d[:])
			}
		}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// craft writes files with archive/zip as given (duplicates, modes and all), the manifest last.
func craft(t *testing.T, manifest string, files ...file) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range append(files, file{name: ManifestFile, data: manifest}) {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate}
		if f.mode != 0 {
			h.SetMode(f.mode)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f.data))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var genuine = []file{{name: entriesName, data: "{\"seq\":0}\n"}, {name: "trust/log.vkey", data: "key\n"}}

func wantAmbiguous(t *testing.T, what string, err error, name, reason string) {
	t.Helper()
	var ae *AmbiguityError
	if !errors.As(err, &ae) || !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("%s: Open says %v, want ErrAmbiguous", what, err)
	}
	for _, a := range ae.Entries {
		if a.Name == name && strings.Contains(a.Reason, reason) {
			return
		}
	}
	t.Fatalf("%s: ambiguities %+v, want %q (%s)", what, ae.Entries, name, reason)
}

func TestZipAmbiguity(t *testing.T) {
	listed := manifestFor(genuine, entriesName, "trust/log.vkey")
	if r, err := OpenZipBytes(craft(t, listed, genuine...)); err != nil {
		t.Fatalf("genuine: %v", err)
	} else if b, err := r.ReadFile(entriesName, 1<<10); err != nil || string(b) != genuine[0].data {
		t.Fatalf("genuine read: %q %v", b, err)
	}
	altered := file{name: entriesName, data: "{\"seq\":1}\n"}
	nfc, nfd := "chains/ws/caf\u00e9.txt", "chains/ws/cafe\u0301.txt"
	for _, c := range []struct {
		what, manifest string
		files          []file
		name, reason   string
	}{
		{"a second, altered copy", listed, append(genuine, altered), entriesName, "more than once"},
		{"a copy before the genuine one", listed, append([]file{altered}, genuine...), entriesName, "more than once"},
		{"names differing in case", listed, append(genuine, file{name: "chains/ws/Entries.jsonl", data: "x"}), "chains/ws/Entries.jsonl", "only in case"},
		{"the manifest twice in other case", listed, append(genuine, file{name: "MANIFEST.json", data: "{}"}), ManifestFile, "only in case"},
		{"NFC and NFD", listed, append(genuine, file{name: nfc}, file{name: nfd}), nfc, "non-ASCII"},
		{"a path out of the bundle", listed, append(genuine, file{name: "../../evil.sh", data: "rm -rf"}), "../../evil.sh", "leaves the bundle"},
		{"an absolute path", listed, append(genuine, file{name: "/etc/evil", data: "x"}), "/etc/evil", "absolute"},
		{"a backslash", listed, append(genuine, file{name: `chains\ws\x`, data: "x"}), `chains\ws\x`, "backslash"},
		{"a dot element", listed, append(genuine, file{name: "chains/./ws/x", data: "x"}), "chains/./ws/x", "not a clean path"},
		{"a symlink", listed, append(genuine, file{name: "chains/ws/link", data: "/etc/passwd", mode: fs.ModeSymlink | 0o777}), "chains/ws/link", "symbolic link"},
		{"a listed symlink", manifestFor(genuine[:1], entriesName), []file{{name: entriesName, data: "../../x", mode: fs.ModeSymlink | 0o777}}, entriesName, "symbolic link"},
		{"an unlisted file", listed, append(genuine, file{name: "notes.txt", data: "x"}), "notes.txt", "not listed"},
		{"a directory holding nothing listed", listed, append(genuine, file{name: "spare/", mode: fs.ModeDir | 0o755}), "spare/", "holds no file"},
		{"a manifest listing a name with ..", manifestFor(append(genuine, file{name: "a/../b"}), entriesName, "a/../b"), genuine, "a/../b", "no bundle can hold"},
		{"manifest duplicate key in files", strings.Replace(listed, `"files":{`, `"files":{"trust/log.vkey":"sha256:00",`, 1), genuine, ManifestFile, "duplicate"},
		{"manifest files and FILES", strings.Replace(listed, `"files":{`, `"FILES":{},"files":{`, 1), genuine, ManifestFile, "only in case"},
		{"manifest lone surrogate", strings.Replace(listed, `"producer":""`, `"producer":"\ud800"`, 1), genuine, ManifestFile, "surrogate"},
		{"manifest number beyond 2^53", strings.Replace(listed, `"chains":null`, `"chains":[{"id":"ws","dir":"ws","size":9007199254740993}]`, 1), genuine, ManifestFile, "safe integer"},
	} {
		_, err := OpenZipBytes(craft(t, c.manifest, c.files...))
		wantAmbiguous(t, c.what, err, c.name, c.reason)
	}
	// A directory entry that holds a listed file is what zip tools write, and is fine.
	if _, err := OpenZipBytes(craft(t, listed, append([]file{{name: "chains/", mode: fs.ModeDir | 0o755}, {name: "chains/ws/", mode: fs.ModeDir | 0o755}}, genuine...)...)); err != nil {
		t.Fatalf("directory entries of listed files: %v", err)
	}
}

// TestZipLayout alters the bytes of a genuine archive so that a reader walking local headers
// sees something else than the central directory says.
func TestZipLayout(t *testing.T) {
	listed := manifestFor(genuine, entriesName, "trust/log.vkey")
	z := craft(t, listed, genuine...)
	if _, err := OpenZipBytes(z); err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(z, []byte(entriesName)) // the first local header's name
	for _, c := range []struct {
		what   string
		edit   func([]byte) []byte
		name   string
		reason string
	}{
		{"local name differs", func(b []byte) []byte { b[at+len("chains/")] = 'X'; return b }, entriesName, "local header names it"},
		{"local method differs", func(b []byte) []byte { b[8] = 0; return b }, entriesName, "method or flags"},
		{"bytes before the first entry", func(b []byte) []byte { return append([]byte("#!/bin/sh\nexit 0\n"), b...) }, "(zip)", "offset 0"},
		{"bytes after the end record", func(b []byte) []byte { return append(b, "trailer"...) }, "(zip)", "after the end"},
		{"a hidden local entry before the central directory", func(b []byte) []byte {
			// Rebuild with one more file, then drop that file's central record by shifting the
			// directory: simplest is to splice the extra entry's local bytes in front of the
			// genuine archive's central directory.
			extra := craft(t, listed, append(genuine, file{name: "hidden.sh", data: "evil"})...)
			lh := bytes.Index(extra, []byte("hidden.sh")) - 30
			end := 4 + bytes.Index(extra[lh+4:], []byte("PK\x03\x04")) // the next local header (the manifest's)
			hidden := extra[lh : lh+end]
			cd := bytes.Index(b, []byte("PK\x01\x02"))
			out := append(append(append([]byte{}, b[:cd]...), hidden...), b[cd:]...)
			// The end record's directory offset moves by len(hidden).
			eocd := bytes.LastIndex(out, []byte("PK\x05\x06"))
			off := int(out[eocd+16]) | int(out[eocd+17])<<8 | int(out[eocd+18])<<16 | int(out[eocd+19])<<24
			off += len(hidden)
			out[eocd+16], out[eocd+17], out[eocd+18], out[eocd+19] = byte(off), byte(off>>8), byte(off>>16), byte(off>>24)
			return out
		}, "(zip)", "central directory"},
	} {
		b := c.edit(bytes.Clone(z))
		_, err := OpenZipBytes(b)
		wantAmbiguous(t, c.what, err, c.name, c.reason)
	}
}

func TestLimits(t *testing.T) {
	listed := manifestFor(genuine, entriesName, "trust/log.vkey")
	big := strings.Repeat("a", 4<<10)
	bigFiles := []file{{name: entriesName, data: big}, genuine[1]}
	small := DefaultLimits()
	for _, c := range []struct {
		what     string
		limit    string
		set      func(*Limits)
		manifest string
		files    []file
	}{
		{"entries", "entries", func(l *Limits) { l.Entries = 2 }, listed, genuine},
		{"file size", "file_size", func(l *Limits) { l.FileSize = 1 << 10 }, manifestFor(bigFiles, entriesName, "trust/log.vkey"), bigFiles},
		{"total size", "total_size", func(l *Limits) { l.TotalSize = 8 }, listed, genuine},
		{"ratio", "ratio", func(l *Limits) { l.RatioMinSize, l.Ratio = 1<<10, 10 }, manifestFor(bigFiles, entriesName, "trust/log.vkey"), bigFiles},
		{"manifest size", "manifest_size", func(l *Limits) { l.ManifestSize = 16 }, listed, genuine},
		{"manifest depth", "manifest_depth", nil, `{"format":"evident-bundle/v1","scope":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`, genuine},
		{"chains", "chains", func(l *Limits) { l.Chains = 0 }, strings.Replace(listed, `"chains":null`, `"chains":[{"id":"ws","dir":"ws"}]`, 1), genuine},
		{"seals", "seals_per_chain", func(l *Limits) { l.SealsPerChain = 1 }, manifestFor(append(genuine, file{name: "chains/ws/seals/000000.cose"}, file{name: "chains/ws/seals/000001.cose"}), "chains/ws/seals/000000.cose", "chains/ws/seals/000001.cose"), append(genuine[:0:0], file{name: "chains/ws/seals/000000.cose"}, file{name: "chains/ws/seals/000001.cose"})},
		{"checkpoints", "checkpoints", func(l *Limits) { l.Checkpoints = 0 }, manifestFor([]file{{name: "log/checkpoints/000000000001.checkpoint"}}, "log/checkpoints/000000000001.checkpoint"), []file{{name: "log/checkpoints/000000000001.checkpoint"}}},
	} {
		l := small
		if c.set != nil {
			c.set(&l)
		}
		_, err := OpenZipBytesWithLimits(craft(t, c.manifest, c.files...), l)
		var le *LimitError
		if !errors.As(err, &le) || !errors.Is(err, ErrLimit) || le.Limit != c.limit {
			t.Errorf("%s: Open says %v, want the %s limit", c.what, err, c.limit)
		}
	}
}

func TestDirAmbiguity(t *testing.T) {
	write := func(t *testing.T, files ...file) string {
		dir := t.TempDir()
		for _, f := range append(files, file{name: ManifestFile, data: manifestFor(genuine, entriesName, "trust/log.vkey")}) {
			p := filepath.Join(dir, filepath.FromSlash(f.name))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(f.data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	dir := write(t, genuine...)
	if r, err := Open(dir); err != nil {
		t.Fatalf("genuine directory: %v", err)
	} else {
		r.Close()
	}

	dir = write(t, genuine[1])
	outside := filepath.Join(t.TempDir(), "entries.jsonl")
	os.WriteFile(outside, []byte(genuine[0].data), 0o644)
	os.MkdirAll(filepath.Join(dir, "chains/ws"), 0o755)
	if err := os.Symlink(outside, filepath.Join(dir, entriesName)); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	_, err := Open(dir)
	wantAmbiguous(t, "a listed file that is a symlink", err, entriesName, "symbolic link")

	dir = write(t, genuine...)
	os.Mkdir(filepath.Join(dir, "stray"), 0o755)
	os.WriteFile(filepath.Join(dir, ".DS_Store"), []byte("x"), 0o644)
	_, err = Open(dir)
	wantAmbiguous(t, "an unlisted file", err, ".DS_Store", "not listed")
	wantAmbiguous(t, "an empty directory", err, "stray/", "holds no file")

	dir = write(t, genuine...)
	os.WriteFile(filepath.Join(dir, "chains/ws/ENTRIES.jsonl"), []byte("x"), 0o644)
	if _, err := os.Stat(filepath.Join(dir, entriesName)); err == nil {
		if _, err := os.Stat(filepath.Join(dir, "chains/ws/ENTRIES.jsonl")); err == nil {
			if fi, _ := os.ReadDir(filepath.Join(dir, "chains/ws")); len(fi) == 2 { // a case-sensitive file system
				_, err := Open(dir)
				wantAmbiguous(t, "names differing in case", err, "chains/ws/entries.jsonl", "only in case")
			}
		}
	}
}

func TestWriterRefusesCollidingNames(t *testing.T) {
	w := NewWriter(new(bytes.Buffer))
	if err := w.WriteFile("chains/a/entries.jsonl", nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"chains/A/entries.jsonl", "Manifest.json", "chains/caf\u00e9/x", "../x", "a//b"} {
		if err := w.WriteFile(name, nil); !errors.Is(err, ErrFormat) {
			t.Errorf("%q: %v, want ErrFormat", name, err)
		}
	}
}

// TestZip64Layout: past 65,535 entries the writer adds zip64 end records, which the layout
// walk must accept.
func TestZip64Layout(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 70,000 entries")
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := range 70000 {
		if err := w.WriteFile(SealFile("ws", uint64(i)), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(Manifest{Log: LogInfo{Origin: "example.org/log"}}); err != nil {
		t.Fatal(err)
	}
	z := buf.Bytes()
	if !bytes.Contains(z[len(z)-200:], []byte("PK\x06\x06")) {
		t.Fatal("no zip64 end record: the test does not test what it says")
	}
	if _, err := OpenZipBytes(z); err != nil {
		t.Fatal(err)
	}
	_, err := OpenZipBytes(append(z, 0))
	wantAmbiguous(t, "a byte after the end record", err, "(zip)", "after the end")
}
