// Package profiledocs writes the docs' tables of what the profiles declare (their codes and
// their checks) from the registry (ledger/profile), so that docs/errors.md and
// docs/report.md list exactly what the served profiles define and no document is edited by
// hand when a profile is added. A test keeps the files current; `go test
// ./internal/profiledocs -update` rewrites them.
package profiledocs

import (
	"fmt"
	"strings"

	"github.com/evident-log/evident/ledger/profile"
)

// Tables, by the name of the generated section they fill.
const (
	CodesSection  = "profile-codes"  // docs/errors.md: every code the profiles declare
	ChecksSection = "profile-checks" // docs/report.md: every check the profiles run
)

// Codes returns the markdown table of the registry's codes: code, kind, HTTP status (— when
// the code is no HTTP problem), profile, meaning.
func Codes(r *profile.Registry) string {
	var b strings.Builder
	b.WriteString("| code | kind | http status | profile | meaning |\n|---|---|---|---|---|\n")
	for _, c := range r.Codes() {
		status := "—"
		if c.HTTP != 0 {
			status = fmt.Sprint(c.HTTP)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | `%s` | %s |\n", c.Code, cell(c.Kind), status, c.Profile, cell(c.Meaning))
	}
	return b.String()
}

// Checks returns the markdown table of the registry's checks: name, meaning.
func Checks(r *profile.Registry) string {
	var b strings.Builder
	b.WriteString("| name | meaning |\n|---|---|\n")
	for _, c := range r.Checks() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", c.Name, cell(c.Meaning))
	}
	return b.String()
}

// cell escapes what would end a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
