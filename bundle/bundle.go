// Package bundle reads and writes Evident offline bundles, format "evident-bundle/v1":
// everything a verifier needs to check one chain (or one case) with no network.
//
// Layout (a directory, or the same tree in a .zip):
//
//	manifest.json                      format, producer, created, scope, chains, file digests
//	trust/log.vkey                     the log's checkpoint key (C2SP signed-note vkey)
//	trust/issuers.cbor                 COSE_KeySet of the service's statement and receipt keys
//	trust/witness.policy               the witness policy (tlog-policy without URLs), if the log has witnesses
//	chains/<dir>/entries.jsonl         one JSON object per line: seq, prev, link, arrival, record
//	chains/<dir>/seals/<n>.cose        transparent seal statements (RFC 9942 receipt in header 394)
//	log/checkpoints/<size>.checkpoint  signed checkpoints the bundle holds
//
// <dir> is the chain id with every byte outside [A-Za-z0-9_.-] written %XX. The manifest
// lists the SHA-256 of every other file, so a reader notices a swapped or missing file.
// docs/bundle.md is the normative description.
package bundle

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/strictjson"
)

// Format is the manifest format string of this version.
const Format = "evident-bundle/v1"

// File names inside a bundle.
const (
	ManifestFile = "manifest.json"
	LogKeyFile   = "trust/log.vkey"
	IssuersFile  = "trust/issuers.cbor"
	// WitnessPolicyFile is the log's witness policy (tlog-policy, vkeys and no URLs); a
	// bundle of a log without witnesses has none.
	WitnessPolicyFile = "trust/witness.policy"
)

// ErrFormat reports a file that is not a bundle at all: not a zip or directory, or no
// manifest.json in it.
var ErrFormat = errors.New("not an evident-bundle/v1")

// ErrManifest reports a bundle whose manifest.json cannot be read as a manifest of this
// format: the bundle is broken (*ManifestError says why).
var ErrManifest = errors.New("manifest.json is not an evident-bundle/v1 manifest")

// ErrNewerFormat reports a bundle made by a newer Evident: its manifest names a later
// version of the format than this reader knows (*NewerFormatError names it).
var ErrNewerFormat = errors.New("made by a newer Evident")

// ManifestError is a manifest.json that does not parse as this format's manifest, or that
// names its chain directories wrongly. It matches ErrManifest.
type ManifestError struct {
	Reason string
}

func (e *ManifestError) Error() string { return ErrManifest.Error() + ": " + e.Reason }

// Is reports whether target is ErrManifest.
func (e *ManifestError) Is(target error) bool { return target == ErrManifest }

// NewerFormatError is a manifest that names a later version of the format, e.g.
// "evident-bundle/v2": nothing else in the bundle is read. It matches ErrNewerFormat.
type NewerFormatError struct {
	Format string
}

func (e *NewerFormatError) Error() string {
	return fmt.Sprintf("made by a newer Evident (format %.60q; this verifier reads %s): upgrade", e.Format, Format)
}

// Is reports whether target is ErrNewerFormat.
func (e *NewerFormatError) Is(target error) bool { return target == ErrNewerFormat }

// newerFormat returns the format a manifest names when it is a later version than Format:
// "evident-bundle/v" and a decimal above 1, with no leading zero. The manifest is read
// leniently, for that one member, so that a later version's other members (which this
// reader would refuse as unknown) do not hide what it is.
func newerFormat(b []byte) (string, bool) {
	var head struct {
		Format string `json:"format"`
	}
	if json.Unmarshal(b, &head) != nil {
		return "", false
	}
	v, ok := strings.CutPrefix(head.Format, formatPrefix)
	if !ok || v == "1" || len(v) > 9 || len(v) == 0 || v[0] < '1' || v[0] > '9' {
		return "", false
	}
	for _, c := range v[1:] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return head.Format, true
}

// formatPrefix starts every version of the format's name; the version follows.
const formatPrefix = "evident-bundle/v"

// Manifest describes a bundle.
type Manifest struct {
	Format   string            `json:"format"`
	Producer string            `json:"producer"`
	Created  string            `json:"created"`
	Scope    Scope             `json:"scope"`
	Log      LogInfo           `json:"log"`
	Chains   []ChainRef        `json:"chains"`
	Files    map[string]string `json:"files"` // path → "sha256:<hex>"
}

// Scope says what the bundle was cut for.
type Scope struct {
	Chain string `json:"chain,omitempty"`
	// Chains names the chains of a bundle cut for several at once (GET /v1/export with
	// repeated chain=); Chain is then empty.
	Chains []string `json:"chains,omitempty"`
	Task   string   `json:"task,omitempty"`
	// LogicalID is the logical artefact a case slice was cut for (slice.go).
	LogicalID string `json:"logical_id,omitempty"`
}

