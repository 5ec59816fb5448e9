package bundle_test

import (
	"testing"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/testinfra"
)

// TestCountEntries: the entries lines of every chain are counted as the bundle streams,
// in pieces of any size; other files' newlines are not; a stream that is not a bundle, or
// stops short, is read to its end and counted as far as it goes.
func TestCountEntries(t *testing.T) {
	full := testinfra.StreamedBundle(t, 3, 0, 25000)
	for _, tc := range []struct {
		name  string
		data  []byte
		piece int
		want  uint64
	}{
		{"whole", full, len(full), 25003},
		{"one byte at a time", full, 1, 25003},
		{"odd pieces", full, 4093, 25003},
		{"no chain", testinfra.StreamedBundle(t), 512, 0},
		{"not a zip", []byte("PK\x03\x04 but nothing after"), 3, 0},
		{"cut in the last entries file", full[:len(full)/2], 1000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := bundle.NewEntryCounter()
			for b := tc.data; len(b) > 0; b = b[min(tc.piece, len(b)):] {
				if _, err := c.Write(b[:min(tc.piece, len(b))]); err != nil {
					t.Fatal(err)
				}
			}
			got := c.Close()
			if tc.name == "cut in the last entries file" {
				if got == 0 || got >= 25003 {
					t.Fatalf("counted %d of a bundle cut half way", got)
				}
				return
			}
			if got != tc.want {
				t.Fatalf("counted %d entries, want %d", got, tc.want)
			}
		})
	}
}

// FuzzEntryCounter: the hand-written zip walk ends on any bytes, in any write sizes, without
// a panic, and Close reports what Count does (TestCountEntries checks real bundles' counts).
func FuzzEntryCounter(f *testing.F) {
	f.Add(testinfra.StreamedBundle(f, 2, 0), uint8(7))
	f.Add(testinfra.StreamedBundle(f, 1), uint8(200))
	f.Add([]byte("PK\x03\x04"), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		c := bundle.NewEntryCounter()
		n := max(int(step), 1)
		for i := 0; i < len(data); i += n {
			if _, err := c.Write(data[i:min(i+n, len(data))]); err != nil {
				break // the walk stopped reading
			}
		}
		got := c.Close()
		if got != c.Count() {
			t.Fatalf("Close %d, Count %d", got, c.Count())
		}
	})
}
