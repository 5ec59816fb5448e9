package verifier

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/evident-log/evident/verifier/internal/testbundle"
)

// TestHasControl holds the word-at-a-time test to a byte loop for every byte value at every
// position of a line of 19 bytes (two words and a tail) filled with a byte at an edge of the
// range (0x20, 0x21, 0x7f, 0x80, 0xa0, 0xff).
func TestHasControl(t *testing.T) {
	for _, fill := range []byte{0x20, 0x21, 0x7f, 0x80, 0xa0, 0xff} {
		for pos := range 19 {
			for c := range 256 {
				b := bytes.Repeat([]byte{fill}, 19)
				b[pos] = byte(c)
				want := false
				for _, x := range b {
					want = want || x < 0x20
				}
				if got := hasControl(b); got != want {
					t.Fatalf("hasControl(%x) = %v, want %v", b, got, want)
				}
			}
		}
	}
}

// TestSkipStringClean: on a line without control characters the quote-and-backslash search
// ends every string where the byte-by-byte scan does, and refuses what it refuses.
func TestSkipStringClean(t *testing.T) {
	for _, s := range []string{
		`""`, `"a"`, `"abc" `, `"a\"b"`, `"a\\"`, `"a\\\"b"x"`, `"\\\\"`, `"\u0041"`, `"é\"ü"`,
		`"`, `"abc`, `"a\"`, `"a\`, `"\\\"`, `x"a"`, ``,
		// Many escapes before the closing quote, and escaped quotes among them.
		`"` + strings.Repeat(`\n`, 5000) + `"`, `"` + strings.Repeat(`a\"`, 3000) + `b"`,
		`"` + strings.Repeat(`\\`, 4000) + `\"x"`, `"` + strings.Repeat(`\n`, 5000),
	} {
		t.Run(fmt.Sprintf("%.40q", s), func(t *testing.T) {
			b := []byte(s)
			if hasControl(b) {
				t.Fatal("test string has a control character")
			}
			wantEnd, wantErr := lineScanner{b: b}.skipString(0)
			gotEnd, gotErr := lineScanner{b: b, clean: true}.skipString(0)
			if gotEnd != wantEnd || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("clean: %d, %v; byte scan: %d, %v", gotEnd, gotErr, wantEnd, wantErr)
			}
		})
	}
}

// BenchmarkSkipStringEscapes skips a 512 KiB string of escapes on a clean line: the time
// grows with the string's length, not with its length times its escapes.
func BenchmarkSkipStringEscapes(b *testing.B) {
	line := []byte(`"` + strings.Repeat(`\n`, 256<<10) + `"`)
	for b.Loop() {
		if end, err := (lineScanner{b: line, clean: true}).skipString(0); err != nil || end != len(line) {
			b.Fatal(end, err)
		}
	}
}

// BenchmarkParseEntryLine splits the lines of a signed CHAP chain as exported (canonical
// records, no whitespace), reported per line.
func BenchmarkParseEntryLine(b *testing.B) {
	lines := testbundle.Build(b, testbundle.Options{Entries: 64, Participants: 8, PayloadSize: 200}).Lines()[10:]
	for b.Loop() {
		for _, l := range lines {
			if _, err := parseEntryLine(l); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/line")
}
