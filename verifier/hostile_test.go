package verifier_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/trustfile"
	"github.com/evident-log/evident/verifier"
)

// TestHostileCorpus runs every case of testdata/hostile (regenerated first with
// -update-hostile): the bundle is opened with bundle.Open; a refusal (ambiguous, over a limit)
// becomes verifier.RefusedReport's report, anything else is verified with the case's pins.
// The verdict must be exactly the case's, each expected code must be on a check that is not
// verified, and no check may say verified about what an expected code says is broken.
func TestHostileCorpus(t *testing.T) {
	if *updateHostile {
		writeHostileCorpus(t)
	}
	cases := readHostileCases(t)
	var names []string
	for _, s := range hostileSpecs() {
		names = append(names, s.Name)
	}
	for _, c := range cases {
		if !slices.Contains(names, c.Name) {
			t.Errorf("case %s is in cases.json but not in the generator: run go generate ./verifier", c.Name)
		}
		names = slices.DeleteFunc(names, func(n string) bool { return n == c.Name })
	}
	if len(names) > 0 {
		t.Errorf("cases %v are in the generator but not in cases.json: run go generate ./verifier", names)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			rep := runHostile(t, filepath.Join(hostileDir, c.File), c.Pins)
			checkHostile(t, rep, c)
		})
	}
}

func readHostileCases(t *testing.T) []hostileCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(hostileDir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []hostileCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no cases")
	}
	return cases
}

// hostileOptions are the verifier options of a case: a fixed clock and the pinned trust file.
func hostileOptions(t *testing.T, pins string) verifier.Options {
	t.Helper()
	o := verifier.Options{Workers: 2, Now: fixedNow}
	if pins != "" {
		b, err := os.ReadFile(filepath.Join(hostileDir, pins))
		if err != nil {
			t.Fatal(err)
		}
		if o.Trust, err = trustfile.Parse(b); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

// runHostile opens and verifies a bundle as evident verify does, within a time bound.
func runHostile(t *testing.T, path, pins string) *verifier.Report {
	t.Helper()
	rep := runHostileTimeout(t, path, pins, nil)
	if rep == nil {
		t.FailNow()
	}
	return rep
}

// hostileTimeout bounds one case. Every case takes milliseconds; the bound only catches a
// verifier that hangs, and leaves room for the race detector on a loaded 2-core machine
// (one case took 6.7 s there beside fuzzers).
const hostileTimeout = 30 * time.Second

// runHostileTimeout is runHostile returning nil, the test failed, when the verifier does not
// answer within hostileTimeout; release (if set) is then called with path to unblock it.
func runHostileTimeout(t *testing.T, path, pins string, release func(string)) *verifier.Report {
	t.Helper()
	o := hostileOptions(t, pins)
	type result struct {
		rep *verifier.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := bundle.Open(path)
		if err != nil {
			if rep := verifier.RefusedReport(err, o); rep != nil {
				done <- result{rep: rep}
				return
			}
			done <- result{err: err}
			return
		}
		defer r.Close()
		ctx, cancel := context.WithTimeout(context.Background(), hostileTimeout)
		defer cancel()
		rep, err := verifier.Verify(ctx, r, o)
		done <- result{rep, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			t.Errorf("no report: %v (an ambiguous bundle or one over a limit must be reported, not unreadable)", res.err)
		}
		return res.rep
	case <-time.After(hostileTimeout):
		t.Errorf("the verifier did not answer within %v", hostileTimeout)
		if release != nil {
			release(path)
			<-done
		}
		return nil
	}
}

// checkHostile compares a report with a case's expectations.
func checkHostile(t *testing.T, rep *verifier.Report, c hostileCase) {
	t.Helper()
	if rep.Verdict != c.Verdict {
		t.Errorf("%s: verdict %s, want %s", c.Attack, rep.Verdict, c.Verdict)
	}
	if got := verifier.Fold(rep.Checks); got != rep.Verdict {
		t.Errorf("verdict %s, but the checks fold to %s", rep.Verdict, got)
	}
	for _, code := range c.Codes {
		found := false
		for _, ch := range rep.Checks {
			found = found || ch.Code == code && ch.Status != verifier.Verified
		}
		if !found {
			t.Errorf("%s: no check with code %s", c.Attack, code)
		}
	}
	if c.Where != "" && len(c.Codes) > 0 {
		found := false
		for _, ch := range rep.Checks {
			found = found || ch.Code == c.Codes[0] && ch.Where == c.Where
		}
		if !found {
			t.Errorf("%s: no %s check at %q", c.Attack, c.Codes[0], c.Where)
		}
	}
	// A check that is verified where another of the same name and place carries an expected
	// code contradicts it (a report may not say both).
	for _, bad := range rep.Checks {
		if bad.Status == verifier.Verified || !slices.Contains(c.Codes, bad.Code) {
			continue
		}
		for _, ch := range rep.Checks {
			if ch.Status == verifier.Verified && ch.Name == bad.Name && ch.Where == bad.Where && ch.Chain == bad.Chain && bad.Where != "" {
				t.Errorf("%s: %s at %q is both %s (%s) and verified", c.Attack, bad.Name, bad.Where, bad.Status, bad.Code)
			}
		}
	}
	if t.Failed() {
		t.Logf("report:\n%s", text(t, rep))
	}
}
