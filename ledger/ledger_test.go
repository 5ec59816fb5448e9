package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/transparency-dev/merkle/testonly"
)

func TestNextLinkRule(t *testing.T) {
	// link(i) = "sha256:" + hex(SHA-256(canonical || utf8(link(i-1)))), written out by hand.
	// Sizes either side of the one NextLink hashes on the stack, and far past it.
	long := func(n int) []byte { return []byte(`{"t":"` + strings.Repeat("x", n-8) + `"}`) }
	records := [][]byte{[]byte(`{"a":1}`), []byte(`{}`), nil, []byte(`{"b":"c"}`),
		long(2048 - linkTextSize), long(2048 - linkTextSize + 1), long(70000)}
	prev := Genesis
	prevText := "sha256:" + strings.Repeat("0", 64)
	if Genesis.String() != prevText || !Genesis.IsZero() {
		t.Fatalf("genesis = %s", Genesis)
	}
	for i, rec := range records {
		want := sha256.Sum256(append(append([]byte{}, rec...), prevText...))
		got := NextLink(rec, prev)
		if got != Link(want) {
			t.Fatalf("record %d: link %s, want %x", i, got, want)
		}
		if got.IsZero() {
			t.Fatalf("record %d: link is zero", i)
		}
		prev, prevText = got, "sha256:"+hex.EncodeToString(want[:])
	}
}

func TestLinkTextRoundTrip(t *testing.T) {
	for i := range 20 {
		l := Link(sha256.Sum256([]byte{byte(i)}))
		s := l.String()
		p, err := ParseLink(s)
		if err != nil || p != l {
			t.Fatalf("ParseLink(%s) = %s, %v", s, p, err)
		}
		txt, err := l.MarshalText()
		if err != nil || string(txt) != s {
			t.Fatalf("MarshalText = %q, %v", txt, err)
		}
		var u Link
		if err := u.UnmarshalText(txt); err != nil || u != l {
			t.Fatalf("UnmarshalText = %s, %v", u, err)
		}
		js, err := json.Marshal(struct{ L Link }{l})
		if err != nil || string(js) != `{"L":"`+s+`"}` {
			t.Fatalf("json = %s, %v", js, err)
		}
		var back struct{ L Link }
		if err := json.Unmarshal(js, &back); err != nil || back.L != l {
			t.Fatalf("json back = %s, %v", back.L, err)
		}
	}
	if d := Digest([]byte("")); d != "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("Digest(empty) = %s", d)
	}
}

func TestParseLinkRejects(t *testing.T) {
	good := Link(sha256.Sum256([]byte("x"))).String()
	hexPart := good[len(LinkPrefix):]
	cases := []struct{ name, in string }{
		{"empty", ""},
		{"prefix only", "sha256:"},
		{"uppercase hex", "sha256:" + strings.ToUpper(hexPart)},
		{"one uppercase digit", "sha256:" + strings.Replace(hexPart, "a", "A", 1)},
		{"uppercase prefix", "SHA256:" + hexPart},
		{"wrong algorithm", "sha512:" + hexPart},
		{"no colon", "sha256" + hexPart + "0"},
		{"no prefix", hexPart},
		{"no prefix padded", "1234567" + hexPart},
		{"short", good[:len(good)-1]},
		{"long", good + "0"},
		{"long by two", good + "00"},
		{"non hex", "sha256:" + strings.Repeat("g", 64)},
		{"space", "sha256:" + hexPart[:63] + " "},
		{"leading space", " " + good[:len(good)-1]},
		{"multibyte", "sha256:" + hexPart[:62] + "é"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "one uppercase digit" && !strings.Contains(hexPart, "a") {
				t.Skip("no a in hex")
			}
			l, err := ParseLink(c.in)
			if !errors.Is(err, ErrMalformedLink) {
				t.Fatalf("ParseLink(%q) = %s, %v; want ErrMalformedLink", c.in, l, err)
			}
			if l != (Link{}) {
				t.Fatalf("ParseLink(%q) returned non-zero link %s on error", c.in, l)
			}
			orig := Link{1, 2, 3}
			u := orig
			if err := u.UnmarshalText([]byte(c.in)); err == nil || u != orig {
				t.Fatalf("UnmarshalText(%q) = %v and changed the link to %s", c.in, err, u)
			}
		})
	}
}

