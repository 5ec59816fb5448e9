package depgraph

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/gendoc"
)

var update = flag.Bool("update", false, "rewrite the generated sections of docs/packages.md")

// root is the module's directory, from this package's.
const root = "../.."

func load(t *testing.T) Graph {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g, err := Load(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if len(g) < 50 {
		t.Fatalf("only %d packages listed", len(g))
	}
	return g
}

// offline are the packages a regulator's machine runs: the verifier, the CLI and the witness.
var offline = []string{"verifier", "verifier/htmlreport", "cmd/evident", "cmd/evident-witness", "witness"}

// formats are the packages that define a format and its parser, which the service and the
// verifier both build on.
var formats = []string{"api", "bundle", "entryreceipt", "ledger", "ledger/canonical", "ledger/strictjson", "ledger/profile",
	"ledger/profile/service", "misbehaviour", "receipts", "regpolicy", "servicekey", "tlogpolicy", "tlogwitness", "trustfile"}

// TestLayers: the offline tools link no service, database or object-store code; the format
// packages import neither the service, nor the log, nor the verifier; and a profile's package
// is imported by the registry, by its own subtree and its scenario, and otherwise only by the
// features that are one profile's by name (CHAP's story and replay views, the COP Ledger
// command) — never by the service.
func TestLayers(t *testing.T) {
	g := load(t)
	for _, p := range offline {
		if _, ok := g[p]; !ok {
			t.Fatalf("no package %s", p)
		}
		for q := range g {
			if strings.HasPrefix(q, "internal/evidentd/") && g.Reaches(p, q) {
				t.Errorf("%s imports the service's %s", p, q)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		_, mods, err := Deps(ctx, root, p)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mods {
			for _, bad := range []string{"cockroachdb/pebble", "go-sql-driver/mysql", "modernc.org/sqlite", "aws-sdk-go", "transparency-dev/tessera", "prometheus"} {
				if strings.Contains(m, bad) {
					t.Errorf("%s links %s", p, m)
				}
			}
		}
	}
	for _, p := range formats {
		if _, ok := g[p]; !ok {
			t.Fatalf("no package %s", p)
		}
		for q := range g {
			if (strings.HasPrefix(q, "internal/evidentd/") || q == "log" || q == "verifier" || q == "witness" || strings.HasPrefix(q, "cmd/")) && g.Reaches(p, q) {
				t.Errorf("format package %s imports %s", p, q)
			}
		}
	}
	profiles := []string{}
	for p := range g {
		if rest, ok := strings.CutPrefix(p, "ledger/profile/"); ok && !strings.Contains(rest, "/") && rest != "service" {
			profiles = append(profiles, p)
		}
	}
	if len(profiles) < 5 {
		t.Fatalf("profiles %q", profiles)
	}
	byName := map[string][]string{ // importers allowed beside the registry, its subtree and its scenario
		"ledger/profile/chap": {"cmd/evident", "verifier", "verifier/htmlreport", "internal/chaptest", "verifier/internal/testbundle"},
		"ledger/profile/cop":  {"cmd/evident"},
	}
	for _, prof := range profiles {
		name := strings.TrimPrefix(prof, "ledger/profile/")
		for q, imps := range g {
			if !slices.Contains(imps, prof) || q == "ledger/profile" || strings.HasPrefix(q, prof+"/") ||
				q == "internal/scenario/"+name+"scenario" || strings.HasPrefix(q, "testvectors/") || slices.Contains(byName[prof], q) {
				continue
			}
			t.Errorf("%s imports the profile package %s", q, prof)
		}
	}
}

// drawn leaves out of the drawing the test fixtures, the internal tools and the small leaf
// helpers (echo, rawjson, durable, …), which every layer may use.
func drawn(p string) bool {
	for _, prefix := range []string{"internal/scenario/", "internal/cmd/", "testvectors/", "verifier/internal/", "ledger/internal/", "internal/evidentd/store/legacy/internal/"} {
		if strings.HasPrefix(p, prefix) {
			return false
		}
	}
	switch p {
	case "internal/testinfra", "internal/chaptest", "internal/testkeys", "internal/benchutil", "internal/toyprofile", "internal/profiledocs",
		"internal/depgraph", "internal/gendoc", "internal/evidentd/store/storetest", "regpolicy/regpolicytest",
		"internal/echo", "internal/rawjson", "internal/durable", "internal/wait", "internal/logging", "internal/buildinfo", "internal/netlimit", "internal/sigalg":
		return false
	}
	return true
}

// TestDocsCurrent: docs/packages.md holds the graph and the link lists of today's code.
func TestDocsCurrent(t *testing.T) {
	g := load(t)
	var links strings.Builder
	links.WriteString("| command | packages of this module | other modules |\n|---|---|---|\n")
	for _, c := range []string{"cmd/evident", "cmd/evident-witness", "cmd/evidentd"} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		own, mods, err := Deps(ctx, root, c)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&links, "| `%s` | %d | %d: %s |\n", c, len(own), len(mods), strings.Join(mods, ", "))
	}
	gendoc.Keep(t, root+"/docs/packages.md", *update, "go test ./internal/depgraph -update",
		gendoc.Section{Name: "import-graph", Body: g.Without(func(p string) bool { return !drawn(p) }).Reduced().Mermaid()},
		gendoc.Section{Name: "links", Body: links.String()})
}

// TestReduced: an edge another path implies is dropped, the others kept.
func TestReduced(t *testing.T) {
	g := Graph{"a": {"b", "c"}, "b": {"c"}, "c": {}, "d": {"c"}}
	r := g.Reduced()
	if !slices.Equal(r["a"], []string{"b"}) || !slices.Equal(r["b"], []string{"c"}) || !slices.Equal(r["d"], []string{"c"}) {
		t.Fatalf("%v", r)
	}
	if !g.Reaches("a", "c") || g.Reaches("c", "a") {
		t.Fatal("Reaches")
	}
	w := g.Without(func(p string) bool { return p == "b" })
	if _, ok := w["b"]; ok || !slices.Equal(w["a"], []string{"c"}) {
		t.Fatalf("Without %v", w)
	}
	if m := r.Mermaid(); !strings.Contains(m, `n_a["a"]`) || !strings.Contains(m, "n_a --> n_b") || strings.Contains(m, "n_a --> n_c") {
		t.Fatalf("Mermaid:\n%s", m)
	}
}
