package verifier_test

// The generator of the hostile-bundle corpus (testdata/hostile): every attack a crafted bundle
// can try, built from one genuine bundle with real keys and signatures (testbundle), written
// as a zip with the verdict and codes the verifier must answer. TestHostileCorpus
// (hostile_test.go) regenerates it with -update-hostile and otherwise checks every case.

//go:generate go test -run TestHostileCorpus -update-hostile .

import (
	"archive/zip"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	tlog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/verifier"
	"github.com/evident-log/evident/verifier/internal/testbundle"
)

var updateHostile = flag.Bool("update-hostile", false, "regenerate testdata/hostile (the hostile-bundle corpus) before checking it")

// hostileDir holds the corpus: one zip per case, cases.json and the trust files the cases pin.
const hostileDir = "testdata/hostile"

// hostileTrust is the corpus's trust file of the genuine service (its log and issuer keys and
// its witness policy).
const hostileTrust = "trust.json"

// hostileCase is one entry of cases.json.
type hostileCase struct {
	Name    string          `json:"name"`
	File    string          `json:"file"`
	Attack  string          `json:"attack"`
	Pins    string          `json:"pins,omitempty"` // a trust file of the corpus to pin; empty: nothing pinned
	Verdict verifier.Status `json:"verdict"`
	Codes   []verifier.Code `json:"codes,omitempty"` // each must appear on a check that is not verified
	Where   string          `json:"where,omitempty"` // a check carrying the first code must name this
}

// hostileOpts is the genuine chain every case starts from: two participants, eight signed
// records, three seals whose receipts are cut from one final checkpoint, which is also a file.
var hostileOpts = testbundle.Options{Entries: 8, Participants: 2, SealAt: []int{3, 6, 8}, ReceiptsAtEnd: true, CheckpointFiles: true, PayloadSize: 16}

// hostileTime dates every zip entry and cosignature, so the corpus is byte-for-byte stable.
var hostileTime = time.Date(2026, 1, 2, 4, 5, 6, 0, time.UTC)

// cosigner is a witness key: cosignature/v1 (C2SP tlog-cosignature) over Ed25519.
type cosigner struct {
	name string
	priv ed25519.PrivateKey
}

func newCosigner(name string) cosigner {
	seed := sha256.Sum256([]byte("hostile witness " + name))
	return cosigner{name: name, priv: ed25519.NewKeyFromSeed(seed[:])}
}

func (c cosigner) keyHash() uint32 {
	pub := c.priv.Public().(ed25519.PublicKey)
	h := sha256.Sum256(append([]byte(c.name+"\n\x04"), pub...))
	return binary.BigEndian.Uint32(h[:4])
}

// vkey is the witness's cosignature/v1 verifier key as a policy names it.
func (c cosigner) vkey() string {
	pub := c.priv.Public().(ed25519.PublicKey)
	return fmt.Sprintf("%s+%08x+%s", c.name, c.keyHash(), base64.StdEncoding.EncodeToString(append([]byte{0x04}, pub...)))
}

// line is the signature line the witness adds to a checkpoint note whose text is body.
func (c cosigner) line(body []byte) string {
	ts := uint64(hostileTime.Unix())
	msg := fmt.Appendf(nil, "cosignature/v1\ntime %d\n%s", ts, body)
	blob := binary.BigEndian.AppendUint32(nil, c.keyHash())
	blob = binary.BigEndian.AppendUint64(blob, ts)
	blob = append(blob, ed25519.Sign(c.priv, msg)...)
	return "— " + c.name + " " + base64.StdEncoding.EncodeToString(blob) + "\n"
}

// The genuine log's two witnesses and an attacker's two.
var (
	witnessA = newCosigner("witness-a.example")
	witnessB = newCosigner("witness-b.example")
	rogueA   = newCosigner("rogue-a.example")
	rogueB   = newCosigner("rogue-b.example")
	// impostorA carries witness A's name with another key.
	impostorA = cosigner{name: witnessA.name, priv: newCosigner("impostor").priv}
)

func policyOf(quorum string, ws ...cosigner) string {
	var b strings.Builder
	for i, w := range ws {
		fmt.Fprintf(&b, "witness w%d %s\n", i, w.vkey())
	}
	if quorum == "" {
		quorum = "all"
	}
	if quorum == "none" {
		b.WriteString("quorum none\n")
		return b.String()
	}
	b.WriteString("group q " + quorum)
	for i := range ws {
		fmt.Fprintf(&b, " w%d", i)
	}
	b.WriteString("\nquorum q\n")
	return b.String()
}

// genuinePolicy is the genuine log's witness policy: both witnesses must cosign.
var genuinePolicy = policyOf("all", witnessA, witnessB)

