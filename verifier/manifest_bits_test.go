package verifier

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/verifier/internal/testbundle"
)

// TestManifestEveryBitCounts flips every bit of a genuine bundle's manifest.json, one at a
// time, in a zip whose checksums are recomputed (as a forger would), and verifies each. A flip
// must make the bundle broken (at open, or by a check), or make its manifest name a later
// format (refused to judge: upgrade), or change only a member the report lists as not
// evidence, with every check as before. Nothing may be merely unreadable (exit 3).
func TestManifestEveryBitCounts(t *testing.T) {
	seeds, trust := fuzzSeeds(t)
	s := seeds[0]
	o := Options{Workers: 1, Trust: trust, Now: func() time.Time { return testbundle.Base.Add(48 * time.Hour) }}
	files := s.all()
	verify := func(manifest []byte) (*Report, error) {
		r, err := bundle.OpenZipBytes(storedZip(t, replaceFile(files, bundle.ManifestFile, manifest)))
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return Verify(context.Background(), r, o)
	}
	base, err := verify(s.manifest)
	if err != nil || base.Verdict != Verified {
		t.Fatalf("genuine bundle: %v %v", base, err)
	}
	newer := regexp.MustCompile(`"format": "evident-bundle/v[1-9][0-9]*"`)
	counts := map[string]int{}
	for i := range s.manifest {
		for bit := range 8 {
			m := bytes.Clone(s.manifest)
			m[i] ^= 1 << bit
			rep, err := verify(m)
			switch {
			case errors.Is(err, bundle.ErrNewerFormat):
				if !newer.Match(m) {
					t.Errorf("byte %d bit %d: %v, but the manifest names no later format", i, bit, err)
				}
				counts["newer format: upgrade"]++
				continue
			case err != nil:
				rep = RefusedReport(err, o)
				if rep == nil {
					t.Errorf("byte %d bit %d: unreadable (exit 3), want broken: %v", i, bit, err)
					continue
				}
				counts["broken at open"]++
			case rep.Verdict == Broken:
				counts["broken"]++
			default:
				// Verified (or not) with the manifest changed: only a member the report
				// lists as not evidence may have changed, and no check.
				var got, want bundle.Manifest
				if json.Unmarshal(m, &got) != nil || json.Unmarshal(s.manifest, &want) != nil {
					t.Fatalf("byte %d bit %d: %s, but the manifest does not parse", i, bit, rep.Verdict)
				}
				got.Producer, got.Created, want.Producer, want.Created = "", "", "", ""
				if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(rep.Checks, base.Checks) {
					t.Errorf("byte %d bit %d (%q → %q): %s, though more than the not-evidence members changed", i, bit, s.manifest[i], m[i], rep.Verdict)
				}
				counts["not evidence: "+string(rep.Verdict)]++
				continue
			}
			if rep.ExitCode() != 1 {
				t.Errorf("byte %d bit %d: exit %d, want 1", i, bit, rep.ExitCode())
			}
		}
	}
	t.Logf("%d flips of a %d-byte manifest: %v", 8*len(s.manifest), len(s.manifest), counts)
	if counts["broken"] == 0 || counts["broken at open"] == 0 || counts["newer format: upgrade"] == 0 || counts["not evidence: verified"] == 0 {
		t.Errorf("a class of outcome never occurred: %v", counts)
	}
}
