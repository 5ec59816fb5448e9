package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/ledger/profile/chap/scenario"
)

// taskChain writes the signed records of a CHAP workspace with tasks tasks of ten entries
// each (create, accept, seven updates, complete); the task half way through gets a draft and
// a human override of it instead of two of its updates.
func taskChain(t *testing.T, ws string, tasks int) [][]byte {
	t.Helper()
	c := scenario.NewCast()
	b := scenario.NewBuilder(ws, scenario.JourneyStart)
	b.Step = time.Second
	for _, p := range []*scenario.Participant{c.Coordinator, c.Alice, c.Bob, c.Bot} {
		if err := b.Join(p, c.Coordinator.URI); err != nil {
			t.Fatal(err)
		}
	}
	send := func(p *scenario.Participant, method string, params map[string]any) {
		if _, err := b.Envelope(p, c.Coordinator.URI, method, params); err != nil {
			t.Fatal(err)
		}
	}
	draft := map[string]any{"reply": map[string]any{"refund": "partial", "amount": 40, "currency": "EUR"}}
	for i := range tasks {
		id := fmt.Sprintf("tsk_%05d", i)
		send(c.Alice, "task.create", map[string]any{"task_id": id, "kind": "support_reply", "assignee": c.Bot.URI})
		send(c.Bot, "task.accept", map[string]any{"task_id": id})
		updates := 7
		if i == tasks/2 {
			updates = 5
			send(c.Bot, "artefact.submit", map[string]any{"task_id": id, "artefact": map[string]any{"id": "art_" + id, "logical_id": "lgl_" + id, "kind": "reply", "content": draft}})
			send(c.Bob, "decide.override", map[string]any{"task_id": id, "logical_id": "lgl_" + id, "rationale": "damaged in transit: full refund",
				"diff": []any{map[string]any{"op": "replace", "path": "/reply/refund", "value": "full"}, map[string]any{"op": "replace", "path": "/reply/amount", "value": 120}}})
		}
		for u := range updates {
			send(c.Bot, "task.update", map[string]any{"task_id": id, "status": "in_progress", "progress": u * 10, "note": "checked order history and carrier report"})
		}
		send(c.Bot, "task.complete", map[string]any{"task_id": id, "outcome": "sent"})
	}
	return b.Records()
}

// TestVerifyHTMLBoundAsUser builds the evident binary, verifies a real bundle of a
// 20,004-entry CHAP chain with 2,000 tasks as a user would (--format html, then
// --max-entries), and opens the default page in headless Chromium when it is installed.
func TestVerifyHTMLBoundAsUser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the evident binary and a 20,000-entry bundle")
	}
	dir := t.TempDir()
	bin := filepath.Join(buildTools(t), "evident")
	const ws, tasks = "wsp_support_emea", 2000
	path := writeBundle(t, ws, taskChain(t, ws, tasks))
	verify := func(args ...string) string {
		t.Helper()
		out := filepath.Join(dir, "report.html")
		cmd := exec.Command(bin, append(append([]string{"verify", "-q", "--format", "html", "-o", out}, args...), path)...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		start := time.Now()
		// The bundle is unsealed: nothing is broken, not everything is evaluated.
		if code := exitCode(cmd); code != exitNotEvaluated {
			t.Fatalf("verify %v: exit %d, want %d\n%s", args, code, exitNotEvaluated, errb.String())
		}
		page, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("verify %v: %d bytes in %v", args, len(page), time.Since(start))
		return string(page)
	}
	all := verify("--max-entries", "0")
	def := verify()
	small := verify("--max-entries", "300")
	for _, tc := range []struct {
		name, page, line string
		tasks            int
	}{
		{"all", all, "all 20,004 entries shown", tasks},
		{"default", def, "2,000 of 20,004 entries shown", tasks},
		{"300", small, "300 of 20,004 entries shown", 300},
	} {
		if !strings.Contains(tc.page, tc.line) {
			t.Errorf("%s: page lacks %q", tc.name, tc.line)
		}
		if n := strings.Count(tc.page, `<tr id="task-`); n != tc.tasks {
			t.Errorf("%s: %d task sections, want %d", tc.name, n, tc.tasks)
		}
		// The override, half way through the chain, is shown as a field diff whatever the bound.
		for _, want := range []string{`<td class="old"><del>partial</del></td>`, `<td class="new"><ins>full</ins></td>`, `<td class="old"><del>40</del></td>`, `<td class="new"><ins>120</ins></td>`} {
			if !strings.Contains(tc.page, want) {
				t.Errorf("%s: page lacks the override's %s", tc.name, want)
			}
		}
	}
	if len(def)*3 > len(all) || len(small)*2 > len(def) {
		t.Errorf("the bound does not shrink the page: %d bytes (all), %d (default), %d (300)", len(all), len(def), len(small))
	}
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Log("chromium not installed: not rendered")
		return
	}
	page := filepath.Join(dir, "default.html")
	if err := os.WriteFile(page, []byte(def), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+filepath.Join(dir, "profile"), "--dump-dom", "file://"+page)
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	for _, want := range []string{`id="verdict"`, "NOT_EVALUATED", `id="summary"`, "2,000 of 20,004 entries shown"} {
		if !bytes.Contains(dom, []byte(want)) {
			t.Errorf("the rendered DOM lacks %q", want)
		}
	}
}
