package htmlreport_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/ledger/profile/chap/replay"
	"github.com/evident-log/evident/verifier"
	"github.com/evident-log/evident/verifier/htmlreport"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.html from the current renderer")

// synthetic is a report and a CHAP timeline of n entries, perTask entries to a task, built
// directly as the model the renderer reads: replaying a million signed records takes minutes,
// rendering must not. A refusal sits at seq n*7/10, a finding at n*9/10, and the report holds
// a broken check at seq n*8/10.
func synthetic(n, perTask int) htmlreport.Input {
	const chain = "wsp_claims_emea"
	tl := &replay.Timeline{Chain: chain, Entries: uint64(n), Events: make([]replay.Event, n)}
	methods := []string{"task.update", "artefact.submit", "review.request", "task.accept"}
	from := []string{"agent:claims-triage#v4.2", "human:harper.s@insurer.example", "human:ops-lead@insurer.example"}
	tss := make([]string, 60)
	for i := range tss {
		tss[i] = fmt.Sprintf("2026-03-01T10:%02d:00Z", i)
	}
	tasks := make([]string, n/perTask+1)
	for i := range tasks {
		tasks[i] = fmt.Sprintf("tsk_%07d", i)
		tl.Tasks = append(tl.Tasks, &replay.Task{ID: tasks[i], Kind: "claim_review", Status: "in_progress", CreatedBy: from[1],
			AssignedBy: []string{from[1]}, Assignees: []string{from[0]}})
	}
	for i := range tl.Events {
		tl.Events[i] = replay.Event{Seq: uint64(i), TS: tss[i%len(tss)], Method: methods[i%len(methods)], From: from[i%len(from)],
			Role: "member", Kid: "k-3f9a1c2e", Task: tasks[i/perTask], Mode: "production", Summary: "checked the carrier report and photos; preparing the reply"}
	}
	refused, broken, found := n*7/10, n*8/10, n*9/10
	tl.Events[refused].Refusal = true
	tl.Events[refused].Summary = "REFUSED by the Coordinator: task.complete from agent:claims-triage#v4.2 (not_assigned)"
	tl.Findings = []replay.Finding{{Severity: replay.Impossible, Code: replay.CodeCompletedUnassigned, Seq: uint64(found), Task: tasks[found/perTask],
		Detail: "agent:claims-triage#v4.2 completed a task that was never assigned"}}
	override := replay.Decision{Seq: uint64(n / 2), Kind: "override", By: from[1], Kid: "k-3f9a1c2e", Mode: "production", LogicalID: "lgl_settlement",
		Diff:   `[{"op":"replace","path":"/settlement/amount","value":4800}]`,
		Base:   `{"settlement":{"amount":4200,"currency":"GBP"}}`,
		Result: `{"settlement":{"amount":4800,"currency":"GBP"}}`, Rationale: "bereavement: goodwill payment"}
	tl.Tasks[n/2/perTask].Decisions = []replay.Decision{override}
	rep := &verifier.Report{Format: verifier.ReportFormat, Bundle: "claims.evident.zip", Verdict: verifier.Broken, Generated: "2026-03-02T00:00:00Z",
		NotEvidence: []verifier.NotEvidence{{Field: "manifest.producer", Value: "evidentd 0.1.0", Why: "the software the exporter says it is; nothing signs it"},
			{Field: "manifest.created", Value: "2026-03-01T23:59:58.000Z", Why: "when the exporter says it wrote the bundle; nothing signs it"}},
		Log: verifier.LogReport{Origin: "evident.example/log", Key: "evident.example/log+6f1c2a3b"}}
	rep.Checks = []verifier.Check{
		{Name: verifier.CheckTrustLogKey, Status: verifier.NotEvaluated, Code: verifier.CodeTrustNotPinned, Where: "trust/log.vkey",
			Detail: "log key evident.example/log+6f1c2a3b taken from the bundle, not pinned"},
		{Name: verifier.CheckTrustIssuers, Status: verifier.NotEvaluated, Code: verifier.CodeTrustNotPinned, Where: "trust/issuers.cbor",
			Detail: "1 issuer key taken from the bundle, not pinned", Evidence: []string{"kid 309a5bc7705b9507a6a70a397eb2a1075f5aa5f597dda956925e9adc528e3619"}},
		{Name: "chain.entries", Chain: chain, Status: verifier.Broken, Code: "entry_link_mismatch", Where: fmt.Sprintf("seq %d", broken),
			Detail: "the line's link is not the recomputed link"},
		{Name: "chain.signatures", Chain: chain, Status: verifier.Verified, Detail: fmt.Sprintf("%d record signature(s) verified", n)},
		{Name: "witness.quorum", Status: verifier.Verified, Detail: "1 of 1 witness cosigned every checkpoint"},
	}
	rep.Chains = []verifier.ChainReport{{ID: chain, Profile: chap.Profile, Size: uint64(n),
		Head: "sha256:6093f4ec3cbcbadd08c3d605d208ae2cad6e4be17ad910af3647a459b3daf4a5", Root: "sha256:f144155cd1e3e8c7ed813b0e640314bff1d054db68b2a2c94e5511a4df90fe8d",
		Coverage: verifier.Coverage{EntriesTotal: uint64(n), EntriesChecked: uint64(broken + 1), SignaturesVerified: uint64(n), SealsTotal: 3, SealsVerified: 3, EntriesAnchored: uint64(n)}}}
	return htmlreport.Input{Report: rep, Timelines: []*replay.Timeline{tl}}
}

