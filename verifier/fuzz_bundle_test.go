package verifier

// End-to-end fuzz targets: arbitrary bytes as a whole bundle (zip bytes, or a directory tree
// encoded as a small archive), through bundle.Open / bundle.OpenZipBytes and Verify with the
// genuine service's trust file pinned. Beyond panics, a run fails on
//
//   - a false verify: a "verified" report on a bundle that does not say exactly what one of
//     the genuine seeds says (fuzzOracle);
//   - an inconsistent report: a verdict that is not Fold of the checks, an unknown check name
//     or status, a report that cannot be written as JSON or text, or a refused bundle
//     (bundle.ErrAmbiguous, bundle.ErrManifest, bundle.ErrLimit) that RefusedReport does not
//     report as broken / broken / not evaluated;
//   - a hang: Verify not back within fuzzHangAfter (its context has a fuzzDeadline deadline);
//   - an allocation above fuzzMaxAlloc for an input under fuzzSmallInput bytes.

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/trustfile"
	"github.com/evident-log/evident/verifier/internal/testbundle"
)

// Bounds of one fuzz input.
const (
	fuzzDeadline   = 5 * time.Second  // Verify's context deadline
	fuzzHangAfter  = 30 * time.Second // Verify not back by then is a hang
	fuzzSmallInput = 10 << 20         // inputs under this size …
	fuzzMaxAlloc   = 256 << 20        // … may allocate at most this much in one call
	fuzzMaxFiles   = 64               // files a directory archive may hold (more are ignored)
)

// fuzzSeed is one genuine bundle: what a verified report may vouch for.
type fuzzSeed struct {
	name     string
	b        *testbundle.Bundle
	files    map[string][]byte // every file but manifest.json
	manifest []byte            // manifest.json as bundle.Writer writes it
}

// fuzzSeedShapes are the genuine bundles the targets start from and the verdict each has.
var fuzzSeedShapes = []struct {
	name string
	o    testbundle.Options
	want Status
}{
	{"small", testbundle.Options{Entries: 6, Participants: 2}, Verified},
	{"three seals, checkpoint files", testbundle.Options{Entries: 12, SealAt: []int{4, 8, 12}, CheckpointFiles: true, ReceiptsAtEnd: true}, Verified},
	{"rotation, two seals", testbundle.Options{Entries: 12, Rotate: true, SealAt: []int{6, 12}, ReceiptsAtEnd: true}, Verified},
	{"two checkpoints, no consistency proof", testbundle.Options{Entries: 8, Participants: 2, SealAt: []int{4, 8}, CheckpointFiles: true}, NotEvaluated},
	{"unsigned records", testbundle.Options{Entries: 8, Participants: 2, Unsigned: 2}, NotEvaluated},
	{"unsealed tail", testbundle.Options{Entries: 8, Participants: 2, SealAt: []int{5}}, NotEvaluated},
	{"chain id to escape", testbundle.Options{ChainID: "Ws/1 é", Entries: 5, Participants: 2, NoCheckpoint: true}, NotEvaluated},
}

var fuzzSeedsOnce struct {
	sync.Once
	seeds []*fuzzSeed
	trust *trustfile.File
}

// fuzzSeeds builds the genuine bundles once per process and checks each has its verdict.
func fuzzSeeds(tb testing.TB) ([]*fuzzSeed, *trustfile.File) {
	tb.Helper()
	fuzzSeedsOnce.Do(func() {
		fuzzSeedsOnce.trust = testbundle.Trust(tb)
		for _, s := range fuzzSeedShapes {
			b := testbundle.Build(tb, s.o)
			m, err := json.MarshalIndent(b.Manifest, "", "  ")
			if err != nil {
				tb.Fatal(err)
			}
			seed := &fuzzSeed{name: s.name, b: b, files: b.Files, manifest: append(m, '\n')}
			rep, err := Verify(context.Background(), b.Reader(tb), Options{Workers: 2, Trust: fuzzSeedsOnce.trust})
			if err != nil {
				tb.Fatal(err)
			}
			if rep.Verdict != s.want {
				tb.Fatalf("seed %q: verdict %s, want %s", s.name, rep.Verdict, s.want)
			}
			fuzzSeedsOnce.seeds = append(fuzzSeedsOnce.seeds, seed)
		}
	})
	if fuzzSeedsOnce.seeds == nil {
		tb.Fatal("fuzz seeds failed to build")
	}
	return fuzzSeedsOnce.seeds, fuzzSeedsOnce.trust
}

