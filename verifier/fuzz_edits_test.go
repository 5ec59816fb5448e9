package verifier

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/evident-log/evident/bundle"
)

// FuzzVerifyBundleEdits mutates the genuine bundles file by file, behind the zip's
// checksums and (unless told not to) the manifest's digests, so that every mutation reaches
// the parsers and checks behind them: entry lines, COSE seals and receipts, checkpoints,
// keys, policies, proofs. Raw zip bytes (FuzzVerifyBundleZip) mostly stop at a checksum; a
// forger recomputes those. The input is a program of edits (fuzzEdits); the oracles are
// FuzzVerifyBundleZip's: no false verify, no inconsistent report, no hang, bounded memory.
func FuzzVerifyBundleEdits(f *testing.F) {
	seeds, trust := fuzzSeeds(f)
	for i, s := range seeds {
		f.Add([]byte{byte(i)}) // the genuine bundle, unchanged
		names := s.editable()
		entries := uint8(slices.Index(names, s.b.EntriesFile()))
		seal := uint8(slices.Index(names, s.b.SealFile(0)))
		manifest := uint8(slices.Index(names, bundle.ManifestFile))
		// One edit of each kind, on the files that carry the evidence.
		f.Add(fuzzEditProgram(i, fuzzEdit{entries, editXor, 40, []byte{0x01}}))
		f.Add(fuzzEditProgram(i, fuzzEdit{entries, editInsert, 0, []byte("{\"seq\":0}\n")}))
		f.Add(fuzzEditProgram(i, fuzzEdit{entries, editDelete, 10, []byte{20}}))
		f.Add(fuzzEditProgram(i, fuzzEdit{entries, editCopy, 0, []byte{0, 0, 200}}))
		f.Add(fuzzEditProgram(i, fuzzEdit{seal, editOverwrite, 30, []byte{0xa1, 0x01, 0x26}}))
		f.Add(fuzzEditProgram(i, fuzzEdit{seal, editTruncate, 100, nil}))
		f.Add(fuzzEditProgram(i, fuzzEdit{seal, editSwap, 0, []byte{entries}}))
		f.Add(fuzzEditProgram(i, fuzzEdit{entries, editRemove, 0, nil}))
		f.Add(fuzzEditProgram(i|0x80, fuzzEdit{entries, editXor, 40, []byte{0x01}})) // digests left as they were
		f.Add(fuzzEditProgram(i, fuzzEdit{manifest, editOverwrite, 20, []byte("9")}))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		z := storedZip(t, seeds[int(data[0]&0x7f)%len(seeds)].edit(data))
		fuzzRun(t, seeds, trust, len(z), func() (*bundle.Reader, error) { return bundle.OpenZipBytes(z) },
			func(t *testing.T) (fuzzView, error) { return zipView(z) })
	})
}

// The edits of a FuzzVerifyBundleEdits program.
const (
	editXor       = iota // xor the bytes at pos with the payload
	editInsert           // insert the payload at pos
	editDelete           // delete payload[0] bytes at pos
	editOverwrite        // write the payload over the bytes at pos
	editTruncate         // cut the file at pos
	editCopy             // copy payload[2] bytes from offset payload[0:2] to pos
	editSwap             // swap the content with the file payload[0] names
	editRemove           // remove the file
	editKinds
)

// fuzzEdit is one edit of a program: on file (an index into the seed's editable names), at
// pos (taken modulo the file's length plus one).
type fuzzEdit struct {
	file, kind uint8
	pos        uint16
	payload    []byte
}

// fuzzEditProgram encodes a program: the seed (bit 7: keep the manifest's digests as they
// were), then per edit file, kind, pos (2 bytes, little-endian), payload length, payload.
func fuzzEditProgram(seed int, edits ...fuzzEdit) []byte {
	out := []byte{byte(seed)}
	for _, e := range edits {
		out = append(out, e.file, e.kind)
		out = binary.LittleEndian.AppendUint16(out, e.pos)
		out = append(out, byte(len(e.payload)))
		out = append(out, e.payload...)
	}
	return out
}

// editable returns the seed's file names in a fixed order, manifest.json last.
func (s *fuzzSeed) editable() []string {
	return append(slices.Sorted(maps.Keys(s.files)), bundle.ManifestFile)
}

// edit runs a program on the seed's files and returns them. Edits on the manifest apply
// after its digests are recomputed for the edited files (unless the program keeps them), so
// that both a consistent forgery and a manifest edited by hand are tried.
func (s *fuzzSeed) edit(program []byte) []fuzzFile {
	names := s.editable()
	content := map[string][]byte{}
	for name, b := range s.files {
		content[name] = bytes.Clone(b)
	}
	keepDigests := program[0]&0x80 != 0
	var manifestEdits []fuzzEdit
	for p := program[1:]; len(p) >= 5; {
		e := fuzzEdit{file: p[0] % uint8(len(names)), kind: p[1] % editKinds, pos: binary.LittleEndian.Uint16(p[2:])}
		n := min(int(p[4]), len(p)-5)
		e.payload, p = p[5:5+n], p[5+n:]
		if names[e.file] == bundle.ManifestFile {
			manifestEdits = append(manifestEdits, e)
			continue
		}
		applyEdit(content, names, e)
	}
	manifest := s.manifest
	if !keepDigests {
		m := s.b.Manifest
		m.Files = maps.Clone(m.Files)
		for name, b := range content {
			if _, listed := m.Files[name]; listed {
				m.Files[name] = fmt.Sprintf("sha256:%x", sha256.Sum256(b))
			}
		}
		if j, err := json.MarshalIndent(m, "", "  "); err == nil {
			manifest = append(j, '\n')
		}
	}
	content[bundle.ManifestFile] = bytes.Clone(manifest)
	for _, e := range manifestEdits {
		applyEdit(content, names, e)
	}
	var out []fuzzFile
	for _, name := range names {
		if b, ok := content[name]; ok {
			out = append(out, fuzzFile{kind: 'f', name: name, data: b})
		}
	}
	return out
}

// applyEdit applies one edit to content (files by name; names gives their indices).
func applyEdit(content map[string][]byte, names []string, e fuzzEdit) {
	name := names[e.file]
	b, ok := content[name]
	if !ok {
		return
	}
	pos := int(e.pos) % (len(b) + 1)
	switch e.kind {
	case editXor:
		for i, x := range e.payload {
			if pos+i < len(b) {
				b[pos+i] ^= x
			}
		}
	case editInsert:
		b = slices.Insert(b, pos, e.payload...)
	case editDelete:
		if len(e.payload) > 0 {
			b = slices.Delete(b, pos, min(len(b), pos+int(e.payload[0])))
		}
	case editOverwrite:
		for i, x := range e.payload {
			if pos+i < len(b) {
				b[pos+i] = x
			} else {
				b = append(b, x)
			}
		}
	case editTruncate:
		b = b[:pos]
	case editCopy:
		if len(e.payload) >= 3 && len(b) > 0 {
			from := int(binary.LittleEndian.Uint16(e.payload)) % len(b)
			seg := bytes.Clone(b[from:min(len(b), from+int(e.payload[2]))])
			b = slices.Insert(b, pos, seg...)
		}
	case editSwap:
		if len(e.payload) > 0 {
			other := names[int(e.payload[0])%len(names)]
			if ob, ok := content[other]; ok {
				content[other], b = b, ob
			}
		}
	case editRemove:
		delete(content, name)
		return
	}
	content[name] = b
}
