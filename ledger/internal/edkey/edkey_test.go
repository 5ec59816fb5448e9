package edkey

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"filippo.io/edwards25519"
)

// stdVerify is crypto/ed25519.Verify made total: a key that is not 32 bytes refuses
// everything (the standard library panics).
func stdVerify(pub, msg, sig []byte) bool {
	if len(pub) != ed25519.PublicKeySize {
		return false
	}
	return ed25519.Verify(pub, msg, sig)
}

// ours verifies as a caller would: a key New refuses verifies nothing.
func ours(pub, msg, sig []byte) bool {
	k, err := New(pub)
	if err != nil {
		return false
	}
	return k.Verify(msg, sig)
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("hex %q: %v", s, err)
	}
	return b
}

func readVectors(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testvectors", "external", "ed25519", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// TestWycheproof holds Verify to Wycheproof's verdicts and to crypto/ed25519's on every
// vector (malleable S, non-canonical R, truncated and overlong signatures, edge keys).
func TestWycheproof(t *testing.T) {
	var file struct {
		TestGroups []struct {
			PublicKey struct {
				PK string `json:"pk"`
			} `json:"publicKey"`
			Tests []struct {
				TcID   int    `json:"tcId"`
				Msg    string `json:"msg"`
				Sig    string `json:"sig"`
				Result string `json:"result"`
			} `json:"tests"`
		} `json:"testGroups"`
	}
	readVectors(t, "wycheproof-ed25519_test.json", &file)
	n, valid := 0, 0
	for _, g := range file.TestGroups {
		pub := mustHex(t, g.PublicKey.PK)
		for _, tc := range g.Tests {
			msg, sig := mustHex(t, tc.Msg), mustHex(t, tc.Sig)
			got, std := ours(pub, msg, sig), stdVerify(pub, msg, sig)
			if got != std {
				t.Errorf("tcId %d: Verify %v, crypto/ed25519 %v", tc.TcID, got, std)
			}
			switch tc.Result {
			case "valid", "invalid":
				if want := tc.Result == "valid"; got != want {
					t.Errorf("tcId %d: Verify %v, Wycheproof says %s", tc.TcID, got, tc.Result)
				}
			default:
				t.Fatalf("tcId %d: result %q", tc.TcID, tc.Result)
			}
			if got {
				valid++
			}
			n++
		}
	}
	if n != 151 || valid != 88 {
		t.Fatalf("ran %d vectors, %d valid; the file has 151, 88 valid", n, valid)
	}
}

// TestSpeccheck holds Verify to the twelve edge cases of "Taming the many EdDSAs"
// (small-order keys and R, non-canonical encodings of A and R, S ≥ L, mixed-order keys):
// the verdicts the paper's authors published for Go, and crypto/ed25519's today.
func TestSpeccheck(t *testing.T) {
	var cases []struct {
		Message   string `json:"message"`
		PubKey    string `json:"pub_key"`
		Signature string `json:"signature"`
	}
	readVectors(t, "speccheck-cases.json", &cases)
	// The "Go" row of the speccheck results table, cases 0–11.
	goRow := []bool{true, true, true, true, false, false, false, false, false, false, false, true}
	if len(cases) != len(goRow) {
		t.Fatalf("%d cases, want %d", len(cases), len(goRow))
	}
	for i, c := range cases {
		pub, msg, sig := mustHex(t, c.PubKey), mustHex(t, c.Message), mustHex(t, c.Signature)
		got, std := ours(pub, msg, sig), stdVerify(pub, msg, sig)
		if got != std || got != goRow[i] {
			t.Errorf("case %d: Verify %v, crypto/ed25519 %v, published for Go %v", i, got, std, goRow[i])
		}
	}
}

// smallOrder are encodings of the eight points of small order, canonical and not.
var smallOrder = []string{
	"0100000000000000000000000000000000000000000000000000000000000000",
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	"0000000000000000000000000000000000000000000000000000000000000080",
	"0000000000000000000000000000000000000000000000000000000000000000",
	"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
	"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
	"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
	"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
	"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // y = p+1: non-canonical 1
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // y = p: non-canonical 0
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
	"0100000000000000000000000000000000000000000000000000000000000080",
}

// nonCanonical returns the encodings of y = p + d for d = 0 … 18 (p = 2^255 − 19), which
// are below 2^255 but not reduced, with either sign bit: the points they name, where they
// name one, are those of y = d.
func nonCanonical() [][]byte {
	var out [][]byte
	for d := range 19 {
		y := make([]byte, 32)
		y[0] = byte(0xed + d) // the low byte of p is 0xed: p + d carries for d ≥ 19 only
		for i := 1; i < 31; i++ {
			y[i] = 0xff
		}
		y[31] = 0x7f
		out = append(out, y, append(append([]byte(nil), y[:31]...), 0xff))
	}
	return out
}

func decodeAll(t *testing.T, hexes []string) [][]byte {
	var out [][]byte
	for _, h := range hexes {
		out = append(out, mustHex(t, h))
	}
	return out
}

// TestAgreesWithStdlib compares Verify with crypto/ed25519 over valid signatures and
// every single-bit change of signature, message and key, signatures with S + L, and keys
// and R of small order or encoded with y ≥ p.
func TestAgreesWithStdlib(t *testing.T) {
	rng := rand.New(rand.NewChaCha8([32]byte{'e', 'd', 'k', 'e', 'y'}))
	check := func(what string, pub, msg, sig []byte) {
		t.Helper()
		if got, std := ours(pub, msg, sig), stdVerify(pub, msg, sig); got != std {
			t.Fatalf("%s: Verify %v, crypto/ed25519 %v (pub %x msg %x sig %x)", what, got, std, pub, msg, sig)
		}
	}
	for i := range 24 {
		var seed [ed25519.SeedSize]byte
		for j := range seed {
			seed[j] = byte(rng.Uint32())
		}
		priv := ed25519.NewKeyFromSeed(seed[:])
		pub := priv.Public().(ed25519.PublicKey)
		msg := make([]byte, rng.IntN(600))
		for j := range msg {
			msg[j] = byte(rng.Uint32())
		}
		sig := ed25519.Sign(priv, msg)
		if !ours(pub, msg, sig) {
			t.Fatalf("key %d: a valid signature is refused", i)
		}
		flip := func(b []byte, bit int) []byte {
			c := append([]byte(nil), b...)
			c[bit/8] ^= 1 << (bit % 8)
			return c
		}
		for bit := range 8 * len(sig) {
			check("signature bit", pub, msg, flip(sig, bit))
		}
		for bit := range 8 * len(pub) {
			check("key bit", flip(pub, bit), msg, sig)
		}
		for bit := range min(8*len(msg), 64) {
			check("message bit", pub, flip(msg, bit), sig)
		}
		// S + L: the same scalar, not canonically encoded.
		check("S+L", pub, msg, addL(t, sig))
		for _, p := range append(nonCanonical(), decodeAll(t, smallOrder)...) {
			check("small-order key", p, msg, sig)
			check("small-order R", pub, msg, append(p, sig[32:]...))
			check("small-order key and R", p, msg, append(append([]byte(nil), p...), sig[32:]...))
		}
		check("short signature", pub, msg, sig[:63])
		check("long signature", pub, msg, append(append([]byte(nil), sig...), 0))
		check("short key", pub[:31], msg, sig)
	}
}

// addL returns sig with L added to its S (S + L < 2^256 for every canonical S).
func addL(t *testing.T, sig []byte) []byte {
	t.Helper()
	l := mustHex(t, "edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010")
	out := append([]byte(nil), sig...)
	carry := 0
	for i := range 32 {
		v := int(out[32+i]) + int(l[i]) + carry
		out[32+i] = byte(v)
		carry = v >> 8
	}
	if _, err := edwards25519.NewScalar().SetCanonicalBytes(out[32:]); err == nil {
		t.Fatal("S + L is canonical")
	}
	return out
}

func TestNewRefuses(t *testing.T) {
	for _, pub := range [][]byte{nil, make([]byte, 31), make([]byte, 33), mustHex(t, "0200000000000000000000000000000000000000000000000000000000000000")} {
		if _, err := New(pub); err != ErrKey {
			t.Errorf("New(%x) = %v, want ErrKey", pub, err)
		}
	}
	pub := mustHex(t, "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
	k, err := New(pub)
	if err != nil {
		t.Fatal(err)
	}
	if !k.Is(pub) || k.Is(pub[:31]) || k.Is(make([]byte, 32)) {
		t.Fatal("Is does not tell the key's encoding from others")
	}
}

func FuzzVerify(f *testing.F) {
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	pub := priv.Public().(ed25519.PublicKey)
	f.Add([]byte(pub), []byte("m"), ed25519.Sign(priv, []byte("m")))
	f.Add([]byte(pub), []byte{}, make([]byte, 64))
	for _, so := range smallOrder[:4] {
		p, _ := hex.DecodeString(so)
		f.Add(p, []byte("m"), append(p, make([]byte, 32)...))
	}
	f.Fuzz(func(t *testing.T, pub, msg, sig []byte) {
		if got, std := ours(pub, msg, sig), stdVerify(pub, msg, sig); got != std {
			t.Fatalf("Verify %v, crypto/ed25519 %v", got, std)
		}
	})
}

func benchmarkSig(b *testing.B) (ed25519.PublicKey, []byte, []byte) {
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	msg := make([]byte, 500)
	return priv.Public().(ed25519.PublicKey), msg, ed25519.Sign(priv, msg)
}

// BenchmarkVerify and BenchmarkStdlibVerify compare one verification of a 500-byte message.
func BenchmarkVerify(b *testing.B) {
	pub, msg, sig := benchmarkSig(b)
	k, err := New(pub)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !k.Verify(msg, sig) {
			b.Fatal("refused")
		}
	}
}

func BenchmarkStdlibVerify(b *testing.B) {
	pub, msg, sig := benchmarkSig(b)
	b.ReportAllocs()
	for b.Loop() {
		if !ed25519.Verify(pub, msg, sig) {
			b.Fatal("refused")
		}
	}
}
