package bundle

import (
	"archive/zip"
	"bytes"
	"testing"
	"time"
)

// TestZipEntriesCarryTheWriterTime reads a bundle as `unzip -l` does: every entry, the
// manifest included, is dated the time the writer was given (UTC, to the second), not the
// zip format's zero date of 1980.
func TestZipEntriesCarryTheWriterTime(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  time.Time // zero: the writer's default, its creation time
	}{
		{"export time", time.Date(2026, 11, 22, 9, 30, 15, 999_000_000, time.FixedZone("CET", 3600))},
		{"default", time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := time.Now().UTC().Truncate(time.Second)
			var buf bytes.Buffer
			w := NewWriter(&buf)
			want := tc.set.UTC().Truncate(time.Second)
			if !tc.set.IsZero() {
				w.SetModified(tc.set)
			}
			if err := w.WriteFile(LogKeyFile, []byte("o+1234+key\n")); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(Manifest{Producer: "test", Created: "2026-11-22T08:30:15.999Z", Log: LogInfo{Origin: "o"}}); err != nil {
				t.Fatal(err)
			}
			after := time.Now().UTC()
			zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			if err != nil {
				t.Fatal(err)
			}
			if len(zr.File) != 2 {
				t.Fatalf("%d entries, want 2", len(zr.File))
			}
			for _, f := range zr.File {
				got := f.Modified.UTC()
				if tc.set.IsZero() {
					if got.Before(before) || got.After(after) {
						t.Errorf("%s: modified %s, want between %s and %s", f.Name, got, before, after)
					}
				} else if !got.Equal(want) {
					t.Errorf("%s: modified %s, want %s", f.Name, got, want)
				}
				// The MS-DOS date that unzip -l prints is the UTC wall time too (to 2 s).
				if dos := msDosTime(f.ModifiedDate, f.ModifiedTime); dos.Year() < 2020 || (!tc.set.IsZero() && (dos.After(want) || want.Sub(dos) >= 2*time.Second)) {
					t.Errorf("%s: MS-DOS date %s", f.Name, dos)
				}
			}
		})
	}
}

func msDosTime(d, t uint16) time.Time {
	return time.Date(int(d>>9)+1980, time.Month(d>>5&0xf), int(d&0x1f), int(t>>11), int(t>>5&0x3f), int(t&0x1f)*2, 0, time.UTC)
}
