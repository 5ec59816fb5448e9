package tlogpolicy

import (
	"crypto/rand"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	tlog "github.com/transparency-dev/formats/log"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// testKeys: three Ed25519 cosigners and one ML-DSA-44 cosigner.
func testKeys(t testing.TB) (signers []note.Signer, vkeys []string) {
	t.Helper()
	for _, n := range []string{"w1.test", "w2.test", "w3.test"} {
		sk, vk, err := note.GenerateKey(rand.Reader, n)
		if err != nil {
			t.Fatal(err)
		}
		cv, err := fnote.VKeyToCosignatureV1(vk)
		if err != nil {
			t.Fatal(err)
		}
		s, err := fnote.NewSignerForCosignatureV1(sk)
		if err != nil {
			t.Fatal(err)
		}
		signers, vkeys = append(signers, s), append(vkeys, cv)
	}
	sk, vk, err := fnote.GenerateMLDSAKey("pq.test")
	if err != nil {
		t.Fatal(err)
	}
	s, err := fnote.NewSignerForCosignatureV1(sk)
	if err != nil {
		t.Fatal(err)
	}
	return append(signers, s), append(vkeys, vk)
}

func TestParseRoundTripAndEvaluate(t *testing.T) {
	signers, vk := testKeys(t)
	src := "# a 2-of-3 group plus a post-quantum witness\n" +
		"witness w1 " + vk[0] + " http://127.0.0.1:1\n" +
		"witness w2 " + vk[1] + "\n" +
		"witness w3 " + vk[2] + "\n" +
		"witness pq " + vk[3] + "\n" +
		"group classic 2 w1 w2 w3\n" +
		"group both all classic pq\n" +
		"quorum both\n"
	p, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := Parse([]byte(p.String()))
	if err != nil || p2.String() != p.String() {
		t.Fatalf("round trip: %v\n%s\n%s", err, p.String(), p2.String())
	}
	if strings.Contains(p.WithoutURLs().String(), "http") {
		t.Fatal("WithoutURLs kept a URL")
	}
	body := string(tlog.Checkpoint{Origin: "log.test", Size: 5, Hash: make([]byte, 32)}.Marshal())
	sign := func(idx ...int) []byte {
		var ss []note.Signer
		for _, i := range idx {
			ss = append(ss, signers[i])
		}
		b, err := note.Sign(&note.Note{Text: body}, ss...)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	now := time.Now()
	for _, tc := range []struct {
		name string
		by   []int
		fr   Freshness
		want bool
	}{
		{"nobody", nil, Freshness{}, false},
		{"two classic only", []int{0, 1}, Freshness{}, false},
		{"one classic + pq", []int{0, 3}, Freshness{}, false},
		{"two classic + pq", []int{0, 2, 3}, Freshness{}, true},
		{"fresh enough", []int{0, 1, 3}, Freshness{Now: now, MaxAge: time.Hour}, true},
		{"too old", []int{0, 1, 3}, Freshness{Now: now.Add(2 * time.Hour), MaxAge: time.Hour}, false},
		{"from the future", []int{0, 1, 3}, Freshness{Now: now.Add(-time.Hour), MaxAge: time.Hour}, false},
	} {
		var n []byte
		if len(tc.by) == 0 {
			// A note needs one signature; sign with an unrelated key.
			sk, _, _ := note.GenerateKey(rand.Reader, "log.test")
			s, _ := note.NewSigner(sk)
			n, _ = note.Sign(&note.Note{Text: body}, s)
		} else {
			n = sign(tc.by...)
		}
		r := p.Evaluate(n, tc.fr)
		if r.Satisfied != tc.want {
			t.Errorf("%s: satisfied %v, want %v (cosigned %v stale %v)", tc.name, r.Satisfied, tc.want, r.Cosigned, r.Stale)
		}
		if tc.fr.MaxAge > 0 && !tc.want && len(r.Stale) == 0 {
			t.Errorf("%s: no stale cosignature reported", tc.name)
		}
		if len(r.Invalid) != 0 {
			t.Errorf("%s: invalid cosignatures %v on an untouched note", tc.name, r.Invalid)
		}
	}

	// An altered cosignature of a policy witness is reported as invalid, and does not count.
	n := sign(0, 1, 3)
	lines := strings.Split(string(n), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "— w1.test ") {
			sig := []byte(l)
			j := len(sig) - 12 // inside the signature bytes, away from the base64 padding
			if sig[j] == 'A' {
				sig[j] = 'B'
			} else {
				sig[j] = 'A'
			}
			lines[i] = string(sig)
		}
	}
	r := p.Evaluate([]byte(strings.Join(lines, "\n")), Freshness{})
	if len(r.Invalid) != 1 || r.Invalid[0] != "w1" || r.Satisfied {
		t.Fatalf("altered cosignature: invalid %v, satisfied %v", r.Invalid, r.Satisfied)
	}
}

func TestParseRejects(t *testing.T) {
	_, vk := testKeys(t)
	w := "witness a " + vk[0] + "\nwitness b " + vk[1] + "\n"
	for _, tc := range []struct{ name, src string }{
		{"empty", ""},
		{"no quorum", w},
		{"two quorums", w + "quorum a\nquorum b\n"},
		{"unknown quorum", w + "quorum c\n"},
		{"unknown keyword", w + "witnesses x\nquorum a\n"},
		{"keyword as name", "witness group " + vk[0] + "\nquorum group\n"},
		{"duplicate name", w + "witness a " + vk[2] + "\nquorum a\n"},
		{"bad key", "witness a notakey\nquorum a\n"},
		{"log key as witness key", "witness a " + strings.Replace(vk[0], "+", "+", 1)[:10] + "\nquorum a\n"},
		{"bad url", "witness a " + vk[0] + " ftp://x\nquorum a\n"},
		{"extra field", "witness a " + vk[0] + " http://x y\nquorum a\n"},
		{"threshold zero", w + "group g 0 a b\nquorum g\n"},
		{"threshold too high", w + "group g 3 a b\nquorum g\n"},
		{"threshold leading zero", w + "group g 01 a b\nquorum g\n"},
		{"member twice", w + "group g 2 a a\nquorum g\n"},
		{"member undefined", w + "group g 1 a c\nquorum g\n"},
		{"group without members", w + "group g any\nquorum g\n"},
	} {
		if _, err := Parse([]byte(tc.src)); !errors.Is(err, ErrSyntax) {
			t.Errorf("%s: err %v, want ErrSyntax", tc.name, err)
		}
	}
}

// TestGolden parses the documented example policy in testdata.
func TestGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/example.policy")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if p.Quorum != "witnesses" || len(p.Witnesses) != 2 || p.Describe() != "group witnesses: 2 of w1, w2" {
		t.Fatalf("parsed %+v (%s)", p, p.Describe())
	}
	want, err := os.ReadFile("testdata/example.policy.printed")
	if err != nil {
		t.Fatal(err)
	}
	if p.String() != string(want) {
		t.Fatalf("printed:\n%s\nwant:\n%s", p.String(), want)
	}
}

