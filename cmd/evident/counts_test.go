package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/ledger/profile/chap/replay"
	"github.com/evident-log/evident/verifier"
)

// TestCountsAndStoryAgree builds real bundles (a real evidentd in-process: Tessera log and
// SQLite store on disk, loopback HTTP) of CHAP chains sealed once or many times, some whose
// story holds warnings or an impossible history, and checks that every form of the report
// says the same: the checkpoints, seals and entries of the chain in verify's JSON and text
// and in the HTML report equal what the log check counts (an export adds each seal's first
// checkpoint: a chain sealed nine times is anchored in as many checkpoints, not "1"); and
// the replay's findings, counted from the records by the replay package itself, are stated
// beside the verdict in verify's text, JSON and HTML and in replay's text and JSON — named
// by code when they exist, "no impossible history, no warning" when there are none. The exit
// codes stay two axes: verify's is the integrity verdict, replay's also 1 for an impossible
// history.
func TestCountsAndStoryAgree(t *testing.T) {
	srv := startDaemon(t)
	trust := pinTrust(t, srv.URL)
	c := chapscenario.NewCast()
	co := c.Coordinator.URI
	cases := []struct {
		name       string
		seals      int
		extra      func(b *chapscenario.Builder) error // envelopes after the long chain
		warnings   int
		impossible int
		codes      []string // codes the story names
	}{
		{name: "one seal, clean story", seals: 1},
		{name: "nine seals, clean story", seals: 9},
		{name: "three seals, updates of tasks never created", seals: 3, warnings: 2, codes: []string{"unknown_task"},
			extra: func(b *chapscenario.Builder) error {
				for _, id := range []string{"tsk_ghost_a", "tsk_ghost_b", "tsk_ghost_a"} {
					if _, err := b.Envelope(c.Bot, co, "task.update", map[string]any{"task_id": id, "status": "in_progress"}); err != nil {
						return err
					}
				}
				return nil
			}},
		{name: "two seals, a task completed never assigned", seals: 2, warnings: 1, impossible: 1, codes: []string{"completed_unassigned", "unknown_task"},
			extra: func(b *chapscenario.Builder) error {
				_, err := b.Envelope(c.Bot, co, "task.complete", map[string]any{"task_id": "tsk_ghost", "outcome": "sent"})
				return err
			}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ws := fmt.Sprintf("wsp_counts_%d", i)
			b, err := chapscenario.Long(ws, 4+10*tc.seals, chapscenario.JourneyStart, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.extra != nil {
				if err := tc.extra(b); err != nil {
					t.Fatal(err)
				}
			}
			recs := b.Records()
			// The story as the replay package tells it from the records alone.
			tl, err := replay.ReplayRaw(ws, "", recs)
			if err != nil {
				t.Fatal(err)
			}
			want := verifier.StoryOf(tl, nil)
			if want.Warnings != tc.warnings || want.Impossible != tc.impossible || want.Info != 0 {
				t.Fatalf("the records' replay: %d impossible, %d warning(s), %d info; the case expects %d, %d, 0", want.Impossible, want.Warnings, want.Info, tc.impossible, tc.warnings)
			}
			// Submit in tc.seals parts, sealing after each.
			per := (len(recs) + tc.seals - 1) / tc.seals
			for p := 0; p < tc.seals; p++ {
				part := recs[p*per : min(len(recs), (p+1)*per)]
				file := filepath.Join(dir, fmt.Sprintf("part%d.jsonl", p))
				write(t, file, bytes.Join(part, []byte("\n")))
				mustCLI(t, "submit", "-url", srv.URL, "-chain", ws, file)
				mustCLI(t, "seal", "-url", srv.URL, "-chain", ws)
			}
			zip := filepath.Join(dir, "bundle.zip")
			mustCLI(t, "export", "-url", srv.URL, "-chain", ws, "-o", zip)

			// verify --format json: the counts, and the story beside the verdict.
			code, out, errs := cli("verify", "-q", "--trust", trust, "--format", "json", zip)
			if code != exitVerified {
				t.Fatalf("verify json: exit %d (the integrity verdict; the story does not change it)\n%s\n%s", code, out, errs)
			}
			var rep verifier.Report
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			if len(rep.Chains) != 1 {
				t.Fatalf("%d chains in the report", len(rep.Chains))
			}
			cov := rep.Chains[0].Coverage
			files, verifiedCPs := logCheckpointFiles(t, &rep), 0
			for _, cp := range rep.Log.Checkpoints {
				if cp.Status == verifier.Verified {
					verifiedCPs++
				}
			}
			if int(cov.Checkpoints) != files || int(cov.Checkpoints) != verifiedCPs || int(cov.Checkpoints) < tc.seals {
				t.Fatalf("the chain counts %d checkpoint(s); log.checkpoint verifies %d file(s), the log %d checkpoint(s); %d seal(s)", cov.Checkpoints, files, verifiedCPs, tc.seals)
			}
			if int(cov.SealsVerified) != tc.seals || int(cov.SealsTotal) != tc.seals || int(cov.EntriesTotal) != len(recs) || int(cov.EntriesAnchored) != len(recs) {
				t.Fatalf("coverage %+v: want %d seals and %d entries, all anchored", cov, tc.seals, len(recs))
			}
			if len(rep.Story) != 1 {
				t.Fatalf("verify json carries %d stories, want 1", len(rep.Story))
			}
			got := rep.Story[0]
			if got.Impossible != want.Impossible || got.Warnings != want.Warnings || got.Info != want.Info || got.Entries != uint64(len(recs)) ||
				fmt.Sprint(got.Codes) != fmt.Sprint(want.Codes) || got.Error != "" || len(got.NotEvaluated) != 0 {
				t.Fatalf("verify json story %+v, the records' replay %+v", got, want)
			}
			for _, code := range tc.codes {
				if !strings.Contains(fmt.Sprint(got.Codes), code) {
					t.Fatalf("story codes %v lack %s", got.Codes, code)
				}
			}

			// verify text: the same counts, the story on the verdict's line and by code under it.
			code, text, errs := cli("verify", "-q", "--trust", trust, zip)
			if code != exitVerified {
				t.Fatalf("verify text: exit %d\n%s", code, errs)
			}
			seals := fmt.Sprintf("seals: %d of %d verified, %d entries anchored, %d checkpoint(s)", tc.seals, tc.seals, len(recs), cov.Checkpoints)
			if !strings.Contains(text, seals) || !strings.Contains(text, fmt.Sprintf("log.checkpoint: %d checkpoint file(s)", files)) {
				t.Fatalf("verify text lacks %q or the log check's count %d:\n%s", seals, files, text)
			}
			first := text[:strings.Index(text, "\n")]
			checkVerdictLine(t, "verify text", first, want)
			if head := text[:strings.Index(text, "bundle:")]; !storyNamed(head, want) {
				t.Fatalf("verify text does not count the story by code above the checks:\n%s", head)
			}

			// A bound below the chain: verify's text and JSON say the story is not evaluated,
			// and where it is; they claim no finding and no clean story.
			code, btext, errs := cli("verify", "-q", "--trust", trust, "-story-max-entries", "10", zip)
			if code != exitVerified || !strings.HasPrefix(btext, "VERDICT: VERIFIED (integrity) — story: not evaluated for 1 chain(s), not replayed (see below)\n") ||
				!strings.Contains(btext, fmt.Sprintf("story not evaluated: %d entries, over the 10 evident verify replays", len(recs))) ||
				strings.Contains(btext[:strings.Index(btext, "bundle:")], "×") {
				t.Fatalf("verify -story-max-entries 10: exit %d\n%s\n%s", code, btext, errs)
			}

			// verify --format html: the same counts in the chain's card and the log summary, the
			// story in the banner with a link to the findings.
			page := filepath.Join(dir, "report.html")
			if code, out, errs := cli("verify", "-q", "--trust", trust, "--format", "html", "-o", page, zip); code != exitVerified {
				t.Fatalf("verify html: exit %d\n%s\n%s", code, out, errs)
			}
			pageBytes, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			html := string(pageBytes)
			for _, want := range []string{
				fmt.Sprintf("<b>seals</b>%d of %d verified, %d entries anchored, %d checkpoint(s)", tc.seals, tc.seals, len(recs), cov.Checkpoints),
				fmt.Sprintf("%d of %d log checkpoint(s) verified", verifiedCPs, len(rep.Log.Checkpoints)),
				fmt.Sprintf("%d of %d seal(s) verified; %d of %d entries anchored", tc.seals, tc.seals, len(recs), len(recs)),
				`id="story-banner"`, `href="#findings-1"`, `id="findings-1"`, `href="#story"`, `id="story"`,
			} {
				if !strings.Contains(html, want) {
					t.Errorf("html lacks %q", want)
				}
			}
			banner := html[strings.Index(html, `id="verdict"`):strings.Index(html, `id="summary"`)]
			checkBanner(t, banner, want)

			// replay, text and JSON: the same line on top, the same counts, and the exit code.
			wantCode := exitVerified
			if want.Impossible > 0 {
				wantCode = exitBroken
			}
			code, rtext, errs := cli("replay", "-q", "--trust", trust, zip)
			if code != wantCode {
				t.Fatalf("replay: exit %d, want %d\n%s", code, wantCode, errs)
			}
			rfirst := rtext[:strings.Index(rtext, "\n")]
			checkVerdictLine(t, "replay text", rfirst, want)
			if !strings.HasSuffix(rfirst, strings.TrimPrefix(first, "VERDICT: ")) {
				t.Fatalf("replay says %q, verify %q", rfirst, first)
			}
			if head := rtext[:strings.Index(rtext, "=== chain")]; !storyNamed(head, want) {
				t.Fatalf("replay text does not count the story by code on top:\n%s", head)
			}
			code, rjson, errs := cli("replay", "-q", "--trust", trust, "--format", "json", zip)
			if code != wantCode {
				t.Fatalf("replay json: exit %d, want %d\n%s", code, wantCode, errs)
			}
			var ro struct {
				Summary string           `json:"summary"`
				Story   []verifier.Story `json:"story"`
			}
			if err := json.Unmarshal([]byte(rjson), &ro); err != nil {
				t.Fatal(err)
			}
			if ro.Summary != strings.TrimPrefix(first, "VERDICT: ") || len(ro.Story) != 1 || fmt.Sprint(ro.Story[0]) != fmt.Sprint(got) {
				t.Fatalf("replay json summary %q story %+v; verify says %q, %+v", ro.Summary, ro.Story, first, got)
			}
		})
	}
}

