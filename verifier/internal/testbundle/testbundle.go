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
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	tlog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
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

// Build makes a bundle. It fails tb on any error: the builder uses the real service code paths.
func Build(tb testing.TB, o Options) *Bundle {
	tb.Helper()
	if o.ChainID == "" {
		o.ChainID = "ws-1"
	}
	if o.Participants == 0 {
		o.Participants = 3
	}
	if o.Entries == 0 {
		o.Entries = 24
	}
	if o.Entries < o.Participants+o.Unsigned {
		tb.Fatalf("testbundle: %d entries cannot hold %d joins and %d unsigned records", o.Entries, o.Participants, o.Unsigned)
	}
	if o.SealAt == nil {
		o.SealAt = []int{o.Entries}
	}
	if o.CreateKid != "" {
		shifted := make([]int, len(o.SealAt))
		for k, at := range o.SealAt {
			shifted[k] = at + 1
		}
		o.SealAt = shifted
	}
	if o.Filler == 0 {
		o.Filler = 3
	}
	if o.PayloadSize == 0 {
		o.PayloadSize = 64
	}
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}

	b := &Bundle{Files: map[string][]byte{}, Origin: Origin, Dir: bundle.ChainDir(o.ChainID)}
	chain, err := ledger.NewChain(o.ChainID, chap.Adapter{})
	must(err)

	ps := make([]*participant, o.Participants)
	for i := range ps {
		ps[i] = &participant{uri: fmt.Sprintf("urn:chap:agent:%d", i), kid: fmt.Sprintf("k%d-1", i), priv: key(fmt.Sprintf("p%d", i))}
	}
	unsignedAt := map[int]bool{}
	if o.Unsigned > 0 {
		span := o.Entries - o.Participants
		for k := range o.Unsigned {
			unsignedAt[o.Participants+k*span/o.Unsigned] = true
		}
	}
	rotateAt := -1
	if o.Rotate && o.Participants > 1 {
		rotateAt = o.Participants + (o.Entries-o.Participants)/2
		for unsignedAt[rotateAt] {
			rotateAt++
		}
	}
	sealAt := map[int]bool{}
	for _, s := range o.SealAt {
		sealAt[s] = true
	}

	issuerPriv := key("issuer" + o.Service)
	issuer, err := receipts.NewSigner(issuerPriv)
	must(err)
	otherIssuer, err := receipts.NewSigner(key("other issuer"))
	must(err)
	skey, vkey, err := logKey(b.Origin, o.Service)
	must(err)
	noteSigner, err := note.NewSigner(skey)
	must(err)
	tree := testonly.New(rfc6962.DefaultHasher)
	filler := 0
	addFiller := func() {
		for range o.Filler {
			h := sha256.Sum256([]byte(fmt.Sprintf("other statement %d", filler)))
			filler++
			tree.AppendData(h[:])
		}
	}
	checkpoints := map[uint64][]byte{}
	checkpoint := func() (uint64, []byte) {
		size := tree.Size()
		if cp, ok := checkpoints[size]; ok {
			return size, cp
		}
		body := tlog.Checkpoint{Origin: b.Origin, Size: size, Hash: tree.Hash()}.Marshal()
		cp, err := note.Sign(&note.Note{Text: string(body)}, noteSigner)
		must(err)
		checkpoints[size] = cp
		return size, cp
	}
	receipt := func(idx uint64, size uint64, cp []byte) []byte {
		path, err := tree.InclusionProof(idx, size)
		must(err)
		rs, err := receipts.SignRoot(issuer, receipts.Claims{Issuer: "https://evident.test", Subject: b.Origin, IssuedAt: Base.Unix()}, tree.HashAt(size))
		must(err)
		if o.NoCheckpoint {
			cp = nil
		}
		r, err := receipts.NewInclusionReceipt(rs, receipts.InclusionProof{TreeSize: size, LeafIndex: idx, Path: path}, cp)
		must(err)
		return r
	}
	type pendingSeal struct {
		stmt []byte
		idx  uint64
	}
	var pending []pendingSeal
	lastSeal := ""
	seal := func(at time.Time) {
		s := ledger.Seal{Chain: chain.ID, Profile: chain.Profile, Size: chain.Size, Head: chain.Head, Root: ledger.RootString(chain.Root()),
			PrevSeal: lastSeal, SealedAt: ledger.Timestamp(at)}
		payload, err := s.Canonical()
		must(err)
		stmt, err := receipts.SignStatement(issuer, payload, receipts.StatementOptions{
			Claims:      receipts.Claims{Issuer: "https://evident.test", Subject: chain.ID, IssuedAt: at.Unix()},
			ContentType: ledger.SealContentType,
		})
		must(err)
		entry, err := receipts.EntryHash(stmt)
		must(err)
		lastSeal = ledger.Link(entry).String()
		addFiller()
		idx := tree.Size()
		tree.AppendData(entry[:])
		pending = append(pending, pendingSeal{stmt: stmt, idx: idx})
	}

	var lines bytes.Buffer
	enc := json.NewEncoder(&lines)
	enc.SetEscapeHTML(false)
	text := strings.Repeat("evidence <&> ", o.PayloadSize/13+1)[:o.PayloadSize]
	if sealAt[0] {
		seal(Base)
	}
	if o.CreateKid != "" {
		ts := Base.Add(-time.Second)
		env := map[string]any{"jsonrpc": "2.0", "id": "m-create", "method": "workspace.create", "evidence": map[string]any{"prev_hash": chain.Head.String()},
			"params": map[string]any{"workspace": o.ChainID, "from": ps[0].uri, "ts": ledger.Timestamp(ts), "profiles": []string{"core/1.0", "security-signed/1.0"}}}
		unsigned, err := json.Marshal(env)
		must(err)
		sig, err := chap.Sign(unsigned, o.CreateKid, ps[0].priv)
		must(err)
		env["sig"] = sig
		rec, err := json.Marshal(env)
		must(err)
		a, err := chain.Append(rec, ts)
		must(err)
		must(a.Admission.Verify())
		must(enc.Encode(bundle.EntryLine{Seq: a.Seq, Prev: a.Prev, Link: a.Link, Arrival: ledger.Timestamp(ts.Add(time.Millisecond)), Record: a.Admission.Canonical}))
	}
	own := ledger.Genesis // the Coordinator's own chain head, when it differs from Evident's (UnchainedPrefix)
	for i := 0; i < o.Entries; i++ {
		ts := Base.Add(time.Duration(i) * time.Second)
		if slices.Contains(o.TSBack, i) {
			ts = ts.Add(-5 * time.Second)
		}
		env := map[string]any{
			"jsonrpc":   "2.0",
			"chap":      "0.3",
			"id":        fmt.Sprintf("m-%d", i),
			"workspace": o.ChainID,
			"ts":        ledger.Timestamp(ts),
			"evidence":  map[string]any{"prev_hash": chain.Head.String()},
		}
		switch {
		case i < o.UnchainedPrefix || o.Bare:
			delete(env, "evidence")
		case o.UnchainedPrefix > 0:
			env["evidence"] = map[string]any{"prev_hash": own.String()}
		}
		var signer *participant
		switch {
		case i < o.Participants:
			p := ps[i]
			role := "agent"
			if i == 0 {
				role = "admin"
			}
			env["method"] = "participant.join"
			env["from"] = p.uri
			env["params"] = map[string]any{"uri": p.uri, "role": role, "jwk": chap.JWK(p.kid, p.priv.Public().(ed25519.PublicKey))}
			signer = p
		case unsignedAt[i]:
			env["method"] = "message.post"
			env["from"] = "urn:chap:observer:0"
			env["params"] = map[string]any{"text": text, "n": i}
		case i == rotateAt:
			p := ps[1]
			nk := key(fmt.Sprintf("p1 rotated %d", i))
			newKid := "k1-2"
			env["method"] = "participant.rotate_key"
			env["from"] = p.uri
			env["params"] = map[string]any{"old_kid": p.kid, "new_jwk": chap.JWK(newKid, nk.Public().(ed25519.PublicKey))}
			signer = &participant{uri: p.uri, kid: p.kid, priv: p.priv}
			p.kid, p.priv = newKid, nk
		default:
			p := ps[i%o.Participants]
			env["method"] = "message.post"
			env["from"] = p.uri
			env["params"] = map[string]any{"text": text, "n": i, "to": ps[(i+1)%o.Participants].uri}
			signer = p
		}
		if signer != nil {
			unsigned, err := json.Marshal(env)
			must(err)
			sig, err := chap.Sign(unsigned, signer.kid, signer.priv)
			must(err)
			env["sig"] = sig
		}
		var rec []byte
		if i < o.UnchainedPrefix {
			rec, err = json.Marshal(map[string]any{"seq": i, "arrived": ledger.Timestamp(ts), "envelope": env})
		} else {
			rec, err = json.Marshal(env)
		}
		must(err)
		a, err := chain.Append(rec, ts)
		must(err)
		if v := a.Admission.Verify; v != nil {
			must(v())
		}
		if i >= o.UnchainedPrefix {
			own = ledger.NextLink(a.Admission.Canonical, own)
		}
		must(enc.Encode(bundle.EntryLine{Seq: a.Seq, Prev: a.Prev, Link: a.Link, Arrival: ledger.Timestamp(ts.Add(time.Millisecond)), Record: a.Admission.Canonical, Meta: a.Admission.Meta}))
		if sealAt[int(chain.Size)] {
			seal(ts.Add(500 * time.Millisecond))
		}
	}

	// Receipts: from the checkpoint after each registration, or all from the final tree.
	if o.ReceiptsAtEnd {
		addFiller()
	}
	for k, p := range pending {
		var size uint64
		var cp []byte
		if o.ReceiptsAtEnd {
			size, cp = checkpoint()
		} else {
			// The checkpoint right after this seal's registration (fillers of the next seal come later).
			size = p.idx + 1
			body := tlog.Checkpoint{Origin: b.Origin, Size: size, Hash: tree.HashAt(size)}.Marshal()
			if cp = checkpoints[size]; cp == nil {
				cp, err = note.Sign(&note.Note{Text: string(body)}, noteSigner)
				must(err)
				checkpoints[size] = cp
			}
		}
		ts, err := receipts.AttachReceipts(p.stmt, receipt(p.idx, size, cp))
		must(err)
		b.Files[bundle.SealFile(b.Dir, uint64(k))] = ts
	}
	if o.CheckpointFiles {
		for size, cp := range checkpoints {
			b.Files[bundle.CheckpointFile(size)] = cp
		}
	}

	b.Files[b.EntriesFile()] = lines.Bytes()
	b.Files[bundle.LogKeyFile] = []byte(vkey + "\n")
	k1, err := receipts.COSEKey(otherIssuer.Public())
	must(err)
	k2, err := receipts.COSEKey(issuer.Public())
	must(err)
	ks, err := cbor.Marshal([]cbor.RawMessage{k1, k2})
	must(err)
	b.Files[bundle.IssuersFile] = ks

	b.Issuer, b.NoteSigner = issuer, noteSigner
	b.LogTree = tree
	b.Manifest = bundle.Manifest{
		Format:   bundle.Format,
		Producer: "testbundle",
		Created:  ledger.Timestamp(Base.Add(time.Hour)),
		Scope:    bundle.Scope{Chain: o.ChainID},
		Log:      bundle.LogInfo{Origin: b.Origin},
		Chains: []bundle.ChainRef{{ID: o.ChainID, Dir: b.Dir, Profile: chap.Profile, Size: chain.Size, Head: chain.Head,
			Root: ledger.RootString(chain.Root())}},
	}
	b.Digests()
	return b
}

// Digests sets the manifest's file digests to those of Files as they are now.
func (b *Bundle) Digests() {
	b.Manifest.Format = bundle.Format
	b.Manifest.Files = map[string]string{}
	for name, data := range b.Files {
		h := sha256.Sum256(data)
		b.Manifest.Files[name] = "sha256:" + hex.EncodeToString(h[:])
	}
}
