package htmlreport_test

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/chaptest"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/ledger/profile/chap/replay"
	"github.com/evident-log/evident/verifier"
	"github.com/evident-log/evident/verifier/htmlreport"
)

// verified opens and verifies the bundle at path; the caller closes the reader.
func verified(t testing.TB, path string) (*verifier.Report, *bundle.Reader) {
	t.Helper()
	r, err := bundle.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := verifier.Verify(context.Background(), r, verifier.Options{Now: func() time.Time { return chapscenario.JourneyStart }})
	if err != nil {
		t.Fatal(err)
	}
	rep.Bundle = "b.zip"
	return rep, r
}

// bundleReport is the single page of a verified bundle of a 1,000-entry chain (100 tasks), made
// by WriteBundle with the given bound, the report (its Story set) and the records.
func bundleReport(t testing.TB, dir string, tasks, max int) (string, *verifier.Report, *bundle.Reader, [][]byte) {
	t.Helper()
	const ws = "wsp_support_emea"
	recs := chaptest.TaskChain(t, ws, tasks, chaptest.TaskOptions{Note: "checked order history & the carrier's <report>", Anomalies: true})
	rep, r := verified(t, chaptest.UnsealedBundle(t, dir, ws, "htmlreport_test", recs))
	var buf bytes.Buffer
	if err := htmlreport.WriteBundle(context.Background(), &buf, rep, r, htmlreport.BundleOptions{MaxEntries: max}); err != nil {
		t.Fatal(err)
	}
	return buf.String(), rep, r, recs
}

var (
	hrefRE = regexp.MustCompile(`href="([^"]*)"`)
	idRE   = regexp.MustCompile(`\sid="([^"]*)"`)
)

// checkLinks checks that every link of every page in pages (file name → HTML) names a page of
// pages and an element id on it, and that no id is given twice on a page. It returns the
// number of links.
func checkLinks(t *testing.T, pages map[string]string) int {
	t.Helper()
	ids := map[string]map[string]bool{}
	for name, s := range pages {
		ids[name] = map[string]bool{}
		for _, m := range idRE.FindAllStringSubmatch(s, -1) {
			id := html.UnescapeString(m[1])
			if ids[name][id] {
				t.Errorf("%s: id %q given twice", name, id)
			}
			ids[name][id] = true
		}
	}
	n := 0
	for name, s := range pages {
		for _, m := range hrefRE.FindAllStringSubmatch(s, -1) {
			n++
			href := html.UnescapeString(m[1])
			file, frag, _ := strings.Cut(href, "#")
			if file == "" {
				file = name
			}
			if f, err := url.PathUnescape(frag); err == nil {
				frag = f
			}
			target, ok := ids[file]
			switch {
			case !ok:
				t.Errorf("%s: link %q to a page that does not exist", name, href)
			case frag != "" && !target[frag]:
				t.Errorf("%s: link %q to an anchor %s does not hold", name, href, file)
			}
		}
	}
	return n
}

