// Package testbundle builds realistic Evident bundles for the verifier's tests: a CHAP 0.3
// chain of Ed25519-signed envelopes (self-signed joins, a key rotation, optional unsigned
// records), links and tree computed by the ledger, seals signed as COSE statements and
// registered in an in-memory RFC 6962 log with C2SP checkpoints and RFC 9942 receipts, all
// written with bundle.Writer. Nothing here is a fake: every signature and proof is real.
package testbundle

import (
	"archive/zip"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/trustfile"
)

// Options shape a bundle. The zero value gives a small, fully signed and sealed chain.
type Options struct {
	ChainID      string // default "ws-1"
	Entries      int    // chain size; default 24
	Participants int    // signing participants (each joins with a self-signed Ed25519 JWK); default 3
	Unsigned     int    // records from a sender without a key, so unsigned (interleaved after the joins)
	Rotate       bool   // participant 1 rotates its key half way through
	// SealAt lists the chain sizes at which a seal is made; nil means one seal at the end.
	// Use []int{} for no seal at all.
	SealAt []int
	// ReceiptsAtEnd cuts every seal's receipt from the final log tree (one checkpoint for all),
	// the way an exporter refreshes receipts; otherwise each receipt comes from the checkpoint
	// right after the seal's registration (one checkpoint size per seal).
	ReceiptsAtEnd   bool
	Filler          int  // other entries registered in the log before each seal; default 3
	NoCheckpoint    bool // receipts carry no checkpoint note
	CheckpointFiles bool // also write log/checkpoints/<size>.checkpoint
	PayloadSize     int  // bytes of text in each message; default 64
	// UnchainedPrefix submits the first records as Coordinator audit entries without prev_hash
	// (a Coordinator that switched its evidence chain on only then); the records after it name
	// their predecessor in the Coordinator's own chain, which starts again from the zero hash.
	// Bare records name none (Bare).
	UnchainedPrefix int
	// Bare leaves evidence.prev_hash out of every record: envelopes as a Coordinator sends
	// them, linked by Evident alone.
	Bare bool
	// CreateKid, when set, puts before the joins a workspace.create by participant 0 signed
	// with its key under this kid (the reference Coordinator's bootstrap): "k0-1", the kid its
	// join introduces, lets the join verify it; another kid leaves it unverified. SealAt
	// positions then count this record too.
	CreateKid string
	// Service names the service that signs the bundle: its log key and issuer key are
	// derived from it. "" is the service Trust describes; any other name is a forger that
	// re-signs everything under keys of its own (TrustOf describes it).
	Service string
	// TSBack stamps the records at these seqs 5 s earlier than their position's time (a
	// sender whose clock stepped back; seqs must be ≥ Participants+3 to stay in key windows).
	TSBack []int
}

// Bundle is a built bundle: its manifest (with the digests of Files) and its files.
type Bundle struct {
	Manifest bundle.Manifest
	Files    map[string][]byte // every file but manifest.json
	Origin   string
	Dir      string // the chain's directory name
	// The service's keys, for tests that need the service itself to misbehave.
	Issuer     *receipts.Signer
	NoteSigner note.Signer
	// LogTree is the in-memory log the seals are registered in (for consistency proofs).
	LogTree *testonly.Tree
}

// EntriesFile is the path of the chain's entries.
func (b *Bundle) EntriesFile() string { return bundle.EntriesFile(b.Dir) }

// SealFile is the path of seal n.
func (b *Bundle) SealFile(n uint64) string { return bundle.SealFile(b.Dir, n) }

// Lines returns the entries.jsonl lines (without newlines).
func (b *Bundle) Lines() [][]byte {
	data := bytes.TrimSuffix(b.Files[b.EntriesFile()], []byte("\n"))
	if len(data) == 0 {
		return nil
	}
	return bytes.Split(data, []byte("\n"))
}

// SetLines replaces entries.jsonl.
func (b *Bundle) SetLines(lines [][]byte) {
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	b.Files[b.EntriesFile()] = buf.Bytes()
}

