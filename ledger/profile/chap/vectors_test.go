package chap

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
)

const vectorsPath = "../../../testvectors/external/chap/chap-0.3-vectors.json"

type vectors struct {
	Ed25519 struct {
		SeedHex      string `json:"seed_hex"`
		PublicHex    string `json:"public_hex"`
		MessageHex   string `json:"message_hex"`
		SignatureHex string `json:"signature_hex"`
		ChapTag      string `json:"chap_tag"`
	} `json:"ed25519"`
	JCSSample struct {
		Canonical string `json:"canonical"`
		SHA256    string `json:"sha256"`
	} `json:"jcs_sample"`
	Chain struct {
		Genesis string `json:"genesis"`
		Entries []struct {
			Record   json.RawMessage `json:"record"`
			PrevHash string          `json:"prev_hash"`
			Head     string          `json:"head"`
		} `json:"entries"`
		EvidenceHead string `json:"evidence_head"`
	} `json:"chain"`
	Refusal struct {
		Entry json.RawMessage `json:"entry"`
		Head  string          `json:"head"`
	} `json:"refusal_record"`
	Artefact struct {
		Artefact json.RawMessage `json:"artefact"`
		Digest   string          `json:"digest"`
	} `json:"artefact_digest"`
}

func loadVectors(t testing.TB) *vectors {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(vectorsPath))
	if err != nil {
		t.Fatalf("published CHAP vectors: %v", err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("published CHAP vectors: %v", err)
	}
	return &v
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustLink(t testing.TB, s string) ledger.Link {
	t.Helper()
	l, err := ledger.ParseLink(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestVectorEd25519(t *testing.T) {
	v := loadVectors(t).Ed25519
	priv := ed25519.NewKeyFromSeed(unhex(t, v.SeedHex))
	pub := priv.Public().(ed25519.PublicKey)
	if !bytes.Equal(pub, unhex(t, v.PublicHex)) {
		t.Fatalf("public key %x, want %s", pub, v.PublicHex)
	}
	msg := unhex(t, v.MessageHex)
	sig := ed25519.Sign(priv, msg)
	if !bytes.Equal(sig, unhex(t, v.SignatureHex)) {
		t.Fatalf("signature %x, want %s", sig, v.SignatureHex)
	}
	s, err := ParseSignature(v.ChapTag)
	if err != nil {
		t.Fatal(err)
	}
	if s.Kid != "test-vector-rfc8032" || !bytes.Equal(s.Value, sig) {
		t.Fatalf("ParseSignature = %q %x", s.Kid, s.Value)
	}
	if s.Tag() != v.ChapTag {
		t.Fatalf("Tag() = %s, want %s", s.Tag(), v.ChapTag)
	}
	check := SignatureCheck{Kid: s.Kid, Public: pub, Message: msg, Value: s.Value}
	if !check.Verify() {
		t.Fatal("vector signature does not verify")
	}
	check.Message = []byte{0}
	if check.Verify() {
		t.Fatal("vector signature verifies over another message")
	}
}

func TestParseSignatureRejects(t *testing.T) {
	v := loadVectors(t).Ed25519
	b64 := v.ChapTag[len("ed25519:test-vector-rfc8032:"):]
	cases := []struct {
		name, tag, kid string
		ok             bool
	}{
		{"vector", v.ChapTag, "test-vector-rfc8032", true},
		{"kid with colons", "ed25519:did:key:z6Mk:" + b64, "did:key:z6Mk", true},
		{"empty", "", "", false},
		{"other alg", "es256:k:" + b64, "", false},
		{"uppercase alg", "ED25519:k:" + b64, "", false},
		{"no kid", "ed25519:" + b64, "", false},
		{"empty kid", "ed25519::" + b64, "", false},
		{"unpadded", "ed25519:k:" + b64[:len(b64)-2], "", false},
		{"url alphabet", "ed25519:k:" + "-_" + b64[2:], "", false},
		{"short", "ed25519:k:AAAA", "", false},
		{"trailing newline", "ed25519:k:" + b64 + "\n", "", false},
		{"line break inside, at the usual length", "ed25519:k:" + b64[:40] + "\r\n" + b64[40:86], "", false},
		{"non-zero trailing bits", "ed25519:k:" + b64[:85] + "B==", "", false},
		{"65 bytes", "ed25519:k:" + b64[:86] + "AAAA", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseSignature(c.tag)
			if c.ok != (err == nil) {
				t.Fatalf("ParseSignature(%q) = %v, %v", c.tag, s, err)
			}
			if c.ok && (s.Kid != c.kid || s.Tag() != c.tag) {
				t.Fatalf("ParseSignature(%q) kid %q tag %q", c.tag, s.Kid, s.Tag())
			}
		})
	}
}

func TestVectorJCSSample(t *testing.T) {
	v := loadVectors(t)
	want := v.JCSSample.Canonical
	// The canonical text itself, and a reordered, indented rendering of it.
	var m map[string]any
	if err := json.Unmarshal([]byte(want), &m); err != nil {
		t.Fatal(err)
	}
	pretty, _ := json.MarshalIndent(m, "", "  ")
	reordered := []byte(`{"workspace":"wsp_test","type":"notification","ts":"2026-05-17T09:00:00.000Z","to":"service:coordinator@example.org",
	  "params":{"status":"ready","load":"0.42"},"method":"participant.heartbeat","id":"01HZ9YWQ7K3X8M2V4N6P8R0T2A","from":"human:alice@example.org",
	  "evidence":{"prev_hash":"sha256:0000000000000000000000000000000000000000000000000000000000000000"},"chap":"0.2"}`)
	for _, in := range [][]byte{[]byte(want), pretty, reordered} {
		r, err := Parse(in)
		if err != nil {
			t.Fatalf("Parse(%s): %v", in, err)
		}
		if string(r.Canonical) != want {
			t.Fatalf("canonical\n got %s\nwant %s", r.Canonical, want)
		}
		if d := ledger.Digest(r.Canonical); d != v.JCSSample.SHA256 {
			t.Fatalf("sha256 %s, want %s", d, v.JCSSample.SHA256)
		}
		if r.Method != "participant.heartbeat" || r.From != "human:alice@example.org" || r.Workspace != "wsp_test" ||
			r.PrevHash == nil || !r.PrevHash.IsZero() || !r.TS.Equal(time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC)) {
			t.Fatalf("parsed fields %+v", r)
		}
	}
	c, err := canonical.Canonicalize(v.Artefact.Artefact, canonical.CHAP)
	if err != nil || ledger.Digest(c) != v.Artefact.Digest {
		t.Fatalf("artefact digest %s (%v), want %s", ledger.Digest(c), err, v.Artefact.Digest)
	}
}

func TestVectorChain(t *testing.T) {
	v := loadVectors(t).Chain
	if mustLink(t, v.Genesis) != ledger.Genesis {
		t.Fatalf("genesis %s", v.Genesis)
	}
	c, err := ledger.NewChain("wsp_test", Adapter{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Profile != "chap/0.3" || Adapter.Name(Adapter{}) != Profile {
		t.Fatalf("profile %q", c.Profile)
	}
	arrival := time.Date(2026, 5, 17, 9, 0, 5, 0, time.UTC)
	var leaves []ledger.Link
	for i, e := range v.Entries {
		a, err := c.Append(e.Record, arrival)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if a.Admission.Verify != nil || a.Admission.Signed {
			t.Fatalf("entry %d: unsigned vector record has a signature check", i)
		}
		if a.Seq != uint64(i) || a.Prev != mustLink(t, e.PrevHash) || a.Link != mustLink(t, e.Head) || c.Head != a.Link {
			t.Fatalf("entry %d: seq %d prev %s link %s, want prev %s head %s", i, a.Seq, a.Prev, a.Link, e.PrevHash, e.Head)
		}
		var id struct {
			ID string `json:"id"`
		}
		json.Unmarshal(e.Record, &id)
		if a.Admission.RecordID != id.ID {
			t.Fatalf("entry %d: record id %q, want %q", i, a.Admission.RecordID, id.ID)
		}
		leaves = append(leaves, a.Link)
	}
	if c.Head != mustLink(t, v.EvidenceHead) || c.Size != 3 {
		t.Fatalf("evidence head %s size %d, want %s", c.Head, c.Size, v.EvidenceHead)
	}
	tr := ledger.NewTree()
	for _, l := range leaves {
		tr.Append(l)
	}
	if c.Root() != tr.Root() {
		t.Fatal("chain root differs from a tree of its links")
	}
	// The vector records carry no evidence.prev_hash; the same records naming it are linked identically,
	// and naming anything else is refused.
	c2, _ := ledger.NewChain("wsp_test", Adapter{})
	for i, e := range v.Entries {
		var m map[string]any
		json.Unmarshal(e.Record, &m)
		m["evidence"] = map[string]any{"prev_hash": "sha256:" + hex.EncodeToString(make([]byte, 31)) + "01"}
		bad, _ := json.Marshal(m)
		if _, err := c2.Append(bad, arrival); codeOf(err) != ledger.CodePrevMismatch {
			t.Fatalf("entry %d with a wrong prev_hash: %v", i, err)
		}
		if _, err := c2.Append(e.Record, arrival); err != nil {
			t.Fatal(err)
		}
	}
	if c2.Head != c.Head {
		t.Fatal("refused records moved the chain")
	}
}

func TestVectorRefusalRecord(t *testing.T) {
	v := loadVectors(t).Refusal
	var entry struct {
		PrevHash string          `json:"prev_hash"`
		Seq      uint64          `json:"seq"`
		Request  json.RawMessage `json:"request"`
		Outcome  json.RawMessage `json:"outcome"`
	}
	if err := json.Unmarshal(v.Entry, &entry); err != nil {
		t.Fatal(err)
	}
	prev := mustLink(t, entry.PrevHash)
	st, err := Adapter{}.NewState(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &ledger.Chain{ID: "wsp_refusal", Profile: Profile, Size: entry.Seq, Head: prev, Tree: ledger.NewTree(), State: st}
	a, err := c.Append(v.Entry, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if a.Link != mustLink(t, v.Head) {
		t.Fatalf("refusal head %s, want %s", a.Link, v.Head)
	}
	// The link covers JCS({outcome, request}) || prev_hash: the metadata is not hashed.
	want, err := canonical.Canonicalize([]byte(`{"outcome":`+string(entry.Outcome)+`,"request":`+string(entry.Request)+`}`), canonical.CHAP)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Admission.Canonical, want) || ledger.NextLink(want, prev) != a.Link {
		t.Fatalf("refusal canonical %s, want %s", a.Admission.Canonical, want)
	}
	if a.Admission.RecordID != "" || a.Admission.Method != "control.pause" || a.Admission.Sender != "human:a" || a.Admission.Verify != nil {
		t.Fatalf("refusal admission %+v", a.Admission)
	}
	// At any other head the same audit entry does not continue the chain.
	c2 := &ledger.Chain{ID: "wsp_refusal", Profile: Profile, Size: entry.Seq, Head: ledger.Genesis, Tree: ledger.NewTree(), State: st}
	if _, err := c2.Append(v.Entry, time.Now()); codeOf(err) != ledger.CodeWrongChain {
		t.Fatalf("refusal at another head: %v", err)
	}
	// And in another workspace it is refused.
	c3 := &ledger.Chain{ID: "wsp_other", Profile: Profile, Size: entry.Seq, Head: prev, Tree: ledger.NewTree(), State: st}
	if _, err := c3.Append(v.Entry, time.Now()); codeOf(err) != ledger.CodeWrongChain {
		t.Fatalf("refusal in another workspace: %v", err)
	}
}

// TestParseSignatureUsualLength holds ParseSignature, on values of the 88 characters a 64-byte
// signature takes (decoded on the stack), to the general decoding it had before: the same
// refusals with the same errors, the same kid and value.
func TestParseSignatureUsualLength(t *testing.T) {
	general := func(tag string) (*Signature, error) {
		kid, b64 := tag[len("ed25519:"):strings.LastIndexByte(tag, ':')], tag[strings.LastIndexByte(tag, ':')+1:]
		v, err := strictBase64.DecodeString(b64)
		if err != nil || base64.StdEncoding.EncodeToString(v) != b64 {
			return nil, errors.New("signature value is not standard base64 with padding")
		}
		if len(v) != ed25519.SignatureSize {
			return nil, errors.New("ed25519 signature must be 64 bytes")
		}
		return &Signature{Kid: kid, Value: v}, nil
	}
	b64 := loadVectors(t).Ed25519.ChapTag[len("ed25519:test-vector-rfc8032:"):]
	values := []string{
		b64,
		b64[:85] + "B==",                   // non-zero trailing bits
		b64[:40] + "\r\n" + b64[40:86],     // a line break the decoder would skip
		b64[:40] + "\n\n" + b64[40:86],     // two of them
		b64[:40] + "\n\n\n\n" + b64[40:84], // four, around 84 characters the decoder takes as 63 bytes
		b64[:86] + "A=",                    // 65 bytes, one pad
		b64[:84] + "A===",                  // a pad too many
		b64[:87] + "A",                     // unpadded: 65 bytes
		"-_" + b64[2:],                     // URL alphabet
		b64[:20] + "=" + b64[21:],          // a pad inside
		strings.Repeat("A", 86) + "==",     // zeros
		strings.Repeat("/", 86) + "w=",     // top bits
		b64[:43] + "\x00" + b64[44:],       // a NUL
		b64[:43] + "é" + b64[45:],          // a two-byte rune
		strings.Repeat("A", 84) + "AAA=",   // 66 bytes less one: 65
		strings.Repeat("A", 84) + "AAAA",   // 66 bytes
	}
	for _, v := range values {
		if len(v) != sigB64Len {
			t.Fatalf("case %q is %d characters, not %d", v, len(v), sigB64Len)
		}
		tag := "ed25519:did:key:z6Mk:" + v
		got, err := ParseSignature(tag)
		want, wantErr := general(tag)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("ParseSignature(%q): error %v, the general decoding's %v", tag, err, wantErr)
		}
		if err == nil && (got.Kid != want.Kid || !bytes.Equal(got.Value, want.Value) || got.Tag() != tag) {
			t.Fatalf("ParseSignature(%q) = %q %x, the general decoding's %q %x", tag, got.Kid, got.Value, want.Kid, want.Value)
		}
	}
}
