package htmlreport

import (
	"html/template"
	"strconv"
	"strings"
	"unicode/utf8"
)

// breakAfter are the characters after which a name (URI, kid, task or chain id) may wrap:
// the places a reader expects a long identifier to be cut, never inside a word.
const breakAfter = "/:.#@?&=_-+,;"

// longRun is the length of a run without any breakAfter character (a hex digest, a base64
// key id) past which the name may also wrap every longRun characters: such runs are not
// words, and unbroken they would push the table off the page.
const longRun = 24

// shortName is the length up to which a name is never wrapped: it fits any column.
const shortName = 20

// name escapes s and marks where it may wrap (<wbr>), so a table column never breaks a name
// in the middle of a word and never overflows the page either.
func name(s string) template.HTML {
	if utf8.RuneCountInString(s) <= shortName {
		return template.HTML(template.HTMLEscapeString(s))
	}
	var b strings.Builder
	rs := []rune(s)
	run := 0
	for i, r := range rs {
		b.WriteString(template.HTMLEscapeString(string(r)))
		run++
		last := i == len(rs)-1
		switch {
		case strings.ContainsRune(breakAfter, r):
			// Not after a leading separator, nor inside a run of them ("://"), nor at the end.
			if i > 0 && !last && !strings.ContainsRune(breakAfter, rs[i+1]) {
				b.WriteString("<wbr>")
			}
			run = 0
		case run >= longRun && !last:
			b.WriteString("<wbr>")
			run = 0
		}
	}
	return template.HTML(b.String())
}

// shortHashHex is how many hex digits of a digest a table shows on each side of the ellipsis.
const shortHashHex = 10

// hash shows a digest or key hash in monospace, shortened with an ellipsis when long; the
// full value is in the title attribute (a tooltip on screen) and is selectable text.
func hash(s string) template.HTML {
	if s == "" {
		return "–"
	}
	prefix, hex := "", s
	if i := strings.LastIndexAny(s, ":+"); i >= 0 {
		prefix, hex = s[:i+1], s[i+1:]
	}
	if len(hex) <= 2*shortHashHex+4 {
		return template.HTML(`<span class="mono">` + name(s) + `</span>`)
	}
	short := prefix + hex[:shortHashHex] + "…" + hex[len(hex)-shortHashHex/2:]
	esc := template.HTMLEscapeString
	return template.HTML(`<span class="mono h" title="` + esc(s) + `">` + esc(short) + `</span>`)
}

// num writes a count with thousands separators: 1,000,000.
func num(n any) string {
	var s string
	switch v := n.(type) {
	case int:
		s = strconv.Itoa(v)
	case uint64:
		s = strconv.FormatUint(v, 10)
	case int64:
		s = strconv.FormatInt(v, 10)
	default:
		return "?"
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
