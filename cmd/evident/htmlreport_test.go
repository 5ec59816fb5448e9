package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/chaptest"
)

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
	path := writeBundle(t, ws, chaptest.TaskChain(t, ws, tasks, chaptest.TaskOptions{}))
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
