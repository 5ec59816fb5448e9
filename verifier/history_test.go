package verifier_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/trustfile"
	"github.com/evident-log/evident/verifier"
)

// historyDir is the corpus of bundles exported by earlier commits (README.md there).
const historyDir = "testdata/history"

var updateHistory = flag.String("update-history", "", `write the .expect.json of testdata/history's bundles from today's verifier: "new" (bundles without one) or "all"`)

// historyNow is the verifier's clock for the corpus: years after every bundle was made, as
// a regulator reads one.
var historyNow = func() time.Time { return time.Date(2036, 11, 28, 0, 0, 0, 0, time.UTC) }

// historyCheck is one check of a report as the expectations hold it: the detail's wording
// is not part of it.
type historyCheck struct {
	Name   string `json:"name"`
	Chain  string `json:"chain,omitempty"`
	Status string `json:"status"`
	Code   string `json:"code,omitempty"`
	Where  string `json:"where,omitempty"`
}

// historyExpect is a bundle's .expect.json: what today's verifier reports for it.
type historyExpect struct {
	// Note explains a verdict other than verified; it is written by hand and kept by
	// -update-history. A bundle that does not verify without one fails the test.
	Note     string         `json:"note,omitempty"`
	Verdict  string         `json:"verdict"`
	ExitCode int            `json:"exit_code"`
	Checks   []historyCheck `json:"checks"`
}

// historyAbout is the part of a bundle's .about.json (written by generate.sh) the test reads.
type historyAbout struct {
	Commit string `json:"commit"`
	SHA256 string `json:"sha256"`
}

// TestBundleHistory verifies every bundle of testdata/history — real bytes exported by the
// evidentd of an earlier commit (generate.sh) — with today's verifier, offline, pinning the
// keys that evidentd held (the .trust.json recorded beside the bundle, as evident verify
// --trust pins them). The verdict, exit code and every check (name, chain, status, code,
// place) must be the bundle's .expect.json; a verdict other than verified must be explained
// there by a note.
func TestBundleHistory(t *testing.T) {
	switch *updateHistory {
	case "", "new", "all":
	default:
		t.Fatalf(`-update-history=%q: want "new" or "all"`, *updateHistory)
	}
	zips, err := filepath.Glob(filepath.Join(historyDir, "*.zip"))
	if err != nil {
		t.Fatal(err)
	}
	if len(zips) == 0 {
		t.Fatal("no bundle in " + historyDir)
	}
	checkHistoryEntries(t, zips)
	for _, zip := range zips {
		base := strings.TrimSuffix(zip, ".zip")
		t.Run(filepath.Base(base), func(t *testing.T) {
			t.Parallel()
			checkHistoryAbout(t, zip, base)
			rep := verifyHistory(t, zip, base+".trust.json")
			got := historyExpect{Verdict: string(rep.Verdict), ExitCode: rep.ExitCode(), Checks: historyChecks(rep)}
			path := base + ".expect.json"
			var want historyExpect
			b, err := os.ReadFile(path)
			switch {
			case err == nil:
				if err := json.Unmarshal(b, &want); err != nil {
					t.Fatalf("%s: %v", path, err)
				}
			case !os.IsNotExist(err) || *updateHistory == "":
				t.Fatalf("%v (write it with -update-history=new)", err)
			}
			if *updateHistory == "all" || *updateHistory == "new" && b == nil {
				got.Note = want.Note
				writeHistoryExpect(t, path, got)
				want = got
			}
			if got.Verdict != want.Verdict || got.ExitCode != want.ExitCode {
				t.Errorf("verdict %s (exit %d), want %s (exit %d)", got.Verdict, got.ExitCode, want.Verdict, want.ExitCode)
			}
			compareHistoryChecks(t, got.Checks, want.Checks)
			if want.Verdict != string(verifier.Verified) && want.Note == "" {
				t.Errorf("today's verifier does not verify this bundle (%s, exit %d) and %s has no note saying why", want.Verdict, want.ExitCode, path)
			}
			if t.Failed() {
				t.Logf("report:\n%s", text(t, rep))
			}
		})
	}
}