// logCheckpointFiles returns the count of the log.checkpoint check ("N checkpoint file(s)").
func logCheckpointFiles(t *testing.T, rep *verifier.Report) int {
	t.Helper()
	for _, c := range rep.Checks {
		if c.Name == verifier.CheckLogCheckpoint && c.Status == verifier.Verified {
			m := regexp.MustCompile(`^(\d+) checkpoint file\(s\)`).FindStringSubmatch(c.Detail)
			if m == nil {
				t.Fatalf("log.checkpoint detail %q", c.Detail)
			}
			n, _ := strconv.Atoi(m[1])
			return n
		}
	}
	t.Fatal("no verified log.checkpoint check")
	return 0
}

// checkVerdictLine checks that the verdict's line states the story: never a plain VERIFIED.
func checkVerdictLine(t *testing.T, what, line string, s verifier.Story) {
	t.Helper()
	var want string
	switch {
	case s.Impossible > 0:
		want = fmt.Sprintf("VERIFIED (integrity) — STORY: %d IMPOSSIBLE HISTORY(IES), %d warning(s)", s.Impossible, s.Warnings)
	case s.Warnings > 0:
		want = fmt.Sprintf("VERIFIED (integrity) — story: %d warning(s), no impossible history", s.Warnings)
	default:
		want = "VERIFIED (integrity) — story: no impossible history, no warning"
	}
	if !strings.HasSuffix(line, want) {
		t.Fatalf("%s: verdict line %q, want it to end %q", what, line, want)
	}
	if s.Warnings == 0 && strings.Contains(line, "warning(s)") || s.Impossible == 0 && strings.Contains(line, "IMPOSSIBLE") {
		t.Fatalf("%s: verdict line %q claims what the story does not hold", what, line)
	}
}

