package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/verifier"
)

// duplicateEntries rewrites a zip bundle with a second copy of its entries.jsonl in which
// one word is changed: the attack a reader who unzips the bundle would fall for.
func duplicateEntries(t *testing.T, path, ws string) string {
	t.Helper()
	name := bundle.EntriesFile(bundle.ChainDir(ws))
	z := rezip(t, path, func(n string, b []byte) [][]byte {
		if n == name {
			return [][]byte{b, bytes.Replace(b, []byte("4800"), []byte("9800"), 1)}
		}
		return [][]byte{b}
	})
	p := filepath.Join(t.TempDir(), "ambiguous.zip")
	if err := os.WriteFile(p, z, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAmbiguousBundleRefused: verify (text, JSON, HTML) calls the bundle broken and names
// the entry; replay refuses to show a timeline from it.
func TestAmbiguousBundleRefused(t *testing.T) {
	j := chapscenario.Journeys()[10]
	b, err := chapscenario.BuildJourney(j)
	if err != nil {
		t.Fatal(err)
	}
	path := duplicateEntries(t, writeBundle(t, j.Workspace, b.Records()), j.Workspace)
	entries := bundle.EntriesFile(bundle.ChainDir(j.Workspace))
	ctx := context.Background()

	var out, errb bytes.Buffer
	if code := run(ctx, []string{"verify", path}, &out, &errb); code != exitBroken {
		t.Fatalf("verify exit %d, want %d: %s%s", code, exitBroken, out.String(), errb.String())
	}
	for _, want := range []string{"BROKEN", "bundle.unambiguous", "bundle_ambiguous", entries, "more than once"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if code := run(ctx, []string{"verify", "--format", "json", path}, &out, &errb); code != exitBroken {
		t.Fatalf("verify json exit %d", code)
	}
	var rep verifier.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != verifier.Broken || len(rep.Checks) != 1 || rep.Checks[0].Code != verifier.CodeAmbiguous || rep.Checks[0].Where != entries {
		t.Fatalf("json report %+v", rep)
	}

	out.Reset()
	if code := run(ctx, []string{"verify", "--format", "html", path}, &out, &errb); code != exitBroken {
		t.Fatalf("verify html exit %d", code)
	}
	if h := out.String(); !strings.Contains(h, "bundle_ambiguous") || strings.Contains(h, "9800") || strings.Contains(h, "4800") {
		t.Errorf("the HTML report must name the ambiguity and show no timeline from either copy")
	}

	out.Reset()
	errb.Reset()
	if code := run(ctx, []string{"replay", path}, &out, &errb); code != exitBroken {
		t.Fatalf("replay exit %d, want %d: %s", code, exitBroken, errb.String())
	}
	if strings.Contains(out.String(), "TIMELINE") || !strings.Contains(errb.String(), "nothing is replayed") || !strings.Contains(out.String(), "bundle_ambiguous") {
		t.Errorf("replay of an ambiguous bundle:\n%s\n%s", out.String(), errb.String())
	}
}