// TestBundleReport writes the report of a real bundle as WriteBundle does (the replay's events
// spooled, never held) and checks it against the page Write makes of the same replay with
// every event in memory: the two must be the same bytes. It then checks what the page must
// hold: every finding, every task in the index, links that resolve.
func TestBundleReport(t *testing.T) {
	for _, max := range []int{0, 300} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			page, rep, r, recs := bundleReport(t, t.TempDir(), 100, max)
			defer r.Close()
			tl, err := replay.ReplayRaw("wsp_support_emea", "", recs)
			if err != nil {
				t.Fatal(err)
			}
			tl.Answers[7].Answer = []string{fmt.Sprintf("evident verify: %s (%d checks verified, %d not evaluated, %d broken)", rep.Verdict,
				rep.Count(verifier.Verified), rep.Count(verifier.NotEvaluated), rep.Count(verifier.Broken))}
			in := htmlreport.Input{Report: rep, Timelines: []*replay.Timeline{tl}, MaxEntries: max}
			if max == 0 {
				in.MaxEntries = -1
			}
			if want := string(render(t, in)); page != want {
				t.Fatalf("the streamed page differs from the page of the replay held in memory (%d and %d bytes)", len(page), len(want))
			}
			if len(tl.Findings) < 8 || tl.Impossible() < 4 {
				t.Fatalf("the chain has %d findings, %d impossible: the test needs both kinds", len(tl.Findings), tl.Impossible())
			}
			// Every finding, in full, in the summary, with its entry shown and linked.
			summary := page[strings.Index(page, `id="findings"`):strings.Index(page, `id="index"`)]
			for _, f := range tl.Findings {
				row := fmt.Sprintf(`<a href="#c1-%d">%d</a>`, f.Seq, f.Seq)
				if !strings.Contains(summary, row) || !strings.Contains(summary, html.EscapeString(f.Detail)) {
					t.Errorf("the findings lack %s at seq %d: %s", f.Code, f.Seq, f.Detail)
				}
			}
			if n := strings.Count(summary, `<tr><td class="s s-`); n != len(tl.Findings) {
				t.Errorf("%d finding rows, want %d", n, len(tl.Findings))
			}
			// The index lists every task (all 100 fit either bound), each with its verdict.
			index := page[strings.Index(page, `id="index"`):strings.Index(page, `id="detail"`)]
			if n := strings.Count(index, `<tr id="task-`); n != len(tl.Tasks) {
				t.Errorf("the index lists %d tasks, want %d", n, len(tl.Tasks))
			}
			for _, tk := range tl.Tasks {
				if !strings.Contains(index, `<tr id="task-`+tk.ID+`">`) {
					t.Errorf("the index lacks task %s", tk.ID)
				}
			}
			if !strings.Contains(index, `<td><span class="s s-impossible">impossible</span></td>`) || !strings.Contains(index, "<td>no finding</td>") {
				t.Error("the index does not give the tasks' verdicts")
			}
			if n := checkLinks(t, map[string]string{"index.html": page}); n < 2*len(tl.Findings) {
				t.Errorf("only %d links", n)
			}
		})
	}
}

// TestDir writes the folder report of a real bundle and checks that every link of every page
// resolves to a page and an anchor on it, that every entry is on exactly one entry page and
// every task on exactly one task page, and that the pages are as self-contained as the index.
func TestDir(t *testing.T) {
	dir := t.TempDir()
	const tasks = 1200 // 12,004 entries: three entry pages, two task pages
	_, rep, r, recs := bundleReport(t, dir, tasks, 0)
	defer r.Close()
	out := filepath.Join(dir, "report")
	if err := htmlreport.WriteBundle(context.Background(), nil, rep, r, htmlreport.BundleOptions{Dir: out, MaxEntries: 300}); err != nil {
		t.Fatal(err)
	}
	pages := readDir(t, out)
	want := []string{"index.html", "c1-entries-0001.html", "c1-entries-0002.html", "c1-entries-0003.html", "c1-tasks-0001.html", "c1-tasks-0002.html", "c1-answers.html"}
	if len(pages) != len(want) {
		t.Fatalf("%d pages, want %v", len(pages), want)
	}
	for _, name := range want {
		if _, ok := pages[name]; !ok {
			t.Fatalf("no page %s", name)
		}
	}
	if n := checkLinks(t, pages); n < len(recs)/10 {
		t.Errorf("only %d links", n)
	}
	seqs, taskRows := map[string]int{}, map[string]int{}
	rowRE := regexp.MustCompile(`<tr id="c1-(\d+)"`)
	for name, s := range pages {
		assertSelfContained(t, name, s)
		if strings.HasPrefix(name, "c1-entries-") {
			for _, m := range rowRE.FindAllStringSubmatch(s, -1) {
				seqs[m[1]]++
			}
		}
		if strings.HasPrefix(name, "c1-tasks-") {
			for _, m := range regexp.MustCompile(`<tr id="task-([^"]+)"`).FindAllStringSubmatch(s, -1) {
				taskRows[m[1]]++
			}
		}
	}
	if len(seqs) != len(recs) {
		t.Errorf("the entry pages hold %d entries, want %d", len(seqs), len(recs))
	}
	for seq, n := range seqs {
		if n != 1 {
			t.Errorf("seq %s on %d entry pages", seq, n)
		}
	}
	if len(taskRows) < tasks {
		t.Errorf("the task pages hold %d tasks, want at least %d", len(taskRows), tasks)
	}
	index := pages["index.html"]
	for _, s := range []string{" of 12,004 entries shown: the first 300,", `id="pages-1"`, `<a href="c1-entries-0002.html">5000–9999</a>`, `<a href="c1-tasks-0002.html">1001–`, "the entry pages</a>", `<a href="c1-answers.html">every answer</a>`} {
		if !strings.Contains(index, s) {
			t.Errorf("the index lacks %q", s)
		}
	}
	// The override, far past the bound, is in its task's section on a task page.
	if !strings.Contains(pages["c1-tasks-0001.html"], `<td class="new"><ins>full</ins></td>`) {
		t.Error("the task page lacks the override's diff")
	}
}

