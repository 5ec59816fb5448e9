package testinfra

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/evident-log/evident/bundle"
)

// StreamedBundle writes a bundle with bundle.Writer, as evidentd streams one: chains with the
// given numbers of entry lines, each beside other files. Its manifest is empty: it is for
// what reads a bundle's bytes as they pass (the export progress), not for the verifier.
func StreamedBundle(tb testing.TB, lines ...int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w := bundle.NewWriter(&buf)
	if err := w.WriteFile(bundle.LogKeyFile, []byte("key\n")); err != nil {
		tb.Fatal(err)
	}
	for i, n := range lines {
		dir := bundle.ChainDir(fmt.Sprintf("ws-%d", i))
		var b strings.Builder
		for q := range n {
			fmt.Fprintf(&b, `{"seq":%d,"record":{"text":"%s"}}`+"\n", q, strings.Repeat("x", q%200))
		}
		if err := w.WriteFile(bundle.EntriesFile(dir), []byte(b.String())); err != nil {
			tb.Fatal(err)
		}
		if err := w.WriteFile(bundle.SealFile(dir, 0), bytes.Repeat([]byte("\n"), 77)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(bundle.Manifest{}); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}
