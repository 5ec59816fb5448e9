package bundle

import (
	"os"
	"testing"
)

// FuzzParseSCITTIndex: any index that parses re-encodes to one that parses the same way.
func FuzzParseSCITTIndex(f *testing.F) {
	if b, err := os.ReadFile("testdata/scitt-registrations.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"format":"evident-scitt-registrations/v1","selection":"all","policies":[],"statements":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := ParseSCITTIndex(b)
		if err != nil {
			return
		}
		again, err := x.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseSCITTIndex(again); err != nil {
			t.Fatalf("re-encoded index does not parse: %v", err)
		}
	})
}
