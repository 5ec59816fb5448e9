// Package htmlreport renders a verification report (and, for CHAP chains, the replayed
// timeline) as one self-contained HTML file a regulator can open offline: inline CSS, no
// script, no external asset of any kind (no font, image, stylesheet or link that loads
// anything), every value from the bundle escaped by html/template. A Content-Security-Policy
// meta tag forbids loading anything even if a future template forgot.
//
// The page reads top down: a summary first (verdict, what was verified, not evaluated or
// broken, chains, seals, witnesses, keys, and whether the keys were pinned), then the detail.
// A chain's timeline is cut to a number of rows (Input.MaxEntries) so that a chain of millions
// of entries still gives a page a browser renders at once; refused entries, entries a check
// found broken and entries with a replay finding are always shown. Each CHAP task has its own
// section, and overrides show their change as a field-by-field before/after table.
package htmlreport

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/evident-log/evident/ledger/profile/chap/replay"
	"github.com/evident-log/evident/verifier"
)

// DefaultMaxEntries is how many timeline rows of each chain a report shows when
// Input.MaxEntries is zero.
const DefaultMaxEntries = 2000

//go:embed report.html.tmpl
var files embed.FS

var tmpl = template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
	"upper": func(s verifier.Status) string { return strings.ToUpper(string(s)) },
	"mark":  mark,
	"orDash": func(s string) string {
		if s == "" {
			return "–"
		}
		return s
	},
	"join":  strings.Join,
	"name":  name,
	"hash":  hash,
	"num":   num,
	"plain": plainStatus,
	"deref": func(b *bool) bool { return b != nil && *b },
}).ParseFS(files, "report.html.tmpl"))

// Input is what the report shows.
type Input struct {
	Report    *verifier.Report
	Timelines []*replay.Timeline // CHAP timelines; may be empty
	// MaxEntries bounds the timeline rows shown per chain (and the task sections per chain):
	// 0 means DefaultMaxEntries, a negative value shows every row. Refused entries, entries a
	// check found broken and entries with a replay finding are shown whatever the bound.
	MaxEntries int
}

// Write renders the report.
func Write(w io.Writer, in Input) error {
	if in.Report == nil {
		return fmt.Errorf("htmlreport: no report")
	}
	if err := tmpl.Execute(w, build(in)); err != nil {
		return fmt.Errorf("htmlreport: %w", err)
	}
	return nil
}

func mark(s verifier.Status) string {
	switch s {
	case verifier.Verified:
		return "✓"
	case verifier.Broken:
		return "✗"
	}
	return "?"
}

func plainStatus(s verifier.Status) string { return strings.ReplaceAll(string(s), "_", " ") }