// all returns the seed's files with manifest.json, in the order bundle.Writer writes them.
func (s *fuzzSeed) all() []fuzzFile {
	var out []fuzzFile
	for _, name := range slices.Sorted(maps.Keys(s.files)) {
		out = append(out, fuzzFile{kind: 'f', name: name, data: s.files[name]})
	}
	return append(out, fuzzFile{kind: 'f', name: bundle.ManifestFile, data: s.manifest})
}

// fuzzFile is one entry of a crafted bundle.
type fuzzFile struct {
	kind byte // 'f' regular file, 'd' directory, 'l' symlink (data is the target), 'p' named pipe
	name string
	data []byte
}

// storedZip writes files as a zip whose entries are stored (not compressed) with their sizes
// and CRC in the local headers, so that byte mutations reach the content and a streaming
// reader can read it.
func storedZip(tb testing.TB, files []fuzzFile) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.CreateRaw(&zip.FileHeader{Name: f.name, Method: zip.Store, Modified: testbundle.Base,
			CRC32: crc32.ChecksumIEEE(f.data), CompressedSize64: uint64(len(f.data)), UncompressedSize64: uint64(len(f.data))})
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := w.Write(f.data); err != nil {
			tb.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// hideFirstEntry removes the first central directory record of a zip written by storedZip
// (no comment, no zip64): its local entry stays in the file, seen by a streaming reader only.
func hideFirstEntry(tb testing.TB, z []byte) []byte {
	tb.Helper()
	z = bytes.Clone(z)
	eocd := len(z) - 22
	if binary.LittleEndian.Uint32(z[eocd:]) != 0x06054b50 {
		tb.Fatal("hideFirstEntry: no end of central directory record")
	}
	cdOff := int(binary.LittleEndian.Uint32(z[eocd+16:]))
	rec := z[cdOff:]
	n := 46 + int(binary.LittleEndian.Uint16(rec[28:])) + int(binary.LittleEndian.Uint16(rec[30:])) + int(binary.LittleEndian.Uint16(rec[32:]))
	out := append(bytes.Clone(z[:cdOff]), z[cdOff+n:]...)
	e := len(out) - 22
	binary.LittleEndian.PutUint16(out[e+8:], binary.LittleEndian.Uint16(out[e+8:])-1)
	binary.LittleEndian.PutUint16(out[e+10:], binary.LittleEndian.Uint16(out[e+10:])-1)
	binary.LittleEndian.PutUint32(out[e+12:], binary.LittleEndian.Uint32(out[e+12:])-uint32(n))
	return out
}

// tamperEntries returns entries.jsonl with one word changed (a message's "n":3 made "n":4).
func tamperEntries(tb testing.TB, s *fuzzSeed) []byte {
	tb.Helper()
	orig := s.files[s.b.EntriesFile()]
	out := bytes.Replace(orig, []byte(`"n":3`), []byte(`"n":4`), 1)
	if bytes.Equal(out, orig) {
		tb.Fatalf("seed %q: no \"n\":3 in entries.jsonl to tamper with", s.name)
	}
	return out
}

// replaceFile returns files with name's content replaced (or appended when absent).
func replaceFile(files []fuzzFile, name string, data []byte) []fuzzFile {
	out := slices.Clone(files)
	for i := range out {
		if out[i].name == name {
			out[i].data = data
			return out
		}
	}
	return append(out, fuzzFile{kind: 'f', name: name, data: data})
}

// hostileSeeds are crafted bundles a verifier must not call verified: each would show a
// reader other bytes than the verifier checks, or say something no seed said.
func hostileSeeds(tb testing.TB, s *fuzzSeed) map[string][]fuzzFile {
	tb.Helper()
	ef := s.b.EntriesFile()
	evil := tamperEntries(tb, s)
	genuine := s.all()
	// The manifest with a second, earlier "log" member (encoding/json keeps the last).
	dupKey := bytes.Replace(s.manifest, []byte(`"log": {`), []byte(`"log": {"origin": "evil.example/log"}, "log": {`), 1)
	// The same with keys that differ only in case, which encoding/json merges.
	caseKey := bytes.Replace(s.manifest, []byte(`"log": {`), []byte(`"LOG": {"origin": "evil.example/log"}, "log": {`), 1)
	renamed := func(to string) []fuzzFile {
		out := slices.Clone(genuine)
		for i := range out {
			if out[i].name == ef {
				out[i].name = to
			}
		}
		return out
	}
	producer := func(p string) []byte {
		return bytes.Replace(s.manifest, []byte(`"producer": "testbundle"`), []byte(`"producer": "`+p+`"`), 1)
	}
	deep := bytes.Replace(s.manifest, []byte(`"scope": {`), []byte(`"scope": {"chains": `+strings.Repeat("[", 10000)+strings.Repeat("]", 10000)+`, `), 1)
	return map[string][]fuzzFile{
		"slash-prefixed name":              renamed("/" + ef),
		"dot-dot-prefixed name":            renamed("../" + ef),
		"backslash name":                   renamed(strings.ReplaceAll(ef, "/", `\`)),
		"dot segment duplicate":            append(slices.Clone(genuine), fuzzFile{kind: 'f', name: strings.Replace(ef, "/entries", "/./entries", 1), data: evil}),
		"manifest lone surrogate":          replaceFile(genuine, bundle.ManifestFile, producer(`test\ud800bundle`)),
		"manifest invalid UTF-8":           replaceFile(genuine, bundle.ManifestFile, producer("test\xffbundle")),
		"manifest nested 10000 deep":       replaceFile(genuine, bundle.ManifestFile, deep),
		"duplicate entries, genuine first": append(slices.Clone(genuine), fuzzFile{kind: 'f', name: ef, data: evil}),
		"duplicate entries, genuine last":  append([]fuzzFile{{kind: 'f', name: ef, data: evil}}, genuine...),
		"entries differing by case":        append(slices.Clone(genuine), fuzzFile{kind: 'f', name: strings.ToUpper(ef[:1]) + ef[1:], data: evil}),
		"unlisted escaping path":           append(slices.Clone(genuine), fuzzFile{kind: 'f', name: "../../evil.sh", data: []byte("#!/bin/sh\nrm -rf ~\n")}),
		"unlisted file":                    append(slices.Clone(genuine), fuzzFile{kind: 'f', name: "README.txt", data: []byte("the chain says n=4\n")}),
		"manifest duplicate key":           replaceFile(genuine, bundle.ManifestFile, dupKey),
		"manifest keys differing by case":  replaceFile(genuine, bundle.ManifestFile, caseKey),
		"directory entry":                  append([]fuzzFile{{kind: 'd', name: "chains/"}}, genuine...),
	}
}

// FuzzVerifyBundleZip verifies arbitrary bytes as a zip bundle (bundle.OpenZipBytes) with the
// genuine service's trust file pinned. Seeds: genuine bundles of several shapes, deflated as
// bundle.Writer writes them and stored so that mutations reach the content, crafted hostile
// zips (hostileSeeds; a local entry the central directory does not list, bytes before the
// first entry, a tampered zip before the genuine one) and decompression bombs.
func FuzzVerifyBundleZip(f *testing.F) {
	seeds, trust := fuzzSeeds(f)
	for i, s := range seeds {
		f.Add(s.b.Zip(f))
		f.Add(storedZip(f, s.all()))
		if i > 1 {
			continue
		}
		hostile := hostileSeeds(f, s)
		for _, name := range slices.Sorted(maps.Keys(hostile)) {
			f.Add(storedZip(f, dirsAsEntries(hostile[name])))
		}
		// A hidden local entry: tampered entries.jsonl before the genuine files, absent from
		// the central directory.
		evil := []fuzzFile{{kind: 'f', name: s.b.EntriesFile(), data: tamperEntries(f, s)}}
		hidden := append(slices.Clone(evil), s.all()...)
		f.Add(hideFirstEntry(f, storedZip(f, hidden)))
		// Bytes before the first entry (archive/zip finds the entries from the end; a
		// streaming reader starts at the front), and a zip of tampered entries before the
		// genuine zip.
		f.Add(append([]byte("#!/bin/sh\necho not a zip\nexit 0\n"), storedZip(f, s.all())...))
		f.Add(append(storedZip(f, evil), storedZip(f, s.all())...))
	}
	// Decompression bombs with digests that match: entries.jsonl of 64 MiB of empty lines,
	// and of 64 MiB of "{}" lines (each line after the first break is only counted).
	for _, line := range []string{"\n", "{}\n"} {
		b := seeds[0].b.Clone()
		b.Files[b.EntriesFile()] = bytes.Repeat([]byte(line), 64<<20/len(line))
		b.Digests()
		f.Add(b.Zip(f))
	}
	f.Add([]byte("PK\x05\x06" + strings.Repeat("\x00", 18)))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRun(t, seeds, trust, len(data), func() (*bundle.Reader, error) { return bundle.OpenZipBytes(data) },
			func(t *testing.T) (fuzzView, error) { return zipView(data) })
	})
}

// dirsAsEntries turns directory files into zip directory entries ("name/", no content).
func dirsAsEntries(files []fuzzFile) []fuzzFile {
	out := slices.Clone(files)
	for i := range out {
		if out[i].kind == 'd' && !strings.HasSuffix(out[i].name, "/") {
			out[i].name += "/"
		}
	}
	return out
}

// The directory archive FuzzVerifyBundleDir decodes: a sequence of records
//
//	kind      1 byte: 'f' regular file, 'd' directory, 'l' symlink, 'p' named pipe, 'm' (no file:
//	          recompute the manifest's digests, below); any other byte is 'f'
//	name      uvarint length, then the bytes (a slash-separated path)
//	content   uvarint length, then the bytes (a symlink's target; ignored for 'd' and 'p')
//
// read until the input ends or a record is cut short, at most fuzzMaxFiles records. Records
// are written in order into an empty directory; a name that filepath.IsLocal refuses, a
// symlink whose target it refuses, and a record that cannot be written are skipped. A later
// record of the same name replaces an earlier one; names that differ only in case stay two
// files (the file system is case-sensitive).
//
// With an 'm' record, once every file is written, manifest.json is read (encoding/json) and
// written back with the digest of every file it lists as the tree now holds it: the digests
// bind nothing an attacker cannot recompute, so this lets mutations of entries, seals,
// checkpoints and trust files reach the checks that do bind them (signatures, receipts, pins).

// encodeDir encodes files in that format.
func encodeDir(files []fuzzFile) []byte {
	var b []byte
	for _, f := range files {
		b = append(b, f.kind)
		b = binary.AppendUvarint(b, uint64(len(f.name)))
		b = append(b, f.name...)
		b = binary.AppendUvarint(b, uint64(len(f.data)))
		b = append(b, f.data...)
	}
	return b
}

// decodeDir decodes a directory archive.
func decodeDir(data []byte) []fuzzFile {
	var out []fuzzFile
	field := func() ([]byte, bool) {
		n, k := binary.Uvarint(data)
		if k <= 0 || n > uint64(len(data)-k) {
			return nil, false
		}
		v := data[k : k+int(n)]
		data = data[k+int(n):]
		return v, true
	}
	for len(data) > 0 && len(out) < fuzzMaxFiles {
		kind := data[0]
		data = data[1:]
		if !strings.ContainsRune("fdlpm", rune(kind)) {
			kind = 'f'
		}
		name, ok := field()
		if !ok {
			break
		}
		content, ok := field()
		if !ok {
			break
		}
		out = append(out, fuzzFile{kind: kind, name: string(name), data: content})
	}
	return out
}

// writeDir writes decoded records under root (see the format above) and returns the named
// pipes it made.
func writeDir(root string, files []fuzzFile) (pipes []string) {
	for _, f := range files {
		if !filepath.IsLocal(f.name) {
			continue
		}
		p := filepath.Join(root, filepath.FromSlash(f.name))
		if os.MkdirAll(filepath.Dir(p), 0o755) != nil {
			continue
		}
		switch f.kind {
		case 'm':
		case 'd':
			os.MkdirAll(p, 0o755)
		case 'l':
			if filepath.IsLocal(string(f.data)) {
				os.Remove(p)
				os.Symlink(string(f.data), p)
			}
		case 'p':
			os.Remove(p)
			if mkfifo(p) == nil {
				pipes = append(pipes, p)
			}
		default:
			os.WriteFile(p, f.data, 0o644)
		}
	}
	return pipes
}

// FuzzVerifyBundleDir verifies arbitrary bytes as a directory bundle (bundle.Open): the input
// is a directory archive (format above) written into an empty directory. Seeds: the genuine
// bundles, and crafted hostile trees (a duplicate in another case, unlisted and escaping
// names, a symlink, a named pipe, manifests with duplicate keys).
func FuzzVerifyBundleDir(f *testing.F) {
	seeds, trust := fuzzSeeds(f)
	for i, s := range seeds {
		f.Add(encodeDir(s.all()))
		if i > 1 {
			continue
		}
		hostile := hostileSeeds(f, s)
		for _, name := range slices.Sorted(maps.Keys(hostile)) {
			f.Add(encodeDir(hostile[name]))
		}
		ef := s.b.EntriesFile()
		// entries.jsonl a symlink to an unlisted copy of itself.
		f.Add(encodeDir(append(s.all(), fuzzFile{kind: 'f', name: "copy/entries.jsonl", data: s.files[ef]},
			fuzzFile{kind: 'l', name: ef, data: []byte("entries.jsonl.real")}, fuzzFile{kind: 'f', name: ef + ".real", data: s.files[ef]})))
		// An unlisted named pipe, and a listed one.
		f.Add(encodeDir(append(s.all(), fuzzFile{kind: 'p', name: "log/checkpoints/000000000099.checkpoint"})))
		piped := s.all()
		for i := range piped {
			if piped[i].name == bundle.LogKeyFile {
				piped[i] = fuzzFile{kind: 'p', name: bundle.LogKeyFile}
			}
		}
		f.Add(encodeDir(piped))
	}
	// The genuine bundles with their digests recomputed, so that mutations get past them.
	for _, s := range seeds {
		f.Add(encodeDir(append([]fuzzFile{{kind: 'm'}}, s.all()...)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		root := t.TempDir()
		files := decodeDir(data)
		pipes := writeDir(root, files)
		if slices.ContainsFunc(files, func(f fuzzFile) bool { return f.kind == 'm' }) {
			redigest(root)
		}
		defer unblockPipes(pipes)
		fuzzRun(t, seeds, trust, len(data), func() (*bundle.Reader, error) { return bundle.Open(root) },
			func(t *testing.T) (fuzzView, error) { return dirView(root) }, pipes...)
	})
}

// redigest rewrites root's manifest.json with the digests of the files it lists as they are
// now; a listed file that is absent or not a regular file keeps its digest.
func redigest(root string) {
	mp := filepath.Join(root, bundle.ManifestFile)
	if st, err := os.Lstat(mp); err != nil || !st.Mode().IsRegular() {
		return
	}
	b, err := os.ReadFile(mp)
	if err != nil {
		return
	}
	var m bundle.Manifest
	if json.Unmarshal(b, &m) != nil {
		return
	}
	for name := range m.Files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if !filepath.IsLocal(name) {
			continue
		}
		if st, err := os.Lstat(p); err != nil || !st.Mode().IsRegular() {
			continue
		}
		if data, err := os.ReadFile(p); err == nil {
			m.Files[name] = fmt.Sprintf("sha256:%x", sha256.Sum256(data))
		}
	}
	if b, err = json.MarshalIndent(m, "", "  "); err == nil {
		os.WriteFile(mp, append(b, '\n'), 0o644)
	}
}

// unblockPipes opens each named pipe for writing and closes it, so that a reader blocked
// opening it gets an empty file.
func unblockPipes(pipes []string) {
	for _, p := range pipes {
		if f, err := os.OpenFile(p, os.O_WRONLY|nonblock, 0); err == nil {
			f.Close()
		}
	}
}

// fuzzView is a bundle as a reader other than bundle.Reader sees it: every file's name with
// its content. Directories (a zip's empty "name/" entries, a tree's directories) hold no bytes
// and are left out.
type fuzzView struct {
	files map[string][]byte
}

// heapAllocs returns the bytes allocated on the heap so far by the process.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// fuzzRun opens and verifies one input and applies every oracle.
func fuzzRun(t *testing.T, seeds []*fuzzSeed, trust *trustfile.File, size int, open func() (*bundle.Reader, error),
	view func(*testing.T) (fuzzView, error), pipes ...string) {
	o := Options{Workers: 2, Trust: trust, Now: func() time.Time { return testbundle.Base.Add(48 * time.Hour) }}
	type result struct {
		r     *bundle.Reader
		rep   *Report
		err   error // from open
		verr  error // from Verify
		alloc uint64
		took  time.Duration
	}
	done := make(chan result, 1)
	go func() {
		var res result
		start, before := time.Now(), heapAllocs()
		defer func() {
			res.alloc, res.took = heapAllocs()-before, time.Since(start)
			done <- res
		}()
		res.r, res.err = open()
		if res.err != nil {
			res.rep = RefusedReport(res.err, o)
			return
		}
		defer res.r.Close()
		ctx, cancel := context.WithTimeout(context.Background(), fuzzDeadline)
		defer cancel()
		res.rep, res.verr = Verify(ctx, res.r, o)
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(fuzzHangAfter):
		unblockPipes(pipes)
		t.Fatalf("hang: open and Verify not back after %v (context deadline %v)", fuzzHangAfter, fuzzDeadline)
	}
	if size < fuzzSmallInput && res.alloc > fuzzMaxAlloc {
		t.Fatalf("a %d-byte input allocated %d MiB (limit %d MiB)", size, res.alloc>>20, fuzzMaxAlloc>>20)
	}
	if res.err != nil {
		amb, lim, man := errors.Is(res.err, bundle.ErrAmbiguous), errors.Is(res.err, bundle.ErrLimit), errors.Is(res.err, bundle.ErrManifest)
		switch {
		case (amb || lim || man) && res.rep == nil:
			t.Fatalf("RefusedReport gives no report for %v", res.err)
		case (amb || man) && res.rep.Verdict != Broken, lim && !amb && res.rep.Verdict != NotEvaluated:
			t.Fatalf("RefusedReport gives verdict %s for %v", res.rep.Verdict, res.err)
		case !amb && !lim && !man && res.rep != nil:
			t.Fatalf("RefusedReport gives a report for an unreadable bundle: %v", res.err)
		}
		if res.rep != nil {
			checkFuzzReport(t, res.rep)
		}
		return
	}
	if res.rep != nil {
		checkFuzzReport(t, res.rep)
	}
	if res.verr != nil {
		if errors.Is(res.verr, context.DeadlineExceeded) {
			t.Logf("Verify stopped at its deadline after %v", res.took)
			return
		}
		t.Fatalf("Verify: %v", res.verr)
	}
	if res.rep.Verdict != Verified {
		return
	}
	v, err := view(t)
	if err != nil {
		err = fmt.Errorf("%w: %w", errAmbiguousView, err)
	} else {
		err = fuzzOracle(seeds, v, &res.r.Manifest)
	}
	if err != nil {
		var buf bytes.Buffer
		res.rep.WriteText(&buf)
		t.Fatalf("false verify: %v\n%s", err, buf.String())
	}
}

// checkFuzzReport checks that a report is consistent with itself and can be written.
func checkFuzzReport(t *testing.T, rep *Report) {
	t.Helper()
	if got := Fold(rep.Checks); rep.Verdict != got {
		t.Fatalf("verdict %s, but the checks fold to %s", rep.Verdict, got)
	}
	names := CheckNames()
	for _, c := range rep.Checks {
		if !slices.Contains(names, c.Name) {
			t.Fatalf("check %q is not a known check name", c.Name)
		}
		switch c.Status {
		case Verified, NotEvaluated:
		case Broken:
			if c.Code == "" {
				t.Fatalf("%s check %s has no code: %s", c.Status, c.Name, c.Detail)
			}
		default:
			t.Fatalf("check %s has status %q", c.Name, c.Status)
		}
	}
	if err := rep.WriteJSON(io.Discard); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	if err := rep.WriteText(io.Discard); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
}

// fuzzOracle says why a verified bundle (v as an independent reader sees it, m as the
// verifier read its manifest) is not one of the seeds; nil when it is one. Only what is not
// evidence (the manifest's producer and created, each entry's arrival) and empty directories
// may differ.
func fuzzOracle(seeds []*fuzzSeed, v fuzzView, m *bundle.Manifest) error {
	best, bestErr := -1, error(nil)
	for _, s := range seeds {
		err := s.same(v, m)
		if err == nil {
			return nil
		}
		// Name the seed the bundle is closest to: the most files equal.
		n := 0
		for name, data := range v.files {
			if bytes.Equal(s.files[name], data) {
				n++
			}
		}
		if n > best {
			best, bestErr = n, fmt.Errorf("closest to seed %q, but %w", s.name, err)
		}
	}
	return bestErr
}

// errAmbiguousView marks an oracle failure where readers disagree on the bundle's bytes
// (rather than agree on bytes no seed holds): what bundle.ErrAmbiguous is for.
var errAmbiguousView = errors.New("ambiguous")

// same says how a bundle differs from s.
func (s *fuzzSeed) same(v fuzzView, m *bundle.Manifest) error {
	for name, data := range v.files {
		if name == bundle.ManifestFile {
			continue
		}
		want, ok := s.files[name]
		if !ok {
			return fmt.Errorf("the bundle holds %q", name)
		}
		switch {
		case isEntriesFile(name):
			data, want = entriesEvidence(data), entriesEvidence(want)
		case strings.HasSuffix(name, ".vkey"):
			// A verifier key is one line; the space around it is not part of it.
			data, want = bytes.TrimSpace(data), bytes.TrimSpace(want)
		}
		if !bytes.Equal(data, want) {
			return fmt.Errorf("%q differs", name)
		}
	}
	for name := range s.files {
		if _, ok := v.files[name]; !ok {
			return fmt.Errorf("%q is missing", name)
		}
	}
	raw, ok := v.files[bundle.ManifestFile]
	if !ok {
		return errors.New("no manifest.json")
	}
	if err := strictJSON(raw); err != nil {
		return fmt.Errorf("%w: manifest.json: %w", errAmbiguousView, err)
	}
	var got bundle.Manifest
	if err := json.Unmarshal(raw, &got); err != nil {
		return fmt.Errorf("manifest.json: %w", err)
	}
	want := s.b.Manifest
	// The digest of an entries file or a key follows bytes that are not evidence (arrivals,
	// the space around a key), compared above without them.
	evidence := func(files map[string]string) map[string]string {
		files = maps.Clone(files)
		maps.DeleteFunc(files, func(name, _ string) bool { return isEntriesFile(name) || strings.HasSuffix(name, ".vkey") })
		return files
	}
	for _, g := range []*bundle.Manifest{&got, m} {
		if g.Format != want.Format || !reflect.DeepEqual(g.Scope, want.Scope) || g.Log != want.Log ||
			!reflect.DeepEqual(g.Chains, want.Chains) || !reflect.DeepEqual(evidence(g.Files), evidence(want.Files)) ||
			!slices.Equal(slices.Sorted(maps.Keys(g.Files)), slices.Sorted(maps.Keys(want.Files))) {
			return fmt.Errorf("manifest differs: %+v", *g)
		}
	}
	return nil
}

// fuzzArrival matches an entry line's arrival member, which the oracle ignores.
var fuzzArrival = regexp.MustCompile(`"arrival":"(?:[^"\\]|\\.)*"`)

// entriesEvidence returns what of an entries file is evidence: each line in canonical JSON
// (the form its record is hashed and signed in; whitespace and escapes are the writer's
// choice, and earlier exporters chose differently) with its arrival emptied (not evidence,
// docs/bundle.md "What is evidence"). A line that does not parse is kept as it is.
func entriesEvidence(b []byte) []byte {
	lines := bytes.Split(b, []byte("\n"))
	for i, l := range lines {
		if c, err := canonical.Canonicalize(l, canonical.Options{}); err == nil {
			lines[i] = fuzzArrival.ReplaceAll(c, []byte(`"arrival":""`))
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

// isEntriesFile reports whether a bundle file holds entry lines (entries.jsonl, slice.jsonl).
func isEntriesFile(name string) bool {
	return strings.HasPrefix(name, "chains/") && (strings.HasSuffix(name, "/entries.jsonl") || strings.HasSuffix(name, "/slice.jsonl"))
}

// strictJSON refuses JSON that readers may read differently: invalid UTF-8, an escaped lone
// surrogate, two keys of one object equal up to case (encoding/json merges them), a number
// beyond ±(2^53-1) or with a fraction or exponent.
func strictJSON(b []byte) error {
	if !utf8.Valid(b) {
		return errors.New("invalid UTF-8")
	}
	if err := surrogates(b); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	type frame struct {
		obj  bool
		keys map[string]bool
		key  bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if s, ok := tok.(string); ok && top != nil && top.obj && top.key {
			k := strings.ToLower(s)
			if top.keys[k] {
				return fmt.Errorf("key %q twice (up to case)", s)
			}
			top.keys[k] = true
			top.key = false
			continue
		}
		if top != nil && top.obj {
			top.key = true
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, &frame{obj: true, keys: map[string]bool{}, key: true})
			case '[':
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].obj {
					stack[len(stack)-1].key = true
				}
			}
		case json.Number:
			n, err := t.Int64()
			if err != nil || n > 1<<53-1 || n < -(1<<53-1) {
				return fmt.Errorf("number %s", t)
			}
		}
	}
}

// surrogates refuses an escaped surrogate in a JSON text that is not half of a pair.
func surrogates(b []byte) error {
	hex := func(i int) (rune, bool) {
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return 0, false
		}
		var r rune
		for _, c := range b[i+2 : i+6] {
			switch {
			case '0' <= c && c <= '9':
				r = r<<4 | rune(c-'0')
			case 'a' <= c && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			case 'A' <= c && c <= 'F':
				r = r<<4 | rune(c-'A'+10)
			default:
				return 0, false
			}
		}
		return r, true
	}
	in := false
	for i := 0; i < len(b); i++ {
		switch {
		case !in:
			in = b[i] == '"'
		case b[i] == '"':
			in = false
		case b[i] == '\\':
			r, ok := hex(i)
			if !ok {
				i++ // a one-character escape
				continue
			}
			switch {
			case 0xD800 <= r && r < 0xDC00:
				if lo, ok := hex(i + 6); !ok || lo < 0xDC00 || lo > 0xDFFF {
					return fmt.Errorf("lone surrogate \\u%04x", r)
				}
				i += 11
			case 0xDC00 <= r && r <= 0xDFFF:
				return fmt.Errorf("lone surrogate \\u%04x", r)
			default:
				i += 5
			}
		}
	}
	return nil
}

// zipView reads a zip the way two other readers would and refuses it unless they agree: the
// central directory (archive/zip, each entry's content checked against its CRC) and a
// streaming reader that walks the local headers from the start of the file to the central
// directory. Names must be unique; directory entries ("name/") must be empty.
func zipView(data []byte) (fuzzView, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return fuzzView{}, fmt.Errorf("archive/zip cannot read a zip the verifier read: %w", err)
	}
	v := fuzzView{files: map[string][]byte{}}
	type entry struct {
		name string
		data []byte
	}
	var central []entry
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			return v, fmt.Errorf("entry %q: %w", f.Name, err)
		}
		b, err := io.ReadAll(io.LimitReader(rc, fuzzSmallInput))
		rc.Close()
		if err != nil {
			return v, fmt.Errorf("entry %q: %w", f.Name, err)
		}
		central = append(central, entry{f.Name, b})
		if n := strings.TrimSuffix(f.Name, "/"); !fs.ValidPath(n) || n == "." || strings.Contains(n, `\`) {
			return v, fmt.Errorf("entry %q is not a clean relative path (archive/zip's fs.FS cleans it, an unzip tool may not)", f.Name)
		}
		if strings.HasSuffix(f.Name, "/") {
			if len(b) > 0 {
				return v, fmt.Errorf("directory entry %q holds %d bytes", f.Name, len(b))
			}
			continue
		}
		if _, dup := v.files[f.Name]; dup {
			return v, fmt.Errorf("entry %q twice", f.Name)
		}
		v.files[f.Name] = b
	}
	// The streaming reader.
	var local []entry
	off := 0
	for off+4 <= len(data) && binary.LittleEndian.Uint32(data[off:]) == 0x04034b50 {
		if off+30 > len(data) {
			return v, fmt.Errorf("local header at %d cut short", off)
		}
		h := data[off:]
		flags, method := binary.LittleEndian.Uint16(h[6:]), binary.LittleEndian.Uint16(h[8:])
		csize := int(binary.LittleEndian.Uint32(h[18:]))
		nlen, xlen := int(binary.LittleEndian.Uint16(h[26:])), int(binary.LittleEndian.Uint16(h[28:]))
		start := off + 30 + nlen + xlen
		if start > len(data) {
			return v, fmt.Errorf("local header at %d cut short", off)
		}
		name := string(h[30 : 30+nlen])
		var content []byte
		switch {
		case method == zip.Store && flags&8 == 0:
			if start+csize > len(data) {
				return v, fmt.Errorf("local entry %q runs past the end", name)
			}
			content, off = data[start:start+csize], start+csize
		case method == zip.Deflate:
			br := bytes.NewReader(data[start:])
			b, err := io.ReadAll(io.LimitReader(flate.NewReader(br), fuzzSmallInput))
			if err != nil {
				return v, fmt.Errorf("local entry %q: %w", name, err)
			}
			content, off = b, start+int(br.Size())-br.Len()
			if flags&8 == 0 && off-start != csize {
				return v, fmt.Errorf("local entry %q: compressed size %d, header says %d", name, off-start, csize)
			}
		default:
			return v, fmt.Errorf("local entry %q: method %d with flags %#x cannot be streamed", name, method, flags)
		}
		if flags&8 != 0 { // data descriptor: optional signature, CRC, sizes (4+4 or 8+8)
			if off+4 <= len(data) && binary.LittleEndian.Uint32(data[off:]) == 0x08074b50 {
				off += 4
			}
			next := func(at int) bool {
				return at+4 <= len(data) && (binary.LittleEndian.Uint32(data[at:]) == 0x04034b50 || binary.LittleEndian.Uint32(data[at:]) == 0x02014b50)
			}
			switch {
			case next(off + 12):
				off += 12
			case next(off + 20):
				off += 20
			default:
				return v, fmt.Errorf("local entry %q: data descriptor not followed by a header", name)
			}
		}
		local = append(local, entry{name, content})
	}
	if len(local) != len(central) {
		return v, fmt.Errorf("the local headers hold %d entries, the central directory %d", len(local), len(central))
	}
	for i := range local {
		if local[i].name != central[i].name || !bytes.Equal(local[i].data, central[i].data) {
			return v, fmt.Errorf("local entry %d is %q (%d bytes), the central directory's %q (%d bytes)",
				i, local[i].name, len(local[i].data), central[i].name, len(central[i].data))
		}
	}
	if cd := centralOffset(data); cd != off {
		return v, fmt.Errorf("the local entries end at %d, the central directory starts at %d", off, cd)
	}
	return v, nil
}

// centralOffset returns where the central directory starts according to the end of central
// directory record (no zip64), or -1.
func centralOffset(data []byte) int {
	i := bytes.LastIndex(data, []byte("PK\x05\x06"))
	if i < 0 || i+22 > len(data) {
		return -1
	}
	return int(binary.LittleEndian.Uint32(data[i+16:]))
}

// dirView reads a directory bundle as a reader walking the tree does; anything but regular
// files and directories makes it ambiguous (a symlink shows another file's bytes under its
// name, a pipe no bytes at all).
func dirView(root string) (fuzzView, error) {
	v := fuzzView{files: map[string][]byte{}}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v.files[rel] = b
		default:
			return fmt.Errorf("%q is a %v, not a regular file", rel, d.Type())
		}
		return nil
	})
	return v, err
}