// rows returns the timeline rows of a page by their first cell (seq), and the gap rows.
func rows(page string) (seqs []string, gaps int) {
	tb := page[strings.Index(page, `id="timeline-1"`):]
	tb = tb[:strings.Index(tb, "</table>")]
	for _, m := range regexp.MustCompile(`<tr id="c1-\d+"(?: class="f-[a-z]+")?><td class="n">(\d+)</td>`).FindAllStringSubmatch(tb, -1) {
		seqs = append(seqs, m[1])
	}
	return seqs, strings.Count(tb, `<tr class="gap">`)
}

func TestTimelineLimit(t *testing.T) {
	const n, perTask = 10_000, 10
	for _, tc := range []struct {
		name       string
		max        int
		rows, gaps int
		line       string
	}{
		{"all", -1, n, 0, "all 10,000 entries shown"},
		{"default", 0, htmlreport.DefaultMaxEntries + 3, 4, "2,003 of 10,000 entries shown"},
		{"100", 100, 103, 4, "103 of 10,000 entries shown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := synthetic(n, perTask)
			in.MaxEntries = tc.max
			page := string(render(t, in))
			seqs, gaps := rows(page)
			if len(seqs) != tc.rows || gaps != tc.gaps {
				t.Fatalf("%d rows and %d gaps, want %d and %d", len(seqs), gaps, tc.rows, tc.gaps)
			}
			if !strings.Contains(page, tc.line) {
				t.Fatalf("page lacks %q", tc.line)
			}
			// The refused entry, the broken one and the one with a finding are shown whatever the bound.
			for _, want := range []string{`<tr id="c1-7000" class="f-refused"><td class="n">7000<`, `<tr id="c1-8000" class="f-broken"><td class="n">8000<`, `<tr id="c1-9000" class="f-finding"><td class="n">9000<`} {
				if !strings.Contains(page, want) {
					t.Errorf("page lacks the row %s", want)
				}
			}
			if tc.max >= 0 {
				if !strings.Contains(page, "chains/wsp_claims_emea/entries.jsonl") || !strings.Contains(page, "--max-entries 0") {
					t.Error("the limit line does not say where the full list is")
				}
				// Task sections are bounded too, and the task with a finding is kept.
				bound := tc.max
				if bound == 0 {
					bound = htmlreport.DefaultMaxEntries
				}
				tasks := strings.Count(page, `<tr id="task-`)
				if want := min(n/perTask+1, bound+1); tasks != want {
					t.Errorf("%d task sections, want %d", tasks, want)
				}
				if !strings.Contains(page, `id="task-tsk_0000900"`) {
					t.Error("the task with a finding was elided")
				}
			}
		})
	}
}

// TestMillionEntries renders the report of a 1,000,000-entry chain with the default bound:
// the page must stay small enough for a browser to open at once.
func TestMillionEntries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a million-entry timeline")
	}
	in := synthetic(1_000_000, 10)
	start := time.Now()
	page := render(t, in)
	t.Logf("1,000,000 entries, 100,001 tasks: %d bytes in %v", len(page), time.Since(start))
	if len(page) > 5<<20 {
		t.Fatalf("page of %d bytes, want at most 5 MiB", len(page))
	}
	s := string(page)
	for _, want := range []string{"2,003 of 1,000,000 entries shown", "2,001 of 100,001 tasks shown", `id="unpinned"`, `class="f-broken"`, "<del>4200</del>", "<ins>4800</ins>"} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestSummaryFirst checks the page's order: verdict, summary (broken, not evaluated, verified,
