package echo

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"short", "wsp_1", "wsp_1"},
		{"exactly Max", strings.Repeat("a", Max), strings.Repeat("a", Max)},
		{"one over", strings.Repeat("a", Max+1), strings.Repeat("a", Max) + "… (257 bytes)"},
		{"100 KB", strings.Repeat("b", 100000), strings.Repeat("b", Max) + "… (100000 bytes)"},
		// A 3-byte rune straddling the bound is left out whole.
		{"rune at the bound", strings.Repeat("a", Max-1) + "€" + "x", strings.Repeat("a", Max-1) + "… (259 bytes)"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := String(tc.in)
			if got != tc.want {
				t.Fatalf("String = %q, want %q", got, tc.want)
			}
			if utf8.ValidString(tc.in) && !utf8.ValidString(got) {
				t.Fatalf("String(%q) = %q: not valid UTF-8", tc.in, got)
			}
		})
	}
}

func TestQuote(t *testing.T) {
	if got := Quote(`a"b`); got != `"a\"b"` {
		t.Errorf("Quote = %s", got)
	}
	long := strings.Repeat("é", 1000) // 2000 bytes
	got := Quote(long)
	want := `"` + strings.Repeat("é", Max/2) + `"… (2000 bytes)`
	if got != want {
		t.Errorf("Quote = %s, want %s", got, want)
	}
}

func TestCut(t *testing.T) {
	if got := Cut("abcdef", 3); got != "abc… (6 bytes)" {
		t.Errorf("Cut = %q", got)
	}
	if got := Cut("abc", 3); got != "abc" {
		t.Errorf("Cut = %q", got)
	}
	// Invalid UTF-8 is cut at the bound, as it is.
	if got := Cut("\xff\xff\xff\xff\xff\xff", 2); got != "\xff\xff… (6 bytes)" {
		t.Errorf("Cut = %q", got)
	}
}
