package verifier_test

import (
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/evident-log/evident/verifier"
)

// docTables reads the tables of a markdown file, keyed by the heading above each table
// (without its leading #s): every row's cells, header and separator rows left out.
func docTables(t *testing.T, path string) map[string][][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tables := map[string][][]string{}
	heading, row := "", 0
	for line := range strings.SplitSeq(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
			heading, row = strings.TrimSpace(strings.TrimLeft(line, "#")), 0
		case strings.HasPrefix(line, "|"):
			row++
			if row <= 2 { // header and separator
				continue
			}
			var cells []string
			for c := range strings.SplitSeq(strings.Trim(strings.ReplaceAll(line, `\|`, "\x00"), "|"), "|") {
				cells = append(cells, strings.Trim(strings.TrimSpace(strings.ReplaceAll(c, "\x00", "|")), "`"))
			}
			tables[heading] = append(tables[heading], cells)
		default:
			row = 0
		}
	}
	return tables
}

// column returns the first cell of every row.
func column(rows [][]string) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r[0])
	}
	return out
}

// columnOf is column typed as the check names or codes it lists.
func columnOf[S ~string](rows [][]string) []S {
	var out []S
	for _, c := range column(rows) {
		out = append(out, S(c))
	}
	return out
}

// jsonFields returns a struct's JSON member names in field order.
func jsonFields(typ reflect.Type) []string {
	var out []string
	for f := range typ.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// TestReportDocMatchesCode holds docs/report.md to the code: the check and code tables list
// exactly CheckNames (the verifier's own, then the profiles') and Codes, in order; every verdict has its exit code; and every JSON
// object of the report has a table listing exactly its members.
func TestReportDocMatchesCode(t *testing.T) {
	tables := docTables(t, "../docs/report.md")

	checks := append(tables["Checks"], tables["Checks of the profiles"]...)
	if got, want := columnOf[verifier.CheckName](checks), verifier.CheckNames(); !slices.Equal(got, want) {
		t.Errorf("docs/report.md check table:\n got %q\nwant %q", got, want)
	}
	if got, want := columnOf[verifier.Code](tables["Codes"]), verifier.Codes(); !slices.Equal(got, want) {
		t.Errorf("docs/report.md code table:\n got %q\nwant %q", got, want)
	}

	var verdicts []verifier.Status
	for _, r := range tables["Verdicts"] {
		st := verifier.Status(r[0])
		verdicts = append(verdicts, st)
		rep := verifier.Report{Verdict: st}
		if code, err := strconv.Atoi(r[2]); err != nil || code != rep.ExitCode() {
			t.Errorf("verdict %s: docs/report.md says exit code %q, ExitCode returns %d", st, r[2], rep.ExitCode())
		}
	}
	slices.Sort(verdicts)
	if want := []verifier.Status{verifier.Broken, verifier.NotEvaluated, verifier.Verified}; !slices.Equal(verdicts, want) {
		t.Errorf("docs/report.md verdicts %q, want %q", verdicts, want)
	}

	// Every struct type reachable from Report has a table under a heading of its name
	// ("Report" itself under "Report").
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] {
			return
		}
		seen[typ] = true
		rows, ok := tables[typ.Name()]
		if !ok {
			t.Errorf("docs/report.md has no table for %s", typ.Name())
		} else if got, want := column(rows), jsonFields(typ); !slices.Equal(got, want) {
			t.Errorf("docs/report.md table %s:\n got %q\nwant %q", typ.Name(), got, want)
		}
		for f := range typ.Fields() {
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[verifier.Report]())
	if len(seen) < 9 {
		t.Errorf("only %d report types walked", len(seen))
	}
}

// TestNamesAndCodesUnique keeps the exported lists free of repeats and empty values.
func TestNamesAndCodesUnique(t *testing.T) {
	unique(t, "CheckNames", verifier.CheckNames())
	unique(t, "Codes", verifier.Codes())
}

// unique reports an empty or repeated value of list.
func unique[S ~string](t *testing.T, what string, list []S) {
	t.Helper()
	seen := map[S]bool{}
	for _, s := range list {
		if s == "" || seen[s] {
			t.Errorf("%s: %q empty or repeated", what, s)
		}
		seen[s] = true
	}
}