// refRoot is the RFC 6962 §2.1 Merkle Tree Hash written recursively.
func refRoot(leaves [][]byte) [32]byte {
	switch len(leaves) {
	case 0:
		return sha256.Sum256(nil)
	case 1:
		return sha256.Sum256(append([]byte{0}, leaves[0]...))
	}
	k := 1
	for k*2 < len(leaves) {
		k *= 2
	}
	l, r := refRoot(leaves[:k]), refRoot(leaves[k:])
	return sha256.Sum256(append(append([]byte{1}, l[:]...), r[:]...))
}

func TestTreeRootsMatchReferences(t *testing.T) {
	tr := NewTree()
	ref := testonly.New(Hasher)
	var leaves [][]byte
	prev := Genesis
	for n := 0; n <= 70; n++ {
		if n > 0 {
			l := NextLink([]byte{byte(n)}, prev)
			prev = l
			tr.Append(l)
			ref.AppendData(l[:])
			leaves = append(leaves, append([]byte(nil), l[:]...))
		}
		if tr.Size() != uint64(n) {
			t.Fatalf("size %d, want %d", tr.Size(), n)
		}
		got := tr.Root()
		if want := refRoot(leaves); got != want {
			t.Fatalf("size %d: root %x, recursive RFC 6962 reference %x", n, got, want)
		}
		if want := ref.Hash(); !bytes.Equal(got[:], want) {
			t.Fatalf("size %d: root %x, merkle/testonly %x", n, got, want)
		}
		// A clone and a JSON round trip keep the root, and stay independent of tr.
		cl := tr.Clone()
		js, err := tr.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		back := NewTree()
		if err := back.UnmarshalJSON(js); err != nil {
			t.Fatalf("size %d: unmarshal %s: %v", n, js, err)
		}
		if cl.Root() != got || back.Root() != got || back.Size() != uint64(n) {
			t.Fatalf("size %d: clone/unmarshal root differ", n)
		}
		extra := Link{0xff}
		cl.Append(extra)
		back.Append(extra)
		if tr.Root() != got || tr.Size() != uint64(n) {
			t.Fatalf("size %d: appending to a clone changed the original", n)
		}
		if cl.Root() != back.Root() || cl.Root() != refRoot(append(append([][]byte{}, leaves...), extra[:])) {
			t.Fatalf("size %d: clone and restored tree diverge after append", n)
		}
	}
	if RootString(NewTree().Root()) != "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("empty root = %s", RootString(NewTree().Root()))
	}
}

func TestTreeUnmarshalRefusesInconsistentState(t *testing.T) {
	tr := NewTree()
	for i := range 5 { // size 5 = 4 + 1: two hashes
		tr.Append(Link{byte(i)})
	}
	good, _ := tr.MarshalJSON()
	var st treeState
	if err := json.Unmarshal(good, &st); err != nil || len(st.Hashes) != 2 {
		t.Fatalf("state %s: %v", good, err)
	}
	h := st.Hashes[0]
	mk := func(size uint64, hashes ...[]byte) string {
		b, _ := json.Marshal(treeState{Size: size, Hashes: hashes})
		return string(b)
	}
	cases := []struct{ name, in string }{
		{"not json", `{`},
		{"wrong type", `[]`},
		{"size string", `{"size":"5","hashes":[]}`},
		{"too few hashes", mk(5, h)},
		{"too many hashes", mk(5, h, h, h)},
		{"hashes for empty", mk(0, h)},
		{"no hashes for size 1", mk(1)},
		{"size 4 with 2 hashes", mk(4, h, h)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			back := NewTree()
			back.Append(Link{9})
			before := back.Root()
			if err := back.UnmarshalJSON([]byte(c.in)); err == nil {
				t.Fatalf("UnmarshalJSON(%s) accepted: size %d", c.in, back.Size())
			}
			if back.Root() != before || back.Size() != 1 {
				t.Fatalf("UnmarshalJSON(%s) changed the tree on error", c.in)
			}
		})
	}
}

