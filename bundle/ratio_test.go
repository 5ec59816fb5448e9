package bundle

import (
	"archive/zip"
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestWriterWithinRatio: a file the writer deflates is within the reader's ratio limit
// whatever it holds. A record of one repeated character, which a Coordinator may log and
// evidentd takes up to --max-record-bytes, is the most compressible content there is: at the
// writer's level it deflates to about 229:1, where a deflate bomb (level 9) reaches 1,028:1.
func TestWriterWithinRatio(t *testing.T) {
	for _, content := range []string{strings.Repeat("a", 8<<20), strings.Repeat("[", 8<<20), strings.Repeat(`\u0000`, 8<<20/6)} {
		var buf bytes.Buffer
		w := NewWriter(&buf)
		if err := w.WriteFile("chains/c/entries.jsonl", []byte(content)); err != nil {
			t.Fatal(err)
		}
		if err := w.z.Close(); err != nil {
			t.Fatal(err)
		}
		zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = scanZip(bytes.NewReader(buf.Bytes()), int64(buf.Len()), zr, DefaultLimits())
		var le *LimitError
		if errors.As(err, &le) && le.Limit == "ratio" {
			t.Fatalf("%.8q…: the writer's own file is over the ratio limit: %v", content, err)
		}
		f := zr.File[0]
		if ratio := f.UncompressedSize64 / f.CompressedSize64; ratio*100 > uint64(DefaultLimits().Ratio)*90 {
			t.Errorf("%.8q…: %d:1 is within a tenth of the limit %d:1", content, ratio, DefaultLimits().Ratio)
		}
	}
}
