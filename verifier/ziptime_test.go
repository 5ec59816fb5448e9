package verifier_test

import (
	"archive/zip"
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/verifier/internal/testbundle"
)

// TestZipTimesAreIgnored: the dates of a bundle's zip entries are not evidence. The same
// bundle re-dated to the zip epoch, to the future, or with entries dated apart verifies to
// the same report, byte for byte.
func TestZipTimesAreIgnored(t *testing.T) {
	b := testbundle.Build(t, testbundle.Options{Entries: 12, SealAt: []int{5, 12}, CheckpointFiles: true})
	orig := b.Zip(t)
	want := reportJSON(t, orig)
	for _, tc := range []struct {
		name string
		date func(i int) time.Time
	}{
		{"zip epoch", func(int) time.Time { return time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"future", func(int) time.Time { return time.Date(2099, 12, 31, 23, 59, 58, 0, time.UTC) }},
		{"each its own", func(i int) time.Time { return time.Date(2001+i, 2, 3, 4, 5, 6, 0, time.UTC) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := redate(t, orig, tc.date)
			zr, _ := zip.NewReader(bytes.NewReader(z), int64(len(z)))
			if got := zr.File[0].Modified.UTC(); !got.Equal(tc.date(0)) {
				t.Fatalf("re-dated entry carries %s", got)
			}
			if got := reportJSON(t, z); got != want {
				t.Fatalf("the report changed with the zip dates:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// redate copies a zip, entry by entry without recompressing, with each entry's date replaced.
func redate(t *testing.T, z []byte, date func(i int) time.Time) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i, f := range zr.File {
		fh := f.FileHeader
		d := date(i) // CreateRaw writes the MS-DOS date fields as given
		fh.Modified, fh.Extra = d, nil
		fh.ModifiedDate = uint16(d.Day() + int(d.Month())<<5 + (d.Year()-1980)<<9)
		fh.ModifiedTime = uint16(d.Second()/2 + d.Minute()<<5 + d.Hour()<<11)
		w, err := zw.CreateRaw(&fh)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := f.OpenRaw()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, rc); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func reportJSON(t *testing.T, z []byte) string {
	t.Helper()
	r, err := bundle.OpenZipBytes(z)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := verify(t, r).WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