func TestSealCanonicalIsJCS(t *testing.T) {
	s := Seal{Chain: "wsp_<&>\u2028", Profile: "chap/0.3", Size: 1 << 40, Head: NextLink([]byte("x"), Genesis),
		Root: RootString(NewTree().Root()), Closed: true, PrevSeal: "", SealedAt: Timestamp(time.Date(2026, 5, 17, 9, 0, 0, 123456789, time.FixedZone("x", 3600)))}
	c, err := s.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	// Keys in code point order, no whitespace, no HTML escaping; numbers as integers.
	want := `{"chain":"wsp_<&>` + "\u2028" + `","closed":true,"head":"` + s.Head.String() + `","prev_seal":"","profile":"chap/0.3","root":"` + s.Root +
		`","sealed_at":"2026-05-17T08:00:00.123Z","size":1099511627776}`
	if string(c) != want {
		t.Fatalf("canonical\n got %s\nwant %s", c, want)
	}
	again, err := jcs.Transform(c)
	if err != nil || !bytes.Equal(again, c) {
		t.Fatalf("canonical bytes are not a JCS fixed point: %s, %v", again, err)
	}
	back, err := ParseSeal(c)
	if err != nil || back != s {
		t.Fatalf("ParseSeal(canonical) = %+v, %v", back, err)
	}
}

func TestParseSealRejects(t *testing.T) {
	base := `"chain":"c","profile":"chap/0.3","size":1,"head":"` + Genesis.String() + `","root":"r","closed":false,"prev_seal":""`
	cases := []struct {
		name, in string
		ok       bool
	}{
		{"valid", `{` + base + `,"sealed_at":"2026-05-17T09:00:00.000Z"}`, true},
		{"valid offset", `{` + base + `,"sealed_at":"2026-05-17T09:00:00+02:00"}`, true},
		{"unknown field", `{` + base + `,"sealed_at":"2026-05-17T09:00:00.000Z","extra":1}`, false},
		{"missing sealed_at", `{` + base + `}`, false},
		{"empty sealed_at", `{` + base + `,"sealed_at":""}`, false},
		{"date only", `{` + base + `,"sealed_at":"2026-05-17"}`, false},
		{"no zone", `{` + base + `,"sealed_at":"2026-05-17T09:00:00"}`, false},
		{"unix seconds", `{` + base + `,"sealed_at":"1779000000"}`, false},
		{"sealed_at number", `{` + base + `,"sealed_at":1}`, false},
		{"bad head", `{"chain":"c","profile":"p","size":1,"head":"sha256:00","root":"r","closed":false,"prev_seal":"","sealed_at":"2026-05-17T09:00:00Z"}`, false},
		{"negative size", `{"chain":"c","profile":"p","size":-1,"head":"` + Genesis.String() + `","root":"r","closed":false,"prev_seal":"","sealed_at":"2026-05-17T09:00:00Z"}`, false},
		{"not an object", `[]`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseSeal([]byte(c.in))
			if c.ok != (err == nil) {
				t.Fatalf("ParseSeal(%s) = %+v, %v; want ok=%v", c.in, s, err, c.ok)
			}
			if err != nil && s != (Seal{}) {
				t.Fatalf("ParseSeal returned a partial seal on error: %+v", s)
			}
		})
	}
}

func TestCheckPrevAndErrors(t *testing.T) {
	a, b := NextLink([]byte("a"), Genesis), NextLink([]byte("b"), Genesis)
	if err := CheckPrev(nil, a); err != nil {
		t.Fatal(err)
	}
	if err := CheckPrev(&a, a); err != nil {
		t.Fatal(err)
	}
	err := CheckPrev(&b, a)
	var re *RecordError
	var pm *PrevMismatchError
	if !errors.As(err, &re) || re.Code != CodePrevMismatch || !errors.Is(err, ErrRefused) || !errors.As(err, &pm) || pm.Named != b || pm.Head != a {
		t.Fatalf("CheckPrev mismatch = %#v", err)
	}
	r := Refuse(CodeFork, "x %d", 1)
	if r.Err != nil || !errors.Is(r, ErrRefused) || r.Error() != "record 0 refused (fork): x 1" {
		t.Fatalf("Refuse = %v", r)
	}
}
