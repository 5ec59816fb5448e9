package htmlreport_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/ledger/profile/chap/replay"
	"github.com/evident-log/evident/verifier"
	"github.com/evident-log/evident/verifier/htmlreport"
	"github.com/evident-log/evident/verifier/internal/testbundle"
)

const hostile = `<script>alert("x")</script><img src="https://evil.example/p.png">`

func sample(t *testing.T) htmlreport.Input {
	t.Helper()
	b := testbundle.Build(t, testbundle.Options{Entries: 20, UnchainedPrefix: 3, Rotate: true})
	rep, err := verifier.Verify(context.Background(), b.Reader(t), verifier.Options{Now: func() time.Time { return testbundle.Base }})
	if err != nil {
		t.Fatal(err)
	}
	rep.Checks = append(rep.Checks, verifier.Check{Name: "bundle.extra", Status: verifier.NotEvaluated, Detail: hostile, Evidence: []string{hostile}})
	rep.NotEvidence[0].Value = hostile // the producer: the bundle's own words
	j := chapscenario.Journeys()[5]    // D.6, the partner's override
	jb, err := chapscenario.BuildJourney(j)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := replay.ReplayRaw(j.Workspace, "", jb.Records())
	if err != nil {
		t.Fatal(err)
	}
	return htmlreport.Input{Report: rep, Timelines: []*replay.Timeline{tl}}
}

func render(t *testing.T, in htmlreport.Input) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := htmlreport.Write(&buf, in); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSelfContainedAndEscaped(t *testing.T) {
	out := render(t, sample(t))
	s := string(out)
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)<script`), regexp.MustCompile(`(?i)<img`), regexp.MustCompile(`(?i)<link`),
		// Links within the page (href="#…", the banner's to the findings) load nothing; any other is refused.
		regexp.MustCompile(`(?i)<[^>]*\s(src|action)\s*=`), regexp.MustCompile(`(?i)<[^>]*\shref\s*=\s*(?:"[^#]|'[^#]|[^"'#])`),
		regexp.MustCompile(`(?i)url\(`), regexp.MustCompile(`(?i)@import`),
	} {
		if loc := bad.FindStringIndex(s); loc != nil {
			t.Fatalf("report is not self-contained or not escaped: %q at %d", s[loc[0]:min(len(s), loc[1]+40)], loc[0])
		}
	}
	for _, want := range []string{"NOT_EVALUATED", "chain.linkage", "unchained_prefix", "&lt;script&gt;", "decide.override", "24_months_fees",
		"Coordinator linkage", "covered by the Coordinator's chain", "signed by nobody by design", "CHAP §9.3", "k1-2", "Content-Security-Policy",
		`id="not-evidence">Not evidence`, "manifest.producer", "manifest.created"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if err := htmlreport.Write(&bytes.Buffer{}, htmlreport.Input{}); err == nil {
		t.Fatal("a report without a verification report was written")
	}
}

// TestChromiumRender opens the report in headless Chromium with the network off, checks that
// it renders to a screenshot and that it prints (the report is meant to be printable).
func TestChromiumRender(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, render(t, sample(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "report.png")
	if keep := os.Getenv("EVIDENT_SCREENSHOT"); keep != "" {
		shot = keep
	}
	runChromium(t, bin, dir, 60*time.Second, "--screenshot="+shot, "--window-size=1280,2000", "file://"+page)
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	if len(png) < 20<<10 || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("screenshot of %d bytes is not a rendered page", len(png))
	}
	pdf := filepath.Join(dir, "report.pdf")
	runChromium(t, bin, dir, 60*time.Second, "--print-to-pdf="+pdf, "--no-pdf-header-footer", "file://"+page)
	if b, err := os.ReadFile(pdf); err != nil || !bytes.HasPrefix(b, []byte("%PDF-")) || len(b) < 10<<10 {
		t.Fatalf("no printed PDF (%v)", err)
	}
}