// LogInfo names the transparency log the seals are registered in.
type LogInfo struct {
	Origin string `json:"origin"`
}

// ChainRef is a chain held by the bundle, with its state at export as the producer saw it
// (the verifier recomputes all of it and reports any difference).
type ChainRef struct {
	ID      string      `json:"id"`
	Dir     string      `json:"dir"`
	Profile string      `json:"profile"`
	Size    uint64      `json:"size"`
	Head    ledger.Link `json:"head"`
	Root    string      `json:"root"`
	// EvidenceHead is the head the Coordinator itself reported for the chain (CHAP
	// evidence_head, e.g. from workspace.describe), when the exporter was given one. The
	// verifier compares it with the replayed head.
	EvidenceHead *ledger.Link `json:"evidence_head,omitempty"`
	// AuditCount is the Coordinator's audit_count reported with EvidenceHead: the head is
	// then the one after entry AuditCount-1. Absent when the Coordinator gave none.
	AuditCount *uint64 `json:"audit_count,omitempty"`
	// Slice, when set, says the bundle holds a case slice of the chain (slice.go): Size,
	// Head and Root are then the sealed state the slice's chain receipts prove against.
	Slice *SliceRef `json:"slice,omitempty"`
}

// EntryLine is one line of entries.jsonl.
type EntryLine struct {
	Seq     uint64          `json:"seq"`
	Prev    ledger.Link     `json:"prev"`
	Link    ledger.Link     `json:"link"`
	Arrival string          `json:"arrival"`
	Record  json.RawMessage `json:"record"`
	// Meta is what the submitter sent beside the record, unhashed (a CHAP Coordinator's
	// audit-entry seq, arrived and prev_hash); absent when nothing was.
	Meta json.RawMessage `json:"meta,omitempty"`
}

// ChainDir returns the directory name of a chain id.
func ChainDir(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || (c == '.' && i > 0) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// EntriesFile returns the path of a chain's entries.
func EntriesFile(dir string) string { return "chains/" + dir + "/entries.jsonl" }

// SealFile returns the path of a chain's n-th seal.
func SealFile(dir string, n uint64) string { return fmt.Sprintf("chains/%s/seals/%06d.cose", dir, n) }

// CheckpointsDir holds the log's checkpoints, one file per tree size (CheckpointFile).
const CheckpointsDir = "log/checkpoints/"

// CheckpointFile returns the path of a checkpoint of the given size.
func CheckpointFile(size uint64) string { return fmt.Sprintf(CheckpointsDir+"%012d.checkpoint", size) }

// Writer writes a bundle as a zip stream. Every zip entry carries the same modification
// time: when the writer was made, or the time SetModified gives. Readers and the verifier
// ignore zip times; only the manifest's digests bind the files.
type Writer struct {
	z        *zip.Writer
	files    map[string]string
	cur      *digestWriter
	modified time.Time
	folded   map[string]string // case-folded names written, so no two collide
	flate    *flate.Writer     // reused for every file: zip closes one before the next begins
}

// deflateLevel is the compression of every file. Level 3 compresses chains' entries about
// 1.5 times as fast as the default level 6 for a file 2 % larger (17.7 % of the JSON against
// 17.4 %); inflating either costs the same.
const deflateLevel = 3

type digestWriter struct {
	name string
	w    io.Writer
	h    hashWriter
}

type hashWriter interface {
	io.Writer
	Sum([]byte) []byte
}

func (d *digestWriter) Write(p []byte) (int, error) {
	d.h.Write(p)
	return d.w.Write(p)
}

// NewWriter starts a zip bundle on w whose entries are dated now (UTC).
func NewWriter(w io.Writer) *Writer {
	bw := &Writer{z: zip.NewWriter(w), files: map[string]string{}}
	bw.z.RegisterCompressor(zip.Deflate, bw.compressor)
	bw.SetModified(time.Now())
	return bw
}

// compressor deflates one file at deflateLevel, reusing the Writer's flate state.
func (w *Writer) compressor(out io.Writer) (io.WriteCloser, error) {
	if w.flate == nil {
		fw, err := flate.NewWriter(out, deflateLevel)
		if err != nil {
			return nil, err
		}
		w.flate = fw
		return fw, nil
	}
	w.flate.Reset(out)
	return w.flate, nil
}

// SetModified dates the entries created from now on with t, in UTC to the second (zip
// keeps seconds): an exporter passes its export time, a test a fixed time for stable bytes.
func (w *Writer) SetModified(t time.Time) {
	w.modified = t.UTC().Truncate(time.Second)
}

// header is the zip header of a new entry: deflated, dated w.modified.
func (w *Writer) header(name string) *zip.FileHeader {
	return &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: w.modified}
}