// Clone returns a deep copy to tamper with.
func (b *Bundle) Clone() *Bundle {
	c := *b
	c.Files = map[string][]byte{}
	for k, v := range b.Files {
		c.Files[k] = bytes.Clone(v)
	}
	c.Manifest.Files = maps.Clone(b.Manifest.Files)
	c.Manifest.Chains = slices.Clone(b.Manifest.Chains)
	return &c
}

// Zip writes the bundle with bundle.Writer: the manifest gets fresh digests of the files as they are now.
func (b *Bundle) Zip(tb testing.TB) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w := bundle.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(b.Files)) {
		if err := w.WriteFile(name, b.Files[name]); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(b.Manifest); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// Reader opens the bundle from Zip (fresh digests).
func (b *Bundle) Reader(tb testing.TB) *bundle.Reader {
	tb.Helper()
	r, err := bundle.OpenZipBytes(b.Zip(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// StaleReader writes the files as they are now into a directory under dir with the manifest m
// as it is (its digests untouched) and opens it: a bundle altered after export.
func (b *Bundle) StaleReader(tb testing.TB, dir string, m bundle.Manifest) *bundle.Reader {
	tb.Helper()
	b.WriteDir(tb, dir, m)
	r, err := bundle.Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// WriteDir writes the files as they are now into dir, with the manifest m as it is.
func (b *Bundle) WriteDir(tb testing.TB, dir string, m bundle.Manifest) {
	tb.Helper()
	for name, data := range b.Files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, bundle.ManifestFile), mb, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// StaleZipReader is StaleReader with the bundle as an in-memory zip (written with archive/zip
// directly, since bundle.Writer always computes fresh digests).
func (b *Bundle) StaleZipReader(tb testing.TB, m bundle.Manifest) *bundle.Reader {
	tb.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(b.Files)) {
		w, err := zw.Create(name)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := w.Write(b.Files[name]); err != nil {
			tb.Fatal(err)
		}
	}
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	w, err := zw.Create(bundle.ManifestFile)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := w.Write(mb); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	r, err := bundle.OpenZipBytes(buf.Bytes())
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

type participant struct {
	uri  string
	kid  string
	priv ed25519.PrivateKey
}

func key(name string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("testbundle key " + name))
	return ed25519.NewKeyFromSeed(seed[:])
}

// Origin is the log origin of every bundle Build makes.
const Origin = "evident.test/log"

// logKey derives the log's checkpoint key from a fixed seed, so that every bundle Build makes
// is signed by one log, whose trust file Trust returns.
func logKey(origin, service string) (skey, vkey string, err error) {
	seed := sha256.Sum256([]byte("testbundle key log " + origin + service))
	return note.GenerateKey(bytes.NewReader(seed[:]), origin)
}

// Trust returns the trust file of the service Build signs as: the log key and the issuer key
// derived from the seeds Build uses, what that service's operator would publish. It is made
// from the keys, never read out of a bundle.
func Trust(tb testing.TB) *trustfile.File {
	tb.Helper()
	return TrustOf(tb, "")
}

// TrustOf is Trust for the service of Options.Service.
func TrustOf(tb testing.TB, service string) *trustfile.File {
	tb.Helper()
	_, vkey, err := logKey(Origin, service)
	if err != nil {
		tb.Fatal(err)
	}
	ik, err := trustfile.IssuerKeyOf(key("issuer"+service).Public(), "", "")
	if err != nil {
		tb.Fatal(err)
	}
	f := &trustfile.File{Format: trustfile.Format, Origin: Origin, LogKeys: []string{vkey}, IssuerKeys: []trustfile.IssuerKey{ik}}
	if err := f.Check(); err != nil {
		tb.Fatal(err)
	}
	return f
}

// Base is the time of the chain's first record.
var Base = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Digests sets the manifest's file digests to those of Files as they are now.
func (b *Bundle) Digests() {
	b.Manifest.Format = bundle.Format
	b.Manifest.Files = map[string]string{}
	for name, data := range b.Files {
		h := sha256.Sum256(data)
		b.Manifest.Files[name] = "sha256:" + hex.EncodeToString(h[:])
	}
}