// storyNamed reports whether text counts the story (one line, by code) as s has it, and
// names no finding code s does not hold.
func storyNamed(text string, s verifier.Story) bool {
	want := fmt.Sprintf("%d impossible, %d warning(s)", s.Impossible, s.Warnings)
	if !strings.Contains(text, want) {
		return false
	}
	for _, c := range s.Codes {
		if !strings.Contains(text, fmt.Sprintf("%s %s ×%d", c.Severity, c.Code, c.Count)) {
			return false
		}
	}
	for _, code := range []string{replay.CodeUnknownTask, replay.CodeCompletedUnassigned} {
		named := false
		for _, c := range s.Codes {
			named = named || c.Code == code
		}
		if !named && strings.Contains(text, code) {
			return false
		}
	}
	return true
}

// checkBanner checks the HTML banner's STORY box against s.
func checkBanner(t *testing.T, banner string, s verifier.Story) {
	t.Helper()
	var want []string
	switch {
	case s.Impossible > 0:
		want = append(want, `class="story st-impossible"`, fmt.Sprintf("<b>%d impossible history(ies)</b>", s.Impossible))
	case s.Warnings > 0:
		want = append(want, `class="story st-warning"`, "no impossible history")
	default:
		want = append(want, `class="story st-clean"`, "no impossible history · no warning")
	}
	if s.Warnings > 0 {
		want = append(want, fmt.Sprintf("<b>%d warning(s)</b>", s.Warnings))
	}
	for _, c := range s.Codes {
		want = append(want, fmt.Sprintf("<code>%s</code> ×%d", c.Code, c.Count))
	}
	want = append(want, "(integrity)")
	for _, w := range want {
		if !strings.Contains(banner, w) {
			t.Errorf("the banner lacks %q:\n%s", w, banner)
		}
	}
	if s.Warnings == 0 && strings.Contains(banner, "warning(s)") || s.Impossible == 0 && strings.Contains(banner, "impossible history(ies)") ||
		len(s.Codes) == 0 && strings.Contains(banner, "<code>") {
		t.Errorf("the banner claims findings the story does not hold:\n%s", banner)
	}
}