// chains, seals, keys), then the detail.
func TestSummaryFirst(t *testing.T) {
	s := string(render(t, synthetic(500, 10)))
	last := -1
	for _, id := range []string{`id="verdict"`, `id="unpinned"`, `id="summary"`, `id="broken"`, `id="not-evaluated"`, `id="verified"`,
		`id="chains"`, `id="seals"`, `id="keys"`, `id="findings"`, `id="findings-1"`, `id="index"`, `id="tasks-1"`, `id="detail"`, `id="log"`, `id="timeline-1"`, `id="answers-1"`, "<footer"} {
		i := strings.Index(s, id)
		if i < 0 {
			t.Fatalf("page lacks %s", id)
		}
		if i < last {
			t.Fatalf("%s comes before what should precede it", id)
		}
		last = i
	}
	// The broken check is in the summary itself, with its code.
	summary := s[strings.Index(s, `id="summary"`):strings.Index(s, `id="detail"`)]
	if !strings.Contains(summary, "entry_link_mismatch") || !strings.Contains(summary, "witness.quorum") || !strings.Contains(summary, "3 of 3 seal(s) verified") {
		t.Fatalf("summary lacks the broken check, the witnesses or the seals:\n%s", summary)
	}
}

func TestUnpinnedBanner(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status verifier.Status
		code   verifier.Code
		banner bool
		cell   string
	}{
		{"unpinned", verifier.NotEvaluated, verifier.CodeTrustNotPinned, true, "unpinned"},
		{"pinned", verifier.Verified, "", false, ""},
		{"pinned to other keys", verifier.Broken, verifier.CodeTrustMismatch, false, "not the pinned key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := synthetic(50, 10)
			for i := range in.Report.Checks[:2] {
				in.Report.Checks[i].Status, in.Report.Checks[i].Code = tc.status, tc.code
			}
			s := string(render(t, in))
			banner := s[strings.Index(s, `id="verdict"`):strings.Index(s, `id="summary"`)]
			has := strings.Contains(banner, "UNPINNED")
			if has != tc.banner {
				t.Fatalf("UNPINNED in the banner: %v, want %v\n%s", has, tc.banner, banner)
			}
			if tc.banner {
				for _, want := range []string{"trust.log_key", "trust.issuers", "<code>evident trust fetch URL</code>", "<code>evident verify --trust FILE BUNDLE</code>"} {
					if !strings.Contains(banner, want) {
						t.Errorf("banner lacks %q", want)
					}
				}
			}
			if tc.cell != "" && !strings.Contains(s[strings.Index(s, `id="keys"`):], tc.cell) {
				t.Errorf("keys table lacks %q", tc.cell)
			}
		})
	}
}

// TestOverrideDiff renders the partner's override of journey D.6 (a replaced liability cap and
// an added carve-out) as a before/after table, the differing part of each value marked.
func TestOverrideDiff(t *testing.T) {
	s := string(render(t, sample(t)))
	i := strings.Index(s, `<div class="decision k-override">`)
	if i < 0 {
		t.Fatal("no override section")
	}
	d := s[i:]
	d = d[:strings.Index(d, "</details>")]
	for _, want := range []string{
		`<table class="diff">`,
		`<td class="name">/clauses/<wbr>liability/<wbr>cap</td>`,
		`<td class="old"><del>12</del>_months_fees</td>`,
		`<td class="new"><ins>24</ins>_months_fees</td>`,
		`<tr class="c-added"><td class="name">/clauses/<wbr>liability/<wbr>carve_<wbr>outs</td>`,
		`<ins>IP-indemnity-uncapped</ins>`,
		"intent preserved: no",
		"<details><summary>", // the recorded JSON, folded
	} {
		if !strings.Contains(d, want) {
			t.Errorf("override lacks %s\n%s", want, d)
		}
	}
}

// TestOverrideWithoutBase shows a diff whose base is not in the chain as its operations.
func TestOverrideWithoutBase(t *testing.T) {
	in := synthetic(50, 10)
	in.Timelines[0].Tasks[0].Decisions = []replay.Decision{{Seq: 3, Kind: "override", By: "human:a@example.org",
		Diff: `[{"op":"replace","path":"/cap","from":"12_months_fees","to":"24_months_fees"},{"op":"remove","path":"/note"}]`}}
	s := string(render(t, in))
	for _, want := range []string{"The base artefact is not in the chain",
		`<td class="mono">replace</td><td class="name">/cap</td><td class="old"><del>12_months_fees</del></td><td class="new"><ins>24_months_fees</ins></td>`,
		`<td class="mono">remove</td><td class="name">/note</td>`} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %s", want)
		}
	}
}