func (w *Writer) finish() {
	if w.cur != nil {
		w.files[w.cur.name] = "sha256:" + hex.EncodeToString(w.cur.h.Sum(nil))
		w.cur = nil
	}
}

// Create starts a file; write to the returned writer until the next Create or Close.
func (w *Writer) Create(name string) (io.Writer, error) {
	w.finish()
	if p := nameProblem(name, false); p != "" {
		return nil, fmt.Errorf("%w: file name %q: %s", ErrFormat, name, p)
	}
	if _, dup := w.files[name]; dup || name == ManifestFile {
		return nil, fmt.Errorf("bundle: duplicate file %q", name)
	}
	if w.folded == nil {
		w.folded = map[string]string{foldKey(ManifestFile): ManifestFile}
	}
	if other, ok := w.folded[foldKey(name)]; ok {
		return nil, fmt.Errorf("%w: %q and %q differ only in case, so they would be one file on a case-insensitive file system", ErrFormat, name, other)
	}
	w.folded[foldKey(name)] = name
	fw, err := w.z.CreateHeader(w.header(name))
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	w.cur = &digestWriter{name: name, w: fw, h: sha256.New()}
	return w.cur, nil
}

// WriteFile writes a whole file.
func (w *Writer) WriteFile(name string, data []byte) error {
	fw, err := w.Create(name)
	if err != nil {
		return err
	}
	_, err = fw.Write(data)
	return err
}

// Close writes the manifest (with the digests of every file) and ends the zip.
func (w *Writer) Close(m Manifest) error {
	w.finish()
	m.Format = Format
	m.Files = w.files
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("bundle manifest: %w", err)
	}
	fw, err := w.z.CreateHeader(w.header(ManifestFile))
	if err != nil {
		return fmt.Errorf("bundle manifest: %w", err)
	}
	if _, err := fw.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("bundle manifest: %w", err)
	}
	return w.z.Close()
}

// Reader reads a bundle from a directory or a zip file.
type Reader struct {
	fsys     fs.FS
	closer   io.Closer
	Manifest Manifest
}

// MaxManifestSize bounds the manifest a reader accepts.
const MaxManifestSize = 16 << 20

// Open opens a bundle directory or .zip file with DefaultLimits and reads its manifest. An
// ambiguous bundle is refused with an *AmbiguityError (ErrAmbiguous), one beyond a limit with
// a *LimitError (ErrLimit), one whose manifest.json is not this format's manifest with a
// *ManifestError (ErrManifest), one of a later format version with a *NewerFormatError
// (ErrNewerFormat), and anything that is not a bundle at all (no zip, no manifest.json)
// with ErrFormat.
func Open(p string) (*Reader, error) { return OpenWithLimits(p, DefaultLimits()) }

// OpenWithLimits is Open with other limits.
func OpenWithLimits(p string, l Limits) (*Reader, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("open bundle: %w", err)
	}
	if st.IsDir() {
		r := &Reader{fsys: os.DirFS(p)}
		entries, amb, err := scanDir(r.fsys, l)
		if err != nil {
			return nil, fmt.Errorf("open bundle %s: %w", filepath.Base(p), err)
		}
		if err := r.settle(entries, amb, l); err != nil {
			return nil, err
		}
		return r, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("open bundle: %w", err)
	}
	r, err := openZip(f, st.Size(), l)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open bundle %s: %w", filepath.Base(p), err)
	}
	r.closer = f
	return r, nil
}

// OpenZipBytes opens an in-memory zip bundle with DefaultLimits.
func OpenZipBytes(b []byte) (*Reader, error) { return OpenZipBytesWithLimits(b, DefaultLimits()) }

// OpenZipBytesWithLimits is OpenZipBytes with other limits.
func OpenZipBytesWithLimits(b []byte, l Limits) (*Reader, error) {
	return openZip(bytes.NewReader(b), int64(len(b)), l)
}

func openZip(ra io.ReaderAt, size int64, l Limits) (*Reader, error) {
	zr, err := zip.NewReader(ra, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, fmt.Errorf("%w (%w)", ErrFormat, err)
	}
	// The scan reads every local header: through a window of the file, its many small
	// reads are a few large ones. It gets its own zip.Reader, since the window is not safe
	// for the concurrent reads the verifier makes later.
	win := &readWindow{ra: ra, size: size}
	wzr, err := zip.NewReader(win, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, fmt.Errorf("%w (%w)", ErrFormat, err)
	}
	entries, amb, err := scanZip(win, size, wzr, l)
	if err != nil {
		return nil, err
	}
	r := &Reader{fsys: zr}
	if err := r.settle(entries, amb, l); err != nil {
		return nil, err
	}
	return r, nil
}

