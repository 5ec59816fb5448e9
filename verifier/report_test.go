package verifier_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"testing"

	tlog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/verifier"
	"github.com/evident-log/evident/verifier/internal/testbundle"
)

func mustOpen(t testing.TB, zip []byte) *bundle.Reader {
	t.Helper()
	r, err := bundle.OpenZipBytes(zip)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestUnsealedTail(t *testing.T) {
	b := testbundle.Build(t, testbundle.Options{Entries: 30, SealAt: []int{12, 20}, ReceiptsAtEnd: true})
	rep := verify(t, b.Reader(t))
	if rep.Verdict != verifier.NotEvaluated || rep.ExitCode() != 2 {
		t.Fatalf("verdict %s exit %d\n%s", rep.Verdict, rep.ExitCode(), text(t, rep))
	}
	a := checksNamed(rep, "anchoring")
	if len(a) != 1 || a[0].Status != verifier.NotEvaluated || a[0].Detail != "10 entries after the last seal are not anchored in the log" {
		t.Errorf("anchoring check %+v", a)
	}
	for _, c := range rep.Checks {
		if c.Status == verifier.NotEvaluated && c.Name != "anchoring" {
			t.Errorf("unexpected not evaluated check %+v", c)
		}
	}
	cv := rep.Chains[0].Coverage
	want := verifier.Coverage{EntriesTotal: 30, EntriesChecked: 30, SignaturesVerified: 30, EntriesAnchored: 20, SealsTotal: 2, SealsVerified: 2, Checkpoints: 1}
	if cv != want {
		t.Errorf("coverage %+v, want %+v", cv, want)
	}
}

func TestNoSeal(t *testing.T) {
	b := testbundle.Build(t, testbundle.Options{Entries: 8, SealAt: []int{}})
	rep := verify(t, b.Reader(t))
	if rep.Verdict != verifier.NotEvaluated {
		t.Fatalf("verdict %s\n%s", rep.Verdict, text(t, rep))
	}
	if a := checksNamed(rep, "anchoring"); len(a) != 1 || !strings.HasPrefix(a[0].Detail, "8 entries after the last seal") {
		t.Errorf("anchoring %+v", a)
	}
}

func TestUnsigned(t *testing.T) {
	const n = 4
	b := testbundle.Build(t, testbundle.Options{Entries: 20, Unsigned: n})
	rep := verify(t, b.Reader(t))
	if rep.Verdict != verifier.NotEvaluated {
		t.Fatalf("verdict %s\n%s", rep.Verdict, text(t, rep))
	}
	cv := rep.Chains[0].Coverage
	if cv.Unsigned != n || cv.SignaturesVerified != 20-n || cv.EntriesChecked != 20 || cv.EntriesAnchored != 20 {
		t.Errorf("coverage %+v", cv)
	}
	u := checksNamed(rep, "chain.unsigned")
	if len(u) != 1 || u[0].Status != verifier.NotEvaluated || u[0].Code != "unsigned" || !strings.HasPrefix(u[0].Detail, "unsigned: 4 record(s)") {
		t.Errorf("unsigned check %+v", u)
	}
	if s := checksNamed(rep, "chain.signatures"); len(s) != 1 || s[0].Status != verifier.Verified || !strings.HasPrefix(s[0].Detail, "16 record signature") {
		t.Errorf("signatures check %+v", s)
	}
}

func TestCheckpointsOfSeveralSizes(t *testing.T) {
	// Receipts cut at each registration: three tree sizes, no consistency proof between them.
	b := testbundle.Build(t, testbundle.Options{Entries: 12, SealAt: []int{4, 8, 12}, CheckpointFiles: true})
	rep := verify(t, b.Reader(t))
	if rep.Verdict != verifier.NotEvaluated {
		t.Fatalf("verdict %s\n%s", rep.Verdict, text(t, rep))
	}
	c := checksNamed(rep, "log.consistency")
	if len(c) != 1 || c[0].Status != verifier.NotEvaluated || !strings.HasPrefix(c[0].Detail, "no consistency proof in bundle") {
		t.Errorf("consistency %+v", c)
	}
	if len(rep.Log.Checkpoints) != 3 || rep.Chains[0].Coverage.Checkpoints != 3 || rep.Chains[0].Coverage.EntriesAnchored != 12 {
		t.Errorf("checkpoints %+v coverage %+v", rep.Log.Checkpoints, rep.Chains[0].Coverage)
	}
}

func TestLogFork(t *testing.T) {
	orig := testbundle.Build(t, testbundle.Options{Entries: 6, Participants: 2})
	rep := verify(t, orig.Reader(t))
	if rep.Verdict != verifier.Verified || len(rep.Log.Checkpoints) != 1 {
		t.Fatalf("untampered: %s\n%s", rep.Verdict, text(t, rep))
	}
	size := rep.Log.Checkpoints[0].Size
	// The log key signs another tree of the same size: a split view.
	body := tlog.Checkpoint{Origin: orig.Origin, Size: size, Hash: make([]byte, 32)}.Marshal()
	cp, err := note.Sign(&note.Note{Text: string(body)}, orig.NoteSigner)
	if err != nil {
		t.Fatal(err)
	}
	b := orig.Clone()
	b.Files[bundle.CheckpointFile(size)] = cp
	rep = verify(t, b.Reader(t))
	f := checksNamed(rep, "log.fork")
	if rep.Verdict != verifier.Broken || len(f) != 1 || f[0].Status != verifier.Broken || len(f[0].Evidence) != 2 {
		t.Fatalf("fork: %s %+v\n%s", rep.Verdict, f, text(t, rep))
	}
}

func TestUnknownProfileAndExtraFiles(t *testing.T) {
	b := testbundle.Build(t, testbundle.Options{Entries: 6, Participants: 2})
	b.Manifest.Chains[0].Profile = "owp/1.0"
	rep := verify(t, b.Reader(t))
	if rep.Verdict != verifier.Broken { // the seals name chap/0.3
		t.Fatalf("verdict %s", rep.Verdict)
	}
	if p := checksNamed(rep, "chain.profile"); len(p) != 1 || p[0].Status != verifier.NotEvaluated {
		t.Errorf("profile check %+v", p)
	}

	// A listed file no check interprets: its digest is checked, and the report says the rest is not.
	b = testbundle.Build(t, testbundle.Options{Entries: 6, Participants: 2})
	b.Files["chains/ws-1/notes.txt"] = []byte("hello")
	rep = verify(t, b.Reader(t))
	if rep.Verdict != verifier.NotEvaluated || len(checksNamed(rep, "bundle.extra")) != 1 {
		t.Errorf("extra listed file: %s\n%s", rep.Verdict, text(t, rep))
	}
	b = testbundle.Build(t, testbundle.Options{Entries: 6, Participants: 2})
	m := b.Manifest
	b.Files["stray.txt"] = []byte("not in the manifest")
	dir := t.TempDir()
	b.WriteDir(t, dir, m)
	_, err := bundle.Open(dir)
	rep = verifier.RefusedReport(err, verifier.Options{})
	if rep == nil {
		t.Fatalf("an unlisted file: Open says %v, want a refusal", err)
	}
	if u := checksNamed(rep, "bundle.unambiguous"); rep.Verdict != verifier.Broken || len(u) != 1 || u[0].Where != "stray.txt" || u[0].Code != verifier.CodeAmbiguous {
		t.Errorf("unlisted: %s %+v", rep.Verdict, u)
	}
}

func TestJSONReport(t *testing.T) {
	b := testbundle.Build(t, testbundle.Options{Entries: 10, Unsigned: 2})
	rep := verify(t, b.Reader(t))
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(buf.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"format", "bundle", "verdict", "checks", "chains", "log", "generated"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("report JSON lacks %q", k)
		}
	}
	cov := raw["chains"].([]any)[0].(map[string]any)["coverage"].(map[string]any)
	for _, k := range []string{"entries_total", "entries_checked", "entries_unchecked", "checked_from_seq", "signatures_verified", "unsigned", "entries_anchored", "seals_total", "seals_verified", "checkpoints"} {
		if _, ok := cov[k]; !ok {
			t.Errorf("coverage JSON lacks %q", k)
		}
	}
	var back verifier.Report
	dec := json.NewDecoder(bytes.NewReader(buf.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&back); err != nil {
		t.Fatal(err)
	}
	if back.Format != "evident-verify-report/v1" || back.Verdict != verifier.NotEvaluated || back.Generated != "2026-02-03T04:05:06Z" {
		t.Errorf("report %s %s %s", back.Format, back.Verdict, back.Generated)
	}
	if len(back.Chains) != 1 || back.Chains[0].Coverage.Unsigned != 2 || back.Chains[0].Coverage.EntriesTotal != 10 || len(back.Chains[0].Participants) != 3 {
		t.Errorf("chains %+v", back.Chains)
	}
	if back.Log.Origin != "evident.test/log" || len(back.Log.Checkpoints) != 1 || back.Log.Checkpoints[0].Status != verifier.Verified {
		t.Errorf("log %+v", back.Log)
	}
	if len(back.Checks) != len(rep.Checks) {
		t.Errorf("checks %d, want %d", len(back.Checks), len(rep.Checks))
	}
	out := text(t, rep)
	if !strings.HasPrefix(out, "VERDICT: NOT_EVALUATED\n") || !strings.Contains(out, "? chain.unsigned [ws-1]") || !strings.Contains(out, "✓ chain.signatures") {
		t.Errorf("text report:\n%s", out)
	}
}

func TestTextReportEscapesBundleText(t *testing.T) {
	b := testbundle.Build(t, testbundle.Options{ChainID: "ws\nVERDICT: VERIFIED\x1b[2J", Entries: 4, Participants: 2})
	rep := verify(t, b.Reader(t))
	out := text(t, rep)
	if strings.Count(out, "\nVERDICT:") != 0 || !strings.HasPrefix(out, "VERDICT: VERIFIED\n") || strings.ContainsRune(out, 0x1b) {
		t.Errorf("bundle text reached the report raw:\n%s", out)
	}
	if rep.Verdict != verifier.Verified {
		t.Errorf("verdict %s\n%s", rep.Verdict, out)
	}
}

func TestProgressAndCancel(t *testing.T) {
	b := testbundle.Build(t, testbundle.Options{Entries: 9000, Participants: 3, PayloadSize: 8})
	zip := b.Zip(t)
	var mu sync.Mutex
	calls := map[string]int{}
	var last uint64
	rep, err := verifier.Verify(context.Background(), mustOpen(t, zip), verifier.Options{Trust: testbundle.Trust(t), Progress: func(stage string, done, total uint64) {
		mu.Lock()
		defer mu.Unlock()
		calls[stage]++
		if strings.HasPrefix(stage, "entries ") {
			if total != 9000 || done < last {
				t.Errorf("progress %s %d/%d after %d", stage, done, total, last)
			}
			last = done
		}
	}})
	if err != nil || rep.Verdict != verifier.Verified {
		t.Fatalf("%v %v", err, rep)
	}
	if n := calls["entries ws-1"]; n < 2 || n > 4 {
		t.Errorf("entries progress called %d times for 9000 entries", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, err = verifier.Verify(ctx, mustOpen(t, zip), verifier.Options{Progress: func(string, uint64, uint64) { cancel() }})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestOfflineDependencies(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/evident-log/evident/verifier").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps gave %d packages", len(deps))
	}
	forbidden := map[string]bool{
		"net": true, "net/http": true, "database/sql": true, "net/rpc": true, "net/smtp": true, "crypto/tls": true,
		"github.com/evident-log/evident/log":    true,
		"github.com/evident-log/evident/client": true,
	}
	for _, d := range deps {
		if forbidden[d] || strings.HasPrefix(d, "github.com/transparency-dev/tessera") ||
			strings.HasPrefix(d, "github.com/evident-log/evident/internal/evidentd/") || strings.HasPrefix(d, "modernc.org/sqlite") {
			t.Errorf("the offline verifier depends on %s", d)
		}
	}
}

// TestFoldAndCount: the verdict fold (broken over not_evaluated over verified, nothing is
// not_evaluated) and the per-status count the text and HTML reports print.
func TestFoldAndCount(t *testing.T) {
	v, n, b := verifier.Check{Status: verifier.Verified}, verifier.Check{Status: verifier.NotEvaluated}, verifier.Check{Status: verifier.Broken}
	for _, tc := range []struct {
		checks []verifier.Check
		want   verifier.Status
	}{
		{nil, verifier.NotEvaluated},
		{[]verifier.Check{v, v}, verifier.Verified},
		{[]verifier.Check{v, n, v}, verifier.NotEvaluated},
		{[]verifier.Check{n, b, v}, verifier.Broken},
		{[]verifier.Check{v, {Status: "odd"}}, verifier.NotEvaluated},
	} {
		if got := verifier.Fold(tc.checks); got != tc.want {
			t.Errorf("Fold(%v) = %s, want %s", tc.checks, got, tc.want)
		}
	}
	r := &verifier.Report{Checks: []verifier.Check{v, n, b, v, n, n}}
	if r.Count(verifier.Verified) != 2 || r.Count(verifier.NotEvaluated) != 3 || r.Count(verifier.Broken) != 1 {
		t.Fatalf("counts %d %d %d", r.Count(verifier.Verified), r.Count(verifier.NotEvaluated), r.Count(verifier.Broken))
	}
}
