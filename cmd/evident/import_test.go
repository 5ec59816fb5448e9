package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evident-log/evident/testvectors/chapref"
)

// TestImportReferenceDump: `evident import` takes the CHAP reference Coordinator's audit.read
// dump in two pieces (an interrupted import resumes where the chain stands), checks the
// Coordinator's evidence_head, and the exported bundle verifies.
func TestImportReferenceDump(t *testing.T) {
	srv := startDaemon(t)
	const ref = "../../testvectors/chap-reference/ts/"
	audit, err := os.ReadFile(ref + "full.audit.json")
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Entries []json.RawMessage `json:"entries"`
	}
	if err := json.Unmarshal(audit, &page); err != nil {
		t.Fatal(err)
	}
	var ws struct {
		ID string `json:"id"`
	}
	describe := ref + "full.describe.json"
	db, _ := os.ReadFile(describe)
	if err := json.Unmarshal(db, &ws); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The first 20 entries as JSON Lines: an import that stopped part-way.
	first := filepath.Join(dir, "first.jsonl")
	os.WriteFile(first, bytes.Join(func() [][]byte {
		var out [][]byte
		for _, e := range page.Entries[:20] {
			out = append(out, e)
		}
		return out
	}(), []byte("\n")), 0o644)
	if code, out, errs := cli("import", "-url", srv.URL, "-chain", ws.ID, "-batch", "7", first); code != 0 || !strings.Contains(out, "20 entries imported") {
		t.Fatalf("first import: %d %s %s", code, out, errs)
	}
	// The whole dump again, with the Coordinator's describe: resumes at seq 20.
	code, out, errs := cli("import", "-url", srv.URL, "-chain", ws.ID, "-describe", describe, ref+"full.audit.json")
	if code != 0 || !strings.Contains(out, "entries imported into "+ws.ID+" (20 already there)") || !strings.Contains(out, ": matches") {
		t.Fatalf("resumed import: %d %s %s", code, out, errs)
	}
	// Nothing left: a third run changes nothing.
	if code, out, errs := cli("import", "-url", srv.URL, "-chain", ws.ID, ref+"full.audit.json"); code != 0 || !strings.Contains(out, "nothing to import") {
		t.Fatalf("third import: %d %s %s", code, out, errs)
	}
	// A dump with a gap is refused before anything is sent.
	gap := filepath.Join(dir, "gap.jsonl")
	os.WriteFile(gap, bytes.Join([][]byte{page.Entries[0], page.Entries[2]}, []byte("\n")), 0o644)
	if code, _, errs := cli("import", "-url", srv.URL, "-chain", "wsp_other", gap); code != exitFailure || !strings.Contains(errs, "has seq 2 where seq 1 is next") {
		t.Fatalf("gap: %d %s", code, errs)
	}
	if code, _, errs := cli("seal", "-url", srv.URL, "-chain", ws.ID); code != 0 {
		t.Fatalf("seal: %d %s", code, errs)
	}
	zipFile := filepath.Join(dir, "b.zip")
	if code, _, errs := cli("export", "-url", srv.URL, "-chain", ws.ID, "-o", zipFile); code != 0 {
		t.Fatalf("export: %d %s", code, errs)
	}
	trust := pinTrust(t, srv.URL)
	if code, out, errs := cli("verify", zipFile, "--trust", trust); code != exitVerified || !strings.Contains(out, "VERIFIED") {
		t.Fatalf("verify: %d\n%s\n%s", code, out, errs)
	}
	// The reference Coordinator's every method replays without an impossible history: tasks
	// it created with an assignee are assigned, the ids it returned only in its responses
	// are bound to their creates.
	if code, out, errs := cli("replay", zipFile, "--trust", trust); code != 0 || strings.Contains(out, "impossible") && !strings.Contains(out, "0 impossible") {
		t.Fatalf("replay: %d\n%s\n%s", code, out, errs)
	}
}

// TestImportStdin: `evident import -` takes a JSON array and JSON Lines from standard input,
// read once (the dump is not read a second time, which on standard input finds nothing).
func TestImportStdin(t *testing.T) {
	srv := startDaemon(t)
	audit, err := os.ReadFile("../../testvectors/chap-reference/ts/full.audit.json")
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Entries []json.RawMessage `json:"entries"`
	}
	if err := json.Unmarshal(audit, &page); err != nil {
		t.Fatal(err)
	}
	raws := make([][]byte, len(page.Entries))
	for i, e := range page.Entries {
		raws[i] = e
	}
	const ws = "wsp_chapref_full" // the workspace the dump's entries name
	array := append(append([]byte("["), bytes.Join(raws[:5], []byte(","))...), ']')
	if code, out, errs := cliStdin(t, array, "import", "-url", srv.URL, "-chain", ws, "-"); code != 0 || !strings.Contains(out, "5 entries imported") {
		t.Fatalf("array on standard input: %d %s %s", code, out, errs)
	}
	lines := bytes.Join(raws[5:12], []byte("\n"))
	if code, out, errs := cliStdin(t, lines, "import", "-url", srv.URL, "-chain", ws, "-"); code != 0 || !strings.Contains(out, "7 entries imported") || !strings.Contains(out, "size 12") {
		t.Fatalf("JSON Lines on standard input: %d %s %s", code, out, errs)
	}
}