// TestNamesDoNotBreak checks the layout rules of name columns: no mid-word breaks (a name
// wraps only after a separator, or inside an unbroken run that is no word), monospace hashes
// shortened with the full value in the title.
func TestNamesDoNotBreak(t *testing.T) {
	in := synthetic(50, 10)
	long := "https://coordinator.insurer.example/workspaces/wsp_claims_emea/participants/agent:claims-triage#v4.2"
	in.Timelines[0].Events[1].From = long
	s := string(render(t, in))
	if !strings.Contains(s, "https://<wbr>coordinator.<wbr>insurer.<wbr>example/<wbr>workspaces/<wbr>wsp_<wbr>claims_<wbr>emea/<wbr>") {
		t.Error("a long URI has no break opportunity after its separators")
	}
	css := s[strings.Index(s, "<style>"):strings.Index(s, "</style>")]
	nameRule := regexp.MustCompile(`\.name\{[^}]*\}`).FindString(css)
	if !strings.Contains(nameRule, "word-break:normal") || !strings.Contains(nameRule, "overflow-wrap:normal") || !strings.Contains(nameRule, "monospace") {
		t.Errorf("the .name rule lets a browser break names anywhere: %s", nameRule)
	}
	for _, rule := range regexp.MustCompile(`[^{}]*\{[^}]*break-all[^}]*\}`).FindAllString(css, -1) {
		if strings.Contains(rule, ".name") || strings.Contains(rule, "td") {
			t.Errorf("break-all applies to a table column: %s", rule)
		}
	}
	full := "sha256:f144155cd1e3e8c7ed813b0e640314bff1d054db68b2a2c94e5511a4df90fe8d"
	in.Report.Log.Checkpoints = []verifier.CheckpointReport{{Size: 7, Root: full, Status: verifier.Verified, Sources: []string{"log/checkpoints/000000000007.checkpoint"}}}
	s = string(render(t, in))
	if !strings.Contains(s, `<span class="mono h" title="`+full+`">sha256:f144155cd1…0fe8d</span>`) {
		t.Error("a checkpoint root is not shortened with its full value in the title")
	}
}

// TestGolden compares the page of a fixed input with testdata/report.golden.html, so a change
// to the layout is seen in review (go test -run Golden -update rewrites it).
func TestGolden(t *testing.T) {
	in := synthetic(40, 10)
	in.MaxEntries = 25
	j := chapscenario.Journeys()[5] // D.6, the partner's override
	jb, err := chapscenario.BuildJourney(j)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := replay.ReplayRaw(j.Workspace, "", jb.Records())
	if err != nil {
		t.Fatal(err)
	}
	in.Timelines = append(in.Timelines, tl)
	in.Report.Checks = append(in.Report.Checks, verifier.Check{Name: "bundle.extra", Status: verifier.NotEvaluated, Code: "not_interpreted", Detail: hostile})
	got := render(t, in)
	golden := filepath.Join("testdata", "report.golden.html")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run Golden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the page differs from %s (go test -run Golden -update, then review the diff)", golden)
	}
}

// TestChromiumMillionEntries opens the report of a 1,000,000-entry chain in headless Chromium
// and reads back the DOM it built: it must render, and hold the summary. The bound only
// catches a page that never finishes: Chromium takes about 8 s alone and was killed at 60 s on
// a 2-core machine busy with the race detector and fuzzers.
func TestChromiumMillionEntries(t *testing.T) {
	bin := chromium(t)
	if testing.Short() {
		t.Skip("builds a million-entry timeline")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, render(t, synthetic(1_000_000, 10)), 0o600); err != nil {
		t.Fatal(err)
	}
	const bound = 3 * time.Minute
	start := time.Now()
	dom := runChromium(t, bin, dir, bound, "--dump-dom", "file://"+page)
	took := time.Since(start)
	t.Logf("chromium rendered the 1,000,000-entry report in %v", took)
	for _, want := range []string{`id="verdict"`, "✗ BROKEN", `id="unpinned"`, "UNPINNED", `id="summary"`, "entry_link_mismatch", `id="findings-1"`, "completed_unassigned",
		`id="index"`, `id="task-tsk_0090000"`, "2,001 of 100,001 tasks shown", "2,003 of 1,000,000 entries shown"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered DOM lacks %q", want)
		}
	}
}

func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium not installed")
	return ""
}

// runChromium runs headless Chromium with the network off and its own profile in dir, and
// returns its standard output; it fails the test past bound.
func runChromium(t *testing.T, bin, dir string, bound time.Duration, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--no-first-run", "--user-data-dir=" + filepath.Join(dir, "profile")}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v (bound %v)\n%s", args, err, bound, errb.String())
	}
	return out.String()
}