// settle reads the manifest unless the scan found the manifest itself (or the archive's
// layout) ambiguous, then refuses unlisted entries; it returns every ambiguity found.
func (r *Reader) settle(entries []entry, amb []Ambiguity, l Limits) error {
	for _, a := range amb {
		if a.Name == ManifestFile || a.Name == "(zip)" {
			return &AmbiguityError{Entries: amb}
		}
	}
	if err := r.readManifest(l); err != nil {
		return err
	}
	more, err := r.checkListed(entries, l)
	if err != nil {
		return err
	}
	if amb = append(amb, more...); len(amb) > 0 {
		return &AmbiguityError{Entries: amb}
	}
	return nil
}

func (r *Reader) readManifest(l Limits) error {
	f, err := r.fsys.Open(ManifestFile)
	if err != nil {
		return fmt.Errorf("%w: no manifest.json", ErrFormat)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, l.ManifestSize+1))
	if err != nil {
		if damaged(err) {
			return &ManifestError{Reason: "its bytes are damaged: " + err.Error()}
		}
		return fmt.Errorf("read manifest: %w", err)
	}
	if int64(len(b)) > l.ManifestSize {
		return &LimitError{Limit: "manifest_size", Name: ManifestFile, Value: int64(len(b)), Max: l.ManifestSize}
	}
	err = strictjson.Decode(b, &r.Manifest, l.ManifestDepth, int(l.ManifestSize))
	switch {
	case errors.Is(err, strictjson.ErrAmbiguous):
		return &AmbiguityError{Entries: []Ambiguity{{Name: ManifestFile, Reason: err.Error()}}}
	case errors.Is(err, strictjson.ErrTooDeep):
		return &LimitError{Limit: "manifest_depth", Name: ManifestFile, Value: int64(l.ManifestDepth) + 1, Max: int64(l.ManifestDepth)}
	}
	// A later version is named before anything else is said: its new members are not this
	// version's errors.
	if f, ok := newerFormat(b); ok {
		r.Manifest = Manifest{}
		return &NewerFormatError{Format: f}
	}
	if err != nil {
		return &ManifestError{Reason: err.Error()}
	}
	if r.Manifest.Format != Format {
		return &ManifestError{Reason: fmt.Sprintf("it names format %.60q", r.Manifest.Format)}
	}
	for _, c := range r.Manifest.Chains {
		if c.Dir != ChainDir(c.ID) {
			return &ManifestError{Reason: fmt.Sprintf("chain %.80q has dir %.80q, want %.80q", c.ID, c.Dir, ChainDir(c.ID))}
		}
	}
	for name := range r.Manifest.Files {
		if p := nameProblem(name, false); p != "" {
			return &AmbiguityError{Entries: []Ambiguity{{Name: name, Reason: "the manifest lists a name no bundle can hold: " + p}}}
		}
	}
	return nil
}

// damaged reports whether a read error says the bytes read are wrong (a zip entry's
// checksum, its compressed stream or its length) rather than that reading failed.
func damaged(err error) bool {
	var ce flate.CorruptInputError
	return errors.Is(err, zip.ErrChecksum) || errors.Is(err, zip.ErrFormat) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ce)
}

// Close releases the bundle.
func (r *Reader) Close() error {
	if r.closer != nil {
		return r.closer.Close()
	}
	return nil
}

// ErrDigest reports a file whose content differs from the manifest's digest.
var ErrDigest = errors.New("file digest differs from manifest")

// OpenFile opens a file listed in the manifest; the returned reader checks its digest at EOF
// and then fails with ErrDigest if the content was altered.
func (r *Reader) OpenFile(name string) (io.ReadCloser, error) {
	want, ok := r.Manifest.Files[name]
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	f, err := r.fsys.Open(name)
	if err != nil {
		return nil, fmt.Errorf("bundle file %s: %w", name, err)
	}
	return &checkedReader{name: name, f: f, h: sha256.New(), want: want}, nil
}

// ReadFile reads a whole listed file (bounded by max bytes) and checks its digest.
func (r *Reader) ReadFile(name string, max int64) ([]byte, error) {
	f, err := r.OpenFile(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("bundle file %s: over %d bytes", name, max)
	}
	return b, nil
}

// List returns the listed files under prefix, sorted.
func (r *Reader) List(prefix string) []string {
	var out []string
	for name := range r.Manifest.Files {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

type checkedReader struct {
	name string
	f    fs.File
	h    hashWriter
	want string
	done bool
}

func (c *checkedReader) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	c.h.Write(p[:n])
	if err == io.EOF && !c.done {
		c.done = true
		if got := "sha256:" + hex.EncodeToString(c.h.Sum(nil)); got != c.want {
			return n, fmt.Errorf("%s: %w", c.name, ErrDigest)
		}
	}
	return n, err
}

func (c *checkedReader) Close() error { return c.f.Close() }