// cliStdin runs the evident command in-process with in on standard input.
func cliStdin(t *testing.T, in []byte, args ...string) (int, string, string) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(in); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	old := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = old }()
	return cli(args...)
}

// TestImportReferenceJourneys: what the CHAP reference coordinators recorded live (real clock,
// random ids and keys: tasks created in bursts and named out of order, every optional
// profile) goes in with `evident import -describe` (the Coordinator's evidence_head matches),
// is sealed, exported and VERIFIED, and `evident replay` tells it without a finding: exit 0,
// no impossible history and no warning, and what the log does not determine (ids drawn in the
// same millisecond) is listed as not evaluated.
func TestImportReferenceJourneys(t *testing.T) {
	for _, j := range []struct{ dir, journey string }{
		{"live-ts", "burst"}, {"live-py", "burst"}, {"live-ts", "profiles"}, {"live-py", "profiles"},
		{"ts", "deep"}, {"py", "deep"}, // 1,000 levels (ts) and a 3 MiB draft, over evidentd's old limits
	} {
		t.Run(j.dir+"/"+j.journey, func(t *testing.T) {
			srv := startDaemon(t) // one each: both coordinators' journeys name the same workspaces
			trust := pinTrust(t, srv.URL)
			ref := filepath.Join(t.TempDir(), j.journey)
			for _, name := range []string{".describe.json", ".audit.json"} {
				data, err := chapref.File(j.dir, j.journey+name) // stored gzip-compressed when large
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(ref+name, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			db, err := os.ReadFile(ref + ".describe.json")
			if err != nil {
				t.Fatal(err)
			}
			var ws struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(db, &ws); err != nil {
				t.Fatal(err)
			}
			if code, out, errs := cli("import", "-url", srv.URL, "-chain", ws.ID, "-describe", ref+".describe.json", ref+".audit.json"); code != 0 || !strings.Contains(out, ": matches") {
				t.Fatalf("import: %d %s %s", code, out, errs)
			}
			if code, _, errs := cli("seal", "-url", srv.URL, "-chain", ws.ID); code != 0 {
				t.Fatalf("seal: %d %s", code, errs)
			}
			zipFile := filepath.Join(t.TempDir(), "b.zip")
			if code, _, errs := cli("export", "-url", srv.URL, "-chain", ws.ID, "-o", zipFile); code != 0 {
				t.Fatalf("export: %d %s", code, errs)
			}
			if code, out, errs := cli("verify", zipFile, "--trust", trust); code != exitVerified || !strings.Contains(out, "VERIFIED") {
				t.Fatalf("verify: %d\n%s\n%s", code, out, errs)
			}
			code, out, errs := cli("replay", zipFile, "--trust", trust, "--format", "json")
			if code != 0 {
				t.Fatalf("replay: %d\n%s\n%s", code, out, errs)
			}
			var rep replayOutput
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			if len(rep.Timelines) != 1 {
				t.Fatalf("%d timelines", len(rep.Timelines))
			}
			tl := rep.Timelines[0]
			for _, f := range tl.Findings {
				if f.Severity != "info" {
					t.Errorf("%s at seq %d: %s", f.Code, f.Seq, f.Detail)
				}
			}
			bound := 0
			for _, tk := range tl.Tasks {
				if tk.IDInferred {
					bound++
				}
			}
			if bound == 0 && strings.HasPrefix(j.dir, "live") {
				t.Errorf("no task id bound: the arrival times did not reach the replay")
			}
			for _, n := range tl.NotEvaluated {
				if n.Code != "id_not_determined" && n.Code != "check_not_evaluated" {
					t.Errorf("not evaluated at seq %d (%s): %s", n.Seq, n.Code, n.Detail)
				}
			}
			if code, out, _ := cli("replay", zipFile, "--trust", trust); code != 0 || !strings.Contains(out, "NOT EVALUATED") {
				t.Fatalf("replay text: %d\n%s", code, out)
			}
		})
	}
}