func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		pages[e.Name()] = string(b)
	}
	return pages
}

// assertSelfContained fails when a page could load anything or run a script: links within
// the folder (a page name, a fragment) load nothing; any other is refused.
func assertSelfContained(t *testing.T, name, s string) {
	t.Helper()
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)<script`), regexp.MustCompile(`(?i)<img`), regexp.MustCompile(`(?i)<link`),
		regexp.MustCompile(`(?i)<[^>]*\s(src|action)\s*=`), regexp.MustCompile(`(?i)href="(?:[a-z]+:|//|/|\.\.)`),
		regexp.MustCompile(`(?i)url\(`), regexp.MustCompile(`(?i)@import`),
	} {
		if loc := bad.FindStringIndex(s); loc != nil {
			t.Fatalf("%s is not self-contained: %q", name, s[loc[0]:min(len(s), loc[1]+40)])
		}
	}
	if !strings.Contains(s, `content="default-src 'none'; style-src 'unsafe-inline'"`) {
		t.Fatalf("%s has no Content-Security-Policy", name)
	}
}

// TestChromiumBundle opens the report of a real 1,004-entry bundle in headless Chromium, as
// one page and as a folder, and reads back the DOM each page built: it must load, show the
// verdict, the summary with the findings and the index first, and every link of the rendered
// pages must name a page of the folder and an element on it.
func TestChromiumBundle(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	page, rep, r, _ := bundleReport(t, dir, 100, htmlreport.DefaultMaxEntries)
	defer r.Close()
	single := filepath.Join(dir, "report.html")
	if err := os.WriteFile(single, []byte(page), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report")
	if err := htmlreport.WriteBundle(context.Background(), nil, rep, r, htmlreport.BundleOptions{Dir: out, MaxEntries: 300}); err != nil {
		t.Fatal(err)
	}
	dom := func(file string) string {
		return runChromium(t, bin, dir, 60*time.Second, "--dump-dom", "file://"+file)
	}
	s := dom(single)
	last := -1
	for _, want := range []string{`id="verdict"`, `id="summary"`, `id="findings"`, `id="index"`, `id="task-tsk_00050"`, `id="timeline-1"`, `id="answers-1"`} {
		i := strings.Index(s, want)
		if i < 0 {
			t.Fatalf("the rendered page lacks %q", want)
		}
		if i < last {
			t.Errorf("%q comes before what should precede it", want)
		}
		last = i
	}
	for _, want := range []string{"NOT_EVALUATED", "completed_unassigned", "all 1,004 entries shown"} {
		if !strings.Contains(s, want) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
	checkLinks(t, map[string]string{"report.html": s})
	pages := map[string]string{}
	for name := range readDir(t, out) {
		pages[name] = dom(filepath.Join(out, name))
	}
	if len(pages) != 4 {
		t.Fatalf("%d pages, want index.html, one entry page, one task page and the answers", len(pages))
	}
	for _, want := range []string{`id="pages-1"`, " of 1,004 entries shown: the first 300,"} {
		if !strings.Contains(pages["index.html"], want) {
			t.Errorf("the rendered index lacks %q", want)
		}
	}
	for _, want := range []string{`id="c1-0"`, `id="c1-1003"`, "Entries 0–1003 of wsp_support_emea"} {
		if !strings.Contains(pages["c1-entries-0001.html"], want) {
			t.Errorf("the rendered entry page lacks %q", want)
		}
	}
	if n := checkLinks(t, pages); n < 100 {
		t.Errorf("only %d links in the rendered folder", n)
	}
}
