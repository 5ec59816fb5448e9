package bundle

import (
	"archive/zip"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// benchZip writes a bundle of n small seal files (plus entries) to a file and returns its path.
func benchZip(b *testing.B, n int) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "bundle.zip")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := NewWriter(f)
	for i := range n {
		if err := w.WriteFile(SealFile("ws", uint64(i)), fmt.Appendf(nil, "seal %d", i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.WriteFile(EntriesFile("ws"), []byte("{}\n")); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(Manifest{Log: LogInfo{Origin: "example.org/log"}}); err != nil {
		b.Fatal(err)
	}
	f.Close()
	return p
}

// BenchmarkOpenZip opens a bundle of 10,000 files with every ambiguity check (names, local
// headers against the central directory, manifest listing); BenchmarkOpenZipPlain is what
// archive/zip alone costs on the same file, for the ratio.
func BenchmarkOpenZip(b *testing.B) {
	p := benchZip(b, 10000)
	b.ReportAllocs()
	for b.Loop() {
		r, err := Open(p)
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}

func BenchmarkOpenZipPlain(b *testing.B) {
	p := benchZip(b, 10000)
	b.ReportAllocs()
	for b.Loop() {
		r, err := zip.OpenReader(p)
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}