// checkHistoryEntries checks that every entry of commits.tsv has bundles and every bundle
// an entry: NN-<commit>-<label>-<export>.zip.
func checkHistoryEntries(t *testing.T, zips []string) {
	t.Helper()
	f, err := os.Open(filepath.Join(historyDir, "commits.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var prefixes []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 5 {
			t.Fatalf("commits.tsv: %d fields, want 5: %q", len(fields), line)
		}
		prefixes = append(prefixes, fields[0]+"-"+fields[1]+"-"+fields[2]+"-")
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, p := range prefixes {
		if !slices.ContainsFunc(zips, func(z string) bool { return strings.HasPrefix(filepath.Base(z), p) }) {
			t.Errorf("commits.tsv entry %s has no bundle: run generate.sh for it", strings.TrimSuffix(p, "-"))
		}
	}
	for _, z := range zips {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(filepath.Base(z), p) }) {
			t.Errorf("%s belongs to no entry of commits.tsv", filepath.Base(z))
		}
	}
}

// checkHistoryAbout checks that the bundle is the one generate.sh wrote: its SHA-256 is the
// one recorded then. A corpus bundle is never rewritten.
func checkHistoryAbout(t *testing.T, zip, base string) {
	t.Helper()
	b, err := os.ReadFile(base + ".about.json")
	if err != nil {
		t.Fatal(err)
	}
	var about historyAbout
	if err := json.Unmarshal(b, &about); err != nil {
		t.Fatalf("%s.about.json: %v", base, err)
	}
	z, err := os.ReadFile(zip)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(z)
	if got := hex.EncodeToString(sum[:]); got != about.SHA256 {
		t.Errorf("bundle SHA-256 %s, but it was exported by %s as %s: corpus bundles are never rewritten", got, about.Commit, about.SHA256)
	}
	if !strings.Contains(filepath.Base(base), "-"+about.Commit[:7]+"-") {
		t.Errorf("bundle name does not carry its commit %s", about.Commit[:7])
	}
}

// verifyHistory opens and verifies a bundle as evident verify --trust does.
func verifyHistory(t *testing.T, zip, trust string) *verifier.Report {
	t.Helper()
	o := verifier.Options{Workers: 2, Now: historyNow}
	b, err := os.ReadFile(trust)
	if err != nil {
		t.Fatal(err)
	}
	if o.Trust, err = trustfile.Parse(b); err != nil {
		t.Fatalf("%s: %v", trust, err)
	}
	r, err := bundle.Open(zip)
	if err != nil {
		if rep := verifier.RefusedReport(err, o); rep != nil {
			return rep
		}
		t.Fatalf("today's bundle reader cannot open it: %v", err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := verifier.Verify(ctx, r, o)
	if err != nil {
		t.Fatalf("no report: %v", err)
	}
	return rep
}

// historyChecks returns a report's checks in a stable order.
func historyChecks(rep *verifier.Report) []historyCheck {
	out := make([]historyCheck, 0, len(rep.Checks))
	for _, c := range rep.Checks {
		out = append(out, historyCheck{Name: string(c.Name), Chain: c.Chain, Status: string(c.Status), Code: string(c.Code), Where: c.Where})
	}
	slices.SortStableFunc(out, func(a, b historyCheck) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Chain, b.Chain), cmp.Compare(a.Where, b.Where),
			cmp.Compare(a.Status, b.Status), cmp.Compare(a.Code, b.Code))
	})
	return out
}

func compareHistoryChecks(t *testing.T, got, want []historyCheck) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	if len(got) != len(want) {
		t.Errorf("%d checks, want %d", len(got), len(want))
	}
	for _, c := range want {
		if !slices.Contains(got, c) {
			t.Errorf("missing check %+v", c)
		}
	}
	for _, c := range got {
		if !slices.Contains(want, c) {
			t.Errorf("unexpected check %+v", c)
		}
	}
}

func writeHistoryExpect(t *testing.T, path string, e historyExpect) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(e); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
