package oldfmt

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecode feeds the journal's payload decoder arbitrary bytes: it must not panic nor
// allocate past what the payload can hold, and every error wraps ErrCorrupt. The seeds are
// the payloads of package legacy's fixture journal (testdata/v8) and those of testdata/fuzz/FuzzDecode.
//
// The fixture's payloads are large seeds: fuzz with a short -fuzzminimizetime (go test
// -fuzz FuzzDecode -fuzztime 60s -fuzzminimizetime 2s), or each new input found is
// minimized for a minute with no execution counted.
func FuzzDecode(f *testing.F) {
	segs, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "v8", "journal", "*.seg"))
	for _, s := range segs {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		ps, err := ReadSegment(data, true)
		if err != nil {
			f.Fatal(err)
		}
		for _, p := range ps {
			f.Add(p)
		}
	}
	f.Add([]byte{PayloadFormat, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		batches, err := Decode(p)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		for _, b := range batches {
			for _, e := range b.Entries {
				if e.Chain != b.Chain.ID {
					t.Fatalf("entry of chain %q in a Batch of %q", e.Chain, b.Chain.ID)
				}
			}
		}
	})
}