func FuzzParse(f *testing.F) {
	_, vk := testKeys(f)
	f.Add([]byte("witness a " + vk[0] + "\nwitness b " + vk[3] + " https://w.example\ngroup g any a b\nquorum g\n"))
	f.Add([]byte("quorum none\n"))
	f.Add([]byte("log " + "x+01234567+AQ==" + "\nquorum none # c\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Parse(b)
		if err != nil {
			return
		}
		p2, err := Parse([]byte(p.String()))
		if err != nil {
			t.Fatalf("printed policy does not parse: %v\n%s", err, p.String())
		}
		if p2.String() != p.String() {
			t.Fatalf("round trip differs:\n%s\n%s", p.String(), p2.String())
		}
		p.Evaluate([]byte("x\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— x AAAA\n"), Freshness{})
	})
}

// TestCosignatureVerifierMatchesFormats checks the package's own cosignature/v1 verifier
// against transparency-dev/formats' signers and verifiers, for Ed25519 and ML-DSA-44.
func TestCosignatureVerifierMatchesFormats(t *testing.T) {
	signers, vkeys := testKeys(t)
	body := string(tlog.Checkpoint{Origin: "log.test", Size: 42, Hash: make([]byte, 32)}.Marshal())
	for i, s := range signers {
		ours, err := NewCosignatureVerifier(vkeys[i])
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := fnote.NewVerifierForCosignatureV1(vkeys[i])
		if err != nil {
			t.Fatal(err)
		}
		if ours.Name() != theirs.Name() || ours.KeyHash() != theirs.KeyHash() {
			t.Fatalf("key %d: name/hash %s/%08x, formats %s/%08x", i, ours.Name(), ours.KeyHash(), theirs.Name(), theirs.KeyHash())
		}
		n, err := note.Sign(&note.Note{Text: body}, s)
		if err != nil {
			t.Fatal(err)
		}
		opened, err := note.Open(n, note.VerifierList(ours))
		if err != nil {
			t.Fatalf("key %d: formats' cosignature does not verify with ours: %v", i, err)
		}
		if ts, err := CosignatureTime(opened.Sigs[0]); err != nil || time.Since(ts) > time.Minute {
			t.Errorf("key %d: timestamp %v %v", i, ts, err)
		}
		// A different body must not verify.
		other := []byte(strings.Replace(string(n), "\n42\n", "\n43\n", 1))
		if _, err := note.Open(other, note.VerifierList(ours)); err == nil {
			t.Errorf("key %d: a cosignature verified over another checkpoint", i)
		}
	}
}
