package canonical

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// plainBytes is plainWord byte by byte, from the plain table str's byte loop uses.
func plainBytes(w string) bool {
	for i := range len(w) {
		if !plain[w[i]] {
			return false
		}
	}
	return true
}

// TestPlainWord holds plainWord to the plain table: every byte value at every position, every
// pair of byte values at two positions (a borrow from one byte must not hide or invent
// another), and random words.
func TestPlainWord(t *testing.T) {
	check := func(w []byte) {
		t.Helper()
		if got, want := plainWord(load64(string(w), 0)), plainBytes(string(w)); got != want {
			t.Fatalf("plainWord(%q) = %v, the plain table says %v", w, got, want)
		}
	}
	w := []byte("plainASC")
	for i := range 8 {
		for c := range 256 {
			v := append([]byte(nil), w...)
			v[i] = byte(c)
			check(v)
			for j := i + 1; j < 8; j++ {
				for d := range 256 {
					v[j] = byte(d)
					check(v)
				}
				v[j] = w[j]
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 {
		var v [8]byte
		for i := range v {
			// Mostly bytes near the edges of the plain range.
			switch r.IntN(4) {
			case 0:
				v[i] = byte(r.IntN(256))
			case 1:
				v[i] = "\x00\x1f\x20\x21\x22\x23\x5b\x5c\x5d\x7e\x7f\x80\xff"[r.IntN(13)]
			default:
				v[i] = byte(0x20 + r.IntN(0x60))
			}
		}
		check(v[:])
	}
}

// TestStrSkipsPlainWords checks str where skipPlain hands over to the byte loop: a quote,
// backslash, control character or non-ASCII byte at each offset of a long string.
func TestStrSkipsPlainWords(t *testing.T) {
	for n := range 40 {
		pre := strings.Repeat("a", n)
		for _, c := range []struct {
			mid  string
			want string // the value, or "" for a refusal
		}{
			{``, pre + "zz"},
			{`\"`, pre + `"zz`},
			{`\\`, pre + `\zz`},
			{`é`, pre + "ézz"},
			{"\x1f", ""},
			{"\xff", ""},
		} {
			in := `"` + pre + c.mid + `zz"`
			v, err := Parse([]byte(in), Options{})
			if c.want == "" {
				if err == nil {
					t.Fatalf("Parse(%q) = %q, want a refusal", in, v)
				}
				continue
			}
			if err != nil || v != c.want {
				t.Fatalf("Parse(%q) = %q, %v; want %q", in, v, err, c.want)
			}
		}
	}
}
