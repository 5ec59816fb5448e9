// Package htmlreport renders a verification report (and, for CHAP chains, the replayed
// timeline) as one self-contained HTML file a regulator can open offline: inline CSS, no
// script, no external asset of any kind (no font, image, stylesheet or link that loads
// anything), every value from the bundle escaped by html/template. A Content-Security-Policy
// meta tag forbids loading anything even if a future template forgot.
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

//go:embed report.html.tmpl
var files embed.FS

var tmpl = template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
	"upper": func(s verifier.Status) string { return strings.ToUpper(string(s)) },
	"mark": func(s verifier.Status) string {
		switch s {
		case verifier.Verified:
			return "✓"
		case verifier.Broken:
			return "✗"
		}
		return "?"
	},
	"orDash": func(s string) string {
		if s == "" {
			return "–"
		}
		return s
	},
	"join": strings.Join,
	"count": func(rep *verifier.Report, s string) int {
		n := 0
		for _, c := range rep.Checks {
			if string(c.Status) == s {
				n++
			}
		}
		return n
	},
}).ParseFS(files, "report.html.tmpl"))

// Input is what the report shows.
type Input struct {
	Report    *verifier.Report
	Timelines []*replay.Timeline // CHAP timelines; may be empty
}

// Write renders the report.
func Write(w io.Writer, in Input) error {
	if in.Report == nil {
		return fmt.Errorf("htmlreport: no report")
	}
	if err := tmpl.Execute(w, in); err != nil {
		return fmt.Errorf("htmlreport: %w", err)
	}
	return nil
}