// mapCheckpoints rewrites every checkpoint note of the bundle (in each seal's receipts and in
// log/checkpoints/) through f, keeping every receipt in the service's deterministic encoding.
func mapCheckpoints(t testing.TB, b *testbundle.Bundle, f func(cp []byte) []byte) {
	t.Helper()
	for name, data := range b.Files {
		switch {
		case strings.HasPrefix(name, bundle.CheckpointsDir):
			b.Files[name] = f(data)
		case strings.Contains(name, "/seals/"):
			stmt, rcpts, err := receipts.SplitTransparent(data)
			if err != nil {
				t.Fatal(err)
			}
			for i, raw := range rcpts {
				r, err := receipts.ParseReceipt(raw)
				if err != nil {
					t.Fatal(err)
				}
				var cp []byte
				if r.Checkpoint != nil {
					cp = f(r.Checkpoint)
				}
				if rcpts[i], err = receipts.NewInclusionReceipt(receipts.RootSignature{Protected: r.Protected, Signature: r.Signature}, r.Inclusion[0], cp); err != nil {
					t.Fatal(err)
				}
			}
			if b.Files[name], err = receipts.AttachReceipts(stmt, rcpts...); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// mapCheckpointFiles rewrites every file of the bundle's checkpoint directory through f.
func mapCheckpointFiles(b *testbundle.Bundle, f func(cp []byte) []byte) {
	for name, cp := range b.Files {
		if strings.HasPrefix(name, bundle.CheckpointsDir) {
			b.Files[name] = f(cp)
		}
	}
}

// dropCheckpointFiles removes the bundle's checkpoint directory.
func dropCheckpointFiles(b *testbundle.Bundle) {
	for name := range b.Files {
		if strings.HasPrefix(name, bundle.CheckpointsDir) {
			delete(b.Files, name)
		}
	}
}

// cosign adds the witnesses' cosignature lines to a checkpoint note.
func cosign(cp []byte, ws ...cosigner) []byte {
	body, _, _ := bytes.Cut(cp, []byte("\n\n"))
	out := bytes.Clone(cp)
	for _, w := range ws {
		out = append(out, w.line(append(body, '\n'))...)
	}
	return out
}

// uncosigned is the genuine chain before its witnesses cosign (tests re-cosign their own way).
func uncosigned(t testing.TB) *testbundle.Bundle {
	t.Helper()
	return testbundle.Build(t, hostileOpts)
}

// witnessed cosigns every checkpoint of b with ws and carries policy as trust/witness.policy.
func witnessed(t testing.TB, b *testbundle.Bundle, policy string, ws ...cosigner) *testbundle.Bundle {
	t.Helper()
	mapCheckpoints(t, b, func(cp []byte) []byte { return cosign(cp, ws...) })
	if policy != "" {
		b.Files[bundle.WitnessPolicyFile] = []byte(policy)
	}
	b.Digests()
	return b
}

// genuine is the bundle the genuine service exports, cosigned by both its witnesses.
func genuine(t testing.TB) *testbundle.Bundle {
	t.Helper()
	return witnessed(t, uncosigned(t), genuinePolicy, witnessA, witnessB)
}

// genuineTrust is what the genuine service's operator publishes.
func genuineTrust(t testing.TB) []byte {
	t.Helper()
	f := testbundle.Trust(t)
	f.WitnessPolicy = genuinePolicy
	if err := f.Check(); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// zipEntry is one entry of a hand-written zip.
type zipEntry struct {
	name  string
	data  []byte
	mode  fs.FileMode // 0: a regular file
	store bool        // stored, sizes in the local header (no data descriptor)
}

func zipBytes(t testing.TB, ents []zipEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range ents {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: hostileTime}
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		h.SetMode(mode)
		var w interface{ Write([]byte) (int, error) }
		var err error
		if e.store {
			h.Method = zip.Store
			h.CRC32 = crc32.ChecksumIEEE(e.data)
			h.CompressedSize64, h.UncompressedSize64 = uint64(len(e.data)), uint64(len(e.data))
			w, err = zw.CreateRaw(h)
		} else {
			w, err = zw.CreateHeader(h)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// manifestBytes is the manifest as bundle.Writer writes it.
func manifestBytes(t testing.TB, m bundle.Manifest) []byte {
	t.Helper()
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// entriesOf lists b's files sorted, then the manifest (as given, or b's own).
func entriesOf(t testing.TB, b *testbundle.Bundle, manifest []byte) []zipEntry {
	t.Helper()
	if manifest == nil {
		manifest = manifestBytes(t, b.Manifest)
	}
	var ents []zipEntry
	for _, name := range slices.Sorted(maps.Keys(b.Files)) {
		ents = append(ents, zipEntry{name: name, data: b.Files[name]})
	}
	return append(ents, zipEntry{name: bundle.ManifestFile, data: manifest})
}

// fresh re-digests b and zips it: an attacker who rewrites the manifest to match.
func fresh(t testing.TB, b *testbundle.Bundle) []byte {
	t.Helper()
	b.Digests()
	return zipBytes(t, entriesOf(t, b, nil))
}

// replaceOnce replaces the one occurrence of old in b, failing if there is not exactly one.
func replaceOnce(t testing.TB, b []byte, old, new string) []byte {
	t.Helper()
	if n := bytes.Count(b, []byte(old)); n != 1 {
		t.Fatalf("replace %.60q: %d occurrences", old, n)
	}
	return bytes.Replace(b, []byte(old), []byte(new), 1)
}

// setLine replaces line seq of the entries.
func setLine(b *testbundle.Bundle, seq int, line []byte) {
	lines := b.Lines()
	lines[seq] = line
	b.SetLines(lines)
}

// relinkFrom recomputes prev and link of every line from seq on (an attacker who rehashes the
// chain after an edit; the seals still hold the genuine heads). The lines are edited as bytes,
// so a record no JSON decoder takes is kept as it is.
func relinkFrom(t testing.TB, b *testbundle.Bundle, from int) {
	t.Helper()
	lines := b.Lines()
	prev := ledger.Genesis
	for i, l := range lines {
		_, rec, ok := bytes.Cut(l, []byte(`"record":`))
		p := bytes.Index(l, []byte(`"prev":"`))
		k := bytes.Index(l, []byte(`"link":"`))
		if !ok || p < 0 || k < 0 || bytes.Contains(l, []byte(`"meta":`)) {
			t.Fatalf("line %d is not a plain entry line", i)
		}
		if i >= from {
			rec = rec[:len(rec)-1]
			link := ledger.NextLink(rec, prev)
			l = bytes.Clone(l)
			copy(l[p+len(`"prev":"`):], prev.String())
			copy(l[k+len(`"link":"`):], link.String())
			lines[i] = l
		}
		var err error
		if prev, err = ledger.ParseLink(string(l[k+len(`"link":"`) : k+len(`"link":"`)+len(prev.String())])); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
	}
	b.SetLines(lines)
}

// truncate keeps the first n entries and the first k seals.
func truncate(b *testbundle.Bundle, n, k int) {
	b.SetLines(b.Lines()[:n])
	for s := k; ; s++ {
		name := b.SealFile(uint64(s))
		if _, ok := b.Files[name]; !ok {
			break
		}
		delete(b.Files, name)
	}
}

func nested(depth int, inner string) string {
	return strings.Repeat("[", depth) + inner + strings.Repeat("]", depth)
}

// beyond53 is 2^53+1: the first integer a float64 JSON reader cannot hold.
const beyond53 = "9007199254740993"

// cborIndefinite re-encodes a CBOR item whose first byte heads a definite-length array as an
// indefinite-length one (0x9f … 0xff), after skip leading bytes (a tag).
func cborIndefinite(t testing.TB, b []byte, skip int) []byte {
	t.Helper()
	if b[skip]>>5 != 4 || b[skip]&0x1f >= 24 {
		t.Fatalf("byte %d is %#x, not a short array head", skip, b[skip])
	}
	out := append(bytes.Clone(b[:skip]), 0x9f)
	out = append(out, b[skip+1:]...)
	return append(out, 0xff)
}

// cborHuge replaces the short array head at skip with one declaring 2^63 elements.
func cborHuge(t testing.TB, b []byte, skip int) []byte {
	t.Helper()
	if b[skip]>>5 != 4 || b[skip]&0x1f >= 24 {
		t.Fatalf("byte %d is %#x, not a short array head", skip, b[skip])
	}
	out := append(bytes.Clone(b[:skip]), 0x9b, 0x80, 0, 0, 0, 0, 0, 0, 0)
	return append(out, b[skip+1:]...)
}

// hostileBuilder makes one case's zip bytes.
type hostileBuilder func(t testing.TB) []byte

// hostileSpec is a case of the corpus with the program that builds it.
type hostileSpec struct {
	hostileCase
	build hostileBuilder
}

// hostileSpecs lists the corpus. Pins "trust.json" is the genuine operator's trust file.
func hostileSpecs() []hostileSpec {
	const pinned = hostileTrust
	entries := bundle.EntriesFile(bundle.ChainDir("ws-1"))
	var specs []hostileSpec
	add := func(name, attack, pins string, verdict verifier.Status, codes []verifier.Code, where string, build hostileBuilder) {
		specs = append(specs, hostileSpec{hostileCase{Name: name, File: name + ".zip", Attack: attack, Pins: pins, Verdict: verdict, Codes: codes, Where: where}, build})
	}
	codes := func(c ...verifier.Code) []verifier.Code { return c }
	broken, notEval, ok := verifier.Broken, verifier.NotEvaluated, verifier.Verified

	// Controls.
	add("genuine", "the genuine bundle, pinned to the genuine operator's trust file", pinned, ok, nil, "",
		func(t testing.TB) []byte { return fresh(t, genuine(t)) })
	add("genuine-unpinned", "the genuine bundle with nothing pinned: who made it is not established", "", notEval, codes(verifier.CodeTrustNotPinned), bundle.LogKeyFile,
		func(t testing.TB) []byte { return fresh(t, genuine(t)) })

	// Chain and seal history.
	add("truncated-claiming-full", "entries and seals cut back to seal 1 (6 of 8 entries), the manifest still claiming the full chain", pinned, broken, codes(verifier.CodeStateMismatch), "",
		func(t testing.TB) []byte { b := genuine(t); truncate(b, 6, 2); return fresh(t, b) })
	add("truncated-to-earlier-seal", "entries and seals cut back to seal 1, the manifest rewritten to that seal's state: an earlier export, which a bundle alone cannot tell from the latest", pinned, ok, nil, "",
		func(t testing.TB) []byte {
			b := genuine(t)
			truncate(b, 6, 2)
			ref := &b.Manifest.Chains[0]
			var e bundle.EntryLine
			if err := json.Unmarshal(b.Lines()[5], &e); err != nil {
				t.Fatal(err)
			}
			stmt, err := receipts.ParseStatement(b.Files[b.SealFile(1)])
			if err != nil {
				t.Fatal(err)
			}
			seal, err := ledger.ParseSeal(stmt.Payload)
			if err != nil {
				t.Fatal(err)
			}
			ref.Size, ref.Head, ref.Root = 6, e.Link, seal.Root
			return fresh(t, b)
		})
	add("truncated-under-last-seal", "the last two entries dropped, every seal kept: the last seal covers entries the bundle no longer holds", pinned, broken, codes(verifier.CodeStateMismatch), "",
		func(t testing.TB) []byte { b := genuine(t); b.SetLines(b.Lines()[:6]); return fresh(t, b) })
	add("seal-from-other-chain", "seal 1 replaced by seal 1 of another chain of the same service (valid signature and receipt)", pinned, broken, codes(verifier.CodeSealPayload, verifier.CodeFork), "seal 1",
		func(t testing.TB) []byte {
			b := genuine(t)
			o := hostileOpts
			o.ChainID = "ws-2"
			other := witnessed(t, testbundle.Build(t, o), genuinePolicy, witnessA, witnessB)
			b.Files[b.SealFile(1)] = other.Files[other.SealFile(1)]
			return fresh(t, b)
		})
	add("seal-and-checkpoint-from-other-log", "seal 2 and the checkpoint file replaced by those of another service's log (its own issuer and log keys)", pinned, broken, codes(verifier.CodeSealSignature, verifier.CodeCheckpoint), "seal 2",
		func(t testing.TB) []byte {
			b := genuine(t)
			o := hostileOpts
			o.Service = "other-log"
			other := testbundle.Build(t, o)
			b.Files[b.SealFile(2)] = other.Files[other.SealFile(2)]
			dropCheckpointFiles(b)
			for name, data := range other.Files {
				if strings.HasPrefix(name, bundle.CheckpointsDir) {
					b.Files[name] = data
				}
			}
			return fresh(t, b)
		})
	add("older-checkpoints-only", "the receipts stripped of their checkpoint and the bundle holding only an older (genuinely signed and cosigned) checkpoint of the log", pinned, notEval, codes(verifier.CodeNoCheckpoint, verifier.CodeNotAnchored), "seal 2",
		func(t testing.TB) []byte {
			b := uncosigned(t)
			mapCheckpoints(t, b, func(cp []byte) []byte { return nil })
			dropCheckpointFiles(b)
			size := b.LogTree.Size() - 2
			body := tlog.Checkpoint{Origin: b.Origin, Size: size, Hash: b.LogTree.HashAt(size)}.Marshal()
			cp, err := note.Sign(&note.Note{Text: string(body)}, b.NoteSigner)
			if err != nil {
				t.Fatal(err)
			}
			b.Files[bundle.CheckpointFile(size)] = cosign(cp, witnessA, witnessB)
			b.Files[bundle.WitnessPolicyFile] = []byte(genuinePolicy)
			return fresh(t, b)
		})
	add("seals-reordered", "seal files 1 and 2 swapped", pinned, broken, codes(verifier.CodeSealLineage, verifier.CodeChainFork), "seal 1",
		func(t testing.TB) []byte {
			b := genuine(t)
			s1, s2 := b.SealFile(1), b.SealFile(2)
			b.Files[s1], b.Files[s2] = b.Files[s2], b.Files[s1]
			return fresh(t, b)
		})
	add("seal-dropped-renumbered", "seal 1 dropped and seal 2 renumbered 1", pinned, broken, codes(verifier.CodeSealLineage), "seal 1",
		func(t testing.TB) []byte {
			b := genuine(t)
			b.Files[b.SealFile(1)] = b.Files[b.SealFile(2)]
			delete(b.Files, b.SealFile(2))
			return fresh(t, b)
		})
	add("seal-dropped-gap", "seal 1 dropped, seal 2 left under its number", pinned, broken, codes(verifier.CodeSealNumbering), bundle.SealFile("ws-1", 2),
		func(t testing.TB) []byte { b := genuine(t); delete(b.Files, b.SealFile(1)); return fresh(t, b) })
	add("receipt-replayed", "seal 2 carrying seal 1's (valid) receipt instead of its own", pinned, broken, codes(verifier.CodeReceipt), "seal 2",
		func(t testing.TB) []byte {
			b := genuine(t)
			_, r1, err := receipts.SplitTransparent(b.Files[b.SealFile(1)])
			if err != nil {
				t.Fatal(err)
			}
			s2, _, err := receipts.SplitTransparent(b.Files[b.SealFile(2)])
			if err != nil {
				t.Fatal(err)
			}
			if b.Files[b.SealFile(2)], err = receipts.AttachReceipts(s2, r1...); err != nil {
				t.Fatal(err)
			}
			return fresh(t, b)
		})

	// Witnesses.
	add("witness-quorum-none", "the bundle's witness policy says quorum none and no checkpoint is cosigned; the operator's pinned policy needs both witnesses", pinned, notEval, codes(verifier.CodeQuorumUnmet), "",
		func(t testing.TB) []byte {
			return fresh(t, witnessed(t, uncosigned(t), policyOf("none", witnessA, witnessB)))
		})
	add("witness-quorum-none-unpinned", "as witness-quorum-none, nothing pinned: the bundle's own policy is used and reported as not pinned", "", notEval, codes(verifier.CodeTrustNotPinned), bundle.WitnessPolicyFile,
		func(t testing.TB) []byte {
			return fresh(t, witnessed(t, uncosigned(t), policyOf("none", witnessA, witnessB)))
		})
	add("witness-group-zero", "a witness policy whose quorum group needs 0 of its witnesses", pinned, broken, codes(verifier.CodeWitnessPolicy), bundle.WitnessPolicyFile,
		func(t testing.TB) []byte {
			return fresh(t, witnessed(t, uncosigned(t), policyOf("0", witnessA, witnessB)))
		})
	add("witness-unknown", "the bundle's policy names the attacker's two witnesses, which cosign every checkpoint", pinned, notEval, codes(verifier.CodeQuorumUnmet), "",
		func(t testing.TB) []byte {
			return fresh(t, witnessed(t, uncosigned(t), policyOf("all", rogueA, rogueB), rogueA, rogueB))
		})
	add("witness-cosigned-outside-policy", "the genuine policy, every checkpoint cosigned by keys outside it (one carrying witness A's name)", pinned, notEval, codes(verifier.CodeQuorumUnmet), "",
		func(t testing.TB) []byte {
			return fresh(t, witnessed(t, uncosigned(t), genuinePolicy, impostorA, rogueB))
		})
	add("witness-cosignature-forged", "a cosignature line with witness A's key hash whose signature does not verify", pinned, broken, codes(verifier.CodeCosignatureInvalid, verifier.CodeQuorumUnmet), "",
		func(t testing.TB) []byte {
			b := uncosigned(t)
			mapCheckpoints(t, b, func(cp []byte) []byte {
				out := cosign(cp, witnessA, witnessB)
				good := witnessA.line(append(bytes.SplitN(cp, []byte("\n\n"), 2)[0], '\n'))
				bad := []byte(good)
				sig, _ := base64.StdEncoding.DecodeString(strings.Fields(good)[2])
				sig[len(sig)-1] ^= 1
				bad = []byte("— " + witnessA.name + " " + base64.StdEncoding.EncodeToString(sig) + "\n")
				return bytes.Replace(out, []byte(good), bad, 1)
			})
			b.Files[bundle.WitnessPolicyFile] = []byte(genuinePolicy)
			return fresh(t, b)
		})

	// Checkpoint notes.
	add("checkpoint-extra-text-line", "an extension line added to the checkpoint file's signed text", pinned, broken, codes(verifier.CodeCheckpoint), "",
		func(t testing.TB) []byte {
			b := genuine(t)
			mapCheckpointFiles(b, func(cp []byte) []byte {
				return bytes.Replace(cp, []byte("\n\n"), []byte("\nextension: the log never signed this\n\n"), 1)
			})
			return fresh(t, b)
		})
	add("checkpoint-trailing-lines", "text lines appended after the checkpoint file's signature lines", pinned, broken, codes(verifier.CodeCheckpoint), "",
		func(t testing.TB) []byte {
			b := genuine(t)
			mapCheckpointFiles(b, func(cp []byte) []byte { return append(bytes.Clone(cp), "\nsize 99\nnot a signature\n"...) })
			return fresh(t, b)
		})
	add("checkpoint-unknown-signer", "a signature line of a key nobody names added to every checkpoint: ignored, as C2SP signed notes require", pinned, ok, nil, "",
		func(t testing.TB) []byte {
			b := uncosigned(t)
			return fresh(t, witnessed(t, b, genuinePolicy, witnessA, witnessB, newCosigner("nobody.example")))
		})

	// The manifest.
	genuineManifest := func(t testing.TB) (*testbundle.Bundle, []byte) {
		b := genuine(t)
		return b, manifestBytes(t, b.Manifest)
	}
	altered := func(t testing.TB, b *testbundle.Bundle) ([]byte, string) {
		lines := b.Lines()
		alt := bytes.Replace(bytes.Clone(lines[4]), []byte(`"n":4`), []byte(`"n":5`), 1)
		if bytes.Equal(alt, lines[4]) {
			t.Fatal("entry 4 has no n")
		}
		lines[4] = alt
		var buf bytes.Buffer
		for _, l := range lines {
			buf.Write(l)
			buf.WriteByte('\n')
		}
		h := sha256.Sum256(buf.Bytes())
		return buf.Bytes(), fmt.Sprintf("sha256:%x", h)
	}
	add("manifest-files-duplicate-key", `"files" naming entries.jsonl twice: first with the digest of an altered copy, then the genuine one (encoding/json keeps the last)`, pinned, broken, codes(verifier.CodeAmbiguous), "",
		func(t testing.TB) []byte {
			b, m := genuineManifest(t)
			_, altDigest := altered(t, b)
			key := fmt.Sprintf("%q: ", entries)
			m = replaceOnce(t, m, key, key+fmt.Sprintf("%q,\n    ", altDigest)+key)
			return zipBytes(t, entriesOf(t, b, m))
		})
	add("manifest-files-and-FILES", `a manifest with "FILES" (the altered digest) before "files": encoding/json merges both into one map`, pinned, broken, codes(verifier.CodeAmbiguous), "",
		func(t testing.TB) []byte {
			b, m := genuineManifest(t)
			_, altDigest := altered(t, b)
			m = replaceOnce(t, m, `  "files": {`, fmt.Sprintf("  \"FILES\": {%q: %q},\n  \"files\": {", entries, altDigest))
			return zipBytes(t, entriesOf(t, b, m))
		})
	add("manifest-lone-surrogate", `a lone surrogate (\ud800) in the manifest's producer`, pinned, broken, codes(verifier.CodeAmbiguous), "",
		func(t testing.TB) []byte {
			b, m := genuineManifest(t)
			m = replaceOnce(t, m, `"producer": "testbundle"`, `"producer": "testbundle\ud800"`)
			return zipBytes(t, entriesOf(t, b, m))
		})
	add("manifest-deep-nesting", "10,000 nested arrays in the manifest", pinned, notEval, codes(verifier.CodeLimit), "",
		func(t testing.TB) []byte {
			b, m := genuineManifest(t)
			m = replaceOnce(t, m, `"producer": "testbundle"`, `"producer": `+nested(10000, `"testbundle"`))
			return zipBytes(t, entriesOf(t, b, m))
		})
	add("manifest-size-beyond-2-53", "the manifest's chain size 2^53+1", pinned, broken, codes(verifier.CodeAmbiguous), "",
		func(t testing.TB) []byte {
			b, m := genuineManifest(t)
			m = replaceOnce(t, m, `"size": 8,`, `"size": `+beyond53+`,`)
			return zipBytes(t, entriesOf(t, b, m))
		})

	// Keys re-signed end to end.
	forged := func(t testing.TB) []byte {
		o := hostileOpts
		o.Service = "forger"
		return fresh(t, witnessed(t, testbundle.Build(t, o), policyOf("all", rogueA, rogueB), rogueA, rogueB))
	}
	add("forged-pinned", "every key, signature and cosignature made by a forger (its own log, issuer and witnesses), checked against the genuine operator's trust file", pinned, broken, codes(verifier.CodeTrustMismatch), bundle.LogKeyFile, forged)
	add("forged-unpinned", "the forged bundle with nothing pinned: consistent with itself, never verified", "", notEval, codes(verifier.CodeTrustNotPinned), bundle.LogKeyFile, forged)

	// JSON in entries.jsonl.
	add("entry-line-duplicate-key", "an entries.jsonl line with a second \"link\" member before the genuine one", pinned, broken, codes(verifier.CodeEntryMalformed), entries+":5",
		func(t testing.TB) []byte {
			b := genuine(t)
			l := b.Lines()[4]
			setLine(b, 4, replaceOnce(t, l, `"link":`, `"link":"sha256:`+strings.Repeat("0", 64)+`","link":`))
			return fresh(t, b)
		})
	add("record-duplicate-key", "a signed record with a second \"id\" member before the genuine one, links untouched (a last-wins parser sees the signed record)", pinned, broken, codes(ledger.CodeMalformed), entries+":5",
		func(t testing.TB) []byte {
			b := genuine(t)
			l := b.Lines()[4]
			setLine(b, 4, replaceOnce(t, l, `"record":{`, `"record":{"id":"m-forged",`))
			return fresh(t, b)
		})
	add("record-lone-surrogate", `a lone surrogate (\ud800) in a record's text, the chain relinked after it`, pinned, broken, codes(ledger.CodeMalformed), entries+":5",
		func(t testing.TB) []byte {
			b := genuine(t)
			l := b.Lines()[4]
			setLine(b, 4, replaceOnce(t, l, `"text":"evidence`, `"text":"\ud800vidence`))
			relinkFrom(t, b, 4)
			return fresh(t, b)
		})
	add("record-deep-nesting", "100,001 nested arrays in a record (one past the default --max-depth), the chain relinked after it", pinned, broken, codes(ledger.CodeTooLarge), entries+":5",
		func(t testing.TB) []byte {
			b := genuine(t)
			l := b.Lines()[4]
			setLine(b, 4, replaceOnce(t, l, `"n":4`, `"n":`+nested(canonical.DefaultMaxDepth+1, "4")))
			relinkFrom(t, b, 4)
			return fresh(t, b)
		})
	add("record-number-beyond-2-53", "a record number 2^53+1, the chain relinked after it", pinned, broken, codes(ledger.CodeNumber), entries+":5",
		func(t testing.TB) []byte {
			b := genuine(t)
			l := b.Lines()[4]
			setLine(b, 4, replaceOnce(t, l, `"n":4`, `"n":`+beyond53))
			relinkFrom(t, b, 4)
			return fresh(t, b)
		})
	add("entry-seq-beyond-2-53", "an entries.jsonl seq of 2^53+1", pinned, broken, codes(verifier.CodeEntrySeq), entries+":5",
		func(t testing.TB) []byte {
			b := genuine(t)
			l := b.Lines()[4]
			setLine(b, 4, replaceOnce(t, l, `"seq":4,`, `"seq":`+beyond53+`,`))
			return fresh(t, b)
		})

	// CBOR.
	add("seal-cbor-indefinite", "seal 0's COSE_Sign1 array re-encoded with an indefinite length", pinned, broken, codes(verifier.CodeSealFormat), "",
		func(t testing.TB) []byte {
			b := genuine(t)
			b.Files[b.SealFile(0)] = cborIndefinite(t, b.Files[b.SealFile(0)], 1)
			return fresh(t, b)
		})
	add("seal-cbor-2-63-length", "seal 0's COSE_Sign1 array declaring 2^63 elements", pinned, broken, codes(verifier.CodeSealFormat), "",
		func(t testing.TB) []byte {
			b := genuine(t)
			b.Files[b.SealFile(0)] = cborHuge(t, b.Files[b.SealFile(0)], 1)
			return fresh(t, b)
		})
	add("issuers-cbor-indefinite", "trust/issuers.cbor as an indefinite-length array", pinned, broken, codes(verifier.CodeTrust), "",
		func(t testing.TB) []byte {
			b := genuine(t)
			b.Files[bundle.IssuersFile] = cborIndefinite(t, b.Files[bundle.IssuersFile], 0)
			return fresh(t, b)
		})
	add("issuers-cbor-2-63-length", "trust/issuers.cbor declaring an array of 2^63 keys", pinned, broken, codes(verifier.CodeTrust), "",
		func(t testing.TB) []byte {
			b := genuine(t)
			b.Files[bundle.IssuersFile] = cborHuge(t, b.Files[bundle.IssuersFile], 0)
			return fresh(t, b)
		})

	// The zip container.
	genuineZip := func(t testing.TB, extra ...zipEntry) []byte {
		b := genuine(t)
		ents := entriesOf(t, b, nil)
		return zipBytes(t, append(ents[:len(ents)-1:len(ents)-1], append(extra, ents[len(ents)-1])...))
	}
	add("zip-duplicate-name", "entries.jsonl twice in the zip: the first genuine, the second with one record altered (the first copy is what Go's reader opens, the last what unzip leaves on disk)", pinned, broken, codes(verifier.CodeAmbiguous), entries,
		func(t testing.TB) []byte {
			alt, _ := altered(t, genuine(t))
			return genuineZip(t, zipEntry{name: entries, data: alt})
		})
	add("zip-local-name-differs", "the local header of entries.jsonl names another file than the central directory does", pinned, broken, codes(verifier.CodeAmbiguous), "",
		func(t testing.TB) []byte {
			z := genuineZip(t)
			i := bytes.Index(z, []byte(entries))
			z = bytes.Clone(z)
			copy(z[i:], strings.Replace(entries, "entries", "ENTRIES", 1))
			return z
		})
	add("zip-local-sizes-differ", "entries.jsonl stored, its local header's sizes and CRC saying the first 5 lines where the central directory says all 8", pinned, broken, codes(verifier.CodeAmbiguous), "",
		func(t testing.TB) []byte {
			b := genuine(t)
			ents := entriesOf(t, b, nil)
			full := b.Files[b.EntriesFile()]
			for i := range ents {
				if ents[i].name == entries {
					ents[i].store = true
				}
			}
			z := zipBytes(t, ents)
			i := bytes.Index(z, []byte(entries)) - 30
			if !bytes.Equal(z[i:i+4], []byte("PK\x03\x04")) {
				t.Fatal("no local header before the entries name")
			}
			short := full[:bytes.Index(full, b.Lines()[5])]
			z = bytes.Clone(z)
			binary.LittleEndian.PutUint32(z[i+14:], crc32.ChecksumIEEE(short))
			binary.LittleEndian.PutUint32(z[i+18:], uint32(len(short)))
			binary.LittleEndian.PutUint32(z[i+22:], uint32(len(short)))
			return z
		})
	add("zip-case-collision", "entries.jsonl and ENTRIES.jsonl (altered), both listed: one file on a case-insensitive disk", pinned, broken, codes(verifier.CodeAmbiguous), "",
		func(t testing.TB) []byte {
			b := genuine(t)
			alt, _ := altered(t, b)
			b.Files[strings.Replace(entries, "entries", "ENTRIES", 1)] = alt
			return fresh(t, b)
		})
	add("zip-unicode-normalisation", "two listed files whose names differ only in Unicode normalisation (NFC and NFD of notes/café.txt)", pinned, broken, codes(verifier.CodeAmbiguous), "",
		func(t testing.TB) []byte {
			b := genuine(t)
			b.Files["notes/caf\u00e9.txt"] = []byte("one\n")
			b.Files["notes/cafe\u0301.txt"] = []byte("other\n")
			return fresh(t, b)
		})
	add("zip-dotdot", `an unlisted "../evil.sh" entry`, pinned, broken, codes(verifier.CodeAmbiguous), "../evil.sh",
		func(t testing.TB) []byte {
			return genuineZip(t, zipEntry{name: "../evil.sh", data: []byte("#!/bin/sh\necho pwned\n"), mode: 0o755})
		})
	add("zip-absolute", `an unlisted "/abs" entry`, pinned, broken, codes(verifier.CodeAmbiguous), "/abs",
		func(t testing.TB) []byte {
			return genuineZip(t, zipEntry{name: "/abs", data: []byte("absolute\n")})
		})
	add("zip-symlink", "a listed symlink entry (its digest is that of the link target's name)", pinned, broken, codes(verifier.CodeAmbiguous), "notes/link",
		func(t testing.TB) []byte {
			b := genuine(t)
			b.Files["notes/link"] = []byte("../../../etc/passwd")
			b.Digests()
			ents := entriesOf(t, b, nil)
			for i := range ents {
				if ents[i].name == "notes/link" {
					ents[i].mode = fs.ModeSymlink | 0o777
				}
			}
			return zipBytes(t, ents)
		})
	add("zip-unlisted", "an extra file the manifest does not list", pinned, broken, codes(verifier.CodeAmbiguous), "chains/ws-1/extra.jsonl",
		func(t testing.TB) []byte {
			return genuineZip(t, zipEntry{name: "chains/ws-1/extra.jsonl", data: []byte("{}\n")})
		})
	return specs
}

// writeHostileCorpus regenerates testdata/hostile.
func writeHostileCorpus(t *testing.T) {
	if err := os.MkdirAll(hostileDir, 0o755); err != nil {
		t.Fatal(err)
	}
	old, _ := filepath.Glob(filepath.Join(hostileDir, "*.zip"))
	for _, p := range old {
		os.Remove(p)
	}
	var cases []hostileCase
	written := map[[32]byte]string{} // a case whose bundle another case already holds names that file
	for _, s := range hostileSpecs() {
		z := s.build(t)
		h := sha256.Sum256(z)
		if f, ok := written[h]; ok {
			s.File = f
		} else if err := os.WriteFile(filepath.Join(hostileDir, s.File), z, 0o644); err != nil {
			t.Fatal(err)
		} else {
			written[h] = s.File
		}
		cases = append(cases, s.hostileCase)
	}
	js, err := json.MarshalIndent(cases, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hostileDir, "cases.json"), append(js, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hostileDir, hostileTrust), genuineTrust(t), 0o644); err != nil {
		t.Fatal(err)
	}
}
