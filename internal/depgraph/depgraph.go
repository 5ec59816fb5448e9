// Package depgraph reads the module's package graph with `go list` and draws it for
// docs/packages.md: the import graph of the packages a user runs or imports (test fixtures
// left out, implied edges dropped) and what each command links. Its test holds the layers to
// their rules and keeps the document current.
package depgraph

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// Module is the module path; the graph names packages relative to it.
const Module = "github.com/evident-log/evident"

// Graph maps each package of the module (relative path, "." for the root) to the module
// packages it imports, tests not counted.
type Graph map[string][]string

// Load lists the module's packages under dir with `go list`.
func Load(ctx context.Context, dir string) (Graph, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("depgraph: go list: %w", err)
	}
	g := Graph{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		pkg, ok := rel(f[0])
		if !ok {
			continue
		}
		g[pkg] = nil
		for _, imp := range f[1:] {
			if r, ok := rel(imp); ok {
				g[pkg] = append(g[pkg], r)
			}
		}
		slices.Sort(g[pkg])
	}
	return g, sc.Err()
}

// Deps lists the module packages a command links, as `go list -deps` does, and the other
// modules it links.
func Deps(ctx context.Context, dir, pkg string) (own, modules []string, err error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-f", `{{if not .Standard}}{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}{{end}}`, "./"+pkg)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("depgraph: go list -deps %s: %w", pkg, err)
	}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		if r, ok := rel(f[0]); ok {
			own = append(own, r)
		} else if !slices.Contains(modules, f[1]) {
			modules = append(modules, f[1])
		}
	}
	slices.Sort(own)
	slices.Sort(modules)
	return own, modules, nil
}

func rel(path string) (string, bool) {
	if path == Module {
		return ".", true
	}
	r, ok := strings.CutPrefix(path, Module+"/")
	return r, ok
}

// Reaches reports whether from imports to, directly or not.
func (g Graph) Reaches(from, to string) bool {
	seen := map[string]bool{}
	var walk func(string) bool
	walk = func(p string) bool {
		if p == to {
			return true
		}
		if seen[p] {
			return false
		}
		seen[p] = true
		return slices.ContainsFunc(g[p], walk)
	}
	return slices.ContainsFunc(g[from], walk)
}

// Without returns the graph without the packages drop reports.
func (g Graph) Without(drop func(string) bool) Graph {
	out := Graph{}
	for p, imps := range g {
		if drop(p) {
			continue
		}
		for _, i := range imps {
			if !drop(i) {
				out[p] = append(out[p], i)
			}
		}
		if out[p] == nil {
			out[p] = []string{}
		}
	}
	return out
}

// Reduced returns the graph without the edges another path implies (its transitive
// reduction: the graph has no cycle, the compiler sees to that).
func (g Graph) Reduced() Graph {
	out := Graph{}
	for p, imps := range g {
		out[p] = []string{}
		for _, i := range imps {
			implied := slices.ContainsFunc(imps, func(o string) bool { return o != i && g.Reaches(o, i) })
			if !implied {
				out[p] = append(out[p], i)
			}
		}
	}
	return out
}

// Mermaid draws the graph as a Mermaid flowchart, importers above what they import.
func (g Graph) Mermaid() string {
	pkgs := make([]string, 0, len(g))
	for p := range g {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	id := map[string]string{}
	node := strings.NewReplacer("/", "_", "-", "_", ".", "_")
	var b strings.Builder
	b.WriteString("```mermaid\nflowchart TB\n")
	for _, p := range pkgs {
		id[p] = "n_" + node.Replace(p) // stable: a new package renames no other node
		fmt.Fprintf(&b, "  %s[\"%s\"]\n", id[p], p)
	}
	for _, p := range pkgs {
		for _, i := range g[p] {
			fmt.Fprintf(&b, "  %s --> %s\n", id[p], id[i])
		}
	}
	b.WriteString("```\n")
	return b.String()
}
