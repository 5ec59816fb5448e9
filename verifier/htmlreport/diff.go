package htmlreport

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/evident-log/evident/ledger/profile/chap/replay"
)

// maxChangeRows bounds the field rows one decision shows; the raw diff below them is complete
// up to maxRawBytes.
const maxChangeRows = 200

// maxRawBytes bounds each raw JSON text (base, diff, result) a decision shows: an artefact can
// be large, and the bundle holds it whole.
const maxRawBytes = 4096

// change is one field an override changed: its JSON Pointer and the value before and after,
// each split around the part that differs so the page can highlight it.
type change struct {
	Path   string
	Kind   string // changed, added, removed
	Before parts
	After  parts
}

// parts is a value as text split into the common head, the differing middle and the common tail.
type parts struct{ Head, Mid, Tail string }

// op is one diff operation shown as a row when the base artefact is not in the chain.
type op struct{ Op, Path, Value, From string }

// decision is a replay.Decision with its change laid out for a reader.
type decision struct {
	replay.Decision
	Changes     []change
	ChangesMore int  // changed fields not shown (over maxChangeRows)
	Ops         []op // the diff's operations, when there is no base to compare against
	RawDiff     raw
	RawBase     raw
	RawResult   raw
}

// raw is a JSON text cut to maxRawBytes.
type raw struct {
	Text string
	Cut  int // bytes cut off
}

func cut(s string) raw {
	if len(s) <= maxRawBytes {
		return raw{Text: s}
	}
	n := maxRawBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return raw{Text: s[:n], Cut: len(s) - n}
}

// newDecision lays out d: a field-by-field before/after table when both the base artefact and
// the result are known, else the diff's operations one per row.
func newDecision(d replay.Decision) decision {
	out := decision{Decision: d, RawDiff: cut(d.Diff), RawBase: cut(d.Base), RawResult: cut(d.Result)}
	if d.Diff == "" {
		return out
	}
	if d.Base != "" && d.Result != "" {
		before, errB := leaves(d.Base)
		after, errA := leaves(d.Result)
		if errB == nil && errA == nil {
			out.Changes, out.ChangesMore = compare(before, after)
			return out
		}
	}
	var ops []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(d.Diff), &ops); err != nil {
		return out
	}
	for _, o := range ops {
		row := op{Op: text(o["op"]), Path: text(o["path"]), Value: text(o["value"]), From: text(o["from"])}
		if row.Value == "" {
			row.Value = text(o["to"]) // the CHAP paper's {"op":"replace","path","from","to"}
		}
		if len(out.Ops) == maxChangeRows {
			out.ChangesMore++
			continue
		}
		out.Ops = append(out.Ops, row)
	}
	return out
}

// leaves flattens a JSON document into JSON Pointer → value text. An empty object or array is
// a leaf of its own ("{}", "[]").
func leaves(doc string) (map[string]string, error) {
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	out := map[string]string{}
	flatten(v, "", out)
	return out, nil
}

// pointerEscaper escapes an object key as a JSON Pointer reference token (RFC 6901).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func flatten(v any, path string, out map[string]string) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			out[path] = "{}"
		}
		for k, e := range t {
			flatten(e, path+"/"+pointerEscaper.Replace(k), out)
		}
	case []any:
		if len(t) == 0 {
			out[path] = "[]"
		}
		for i, e := range t {
			flatten(e, path+"/"+strconv.Itoa(i), out)
		}
	default:
		out[path] = show(t)
	}
}

// show is a leaf value for a reader: a string as itself, anything else as JSON.
func show(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return string(b)
}

// text is a raw JSON value as show has it ("" when absent).
func text(m json.RawMessage) string {
	if len(m) == 0 {
		return ""
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(m))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return string(m)
	}
	return show(v)
}

// compare lists the fields that differ between before and after, in pointer order.
func compare(before, after map[string]string) ([]change, int) {
	paths := make([]string, 0, len(before)+len(after))
	for p := range before {
		paths = append(paths, p)
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var out []change
	more := 0
	for _, p := range paths {
		b, inB := before[p]
		a, inA := after[p]
		var c change
		switch {
		case inB && inA && a == b:
			continue
		case inB && inA:
			c = change{Path: p, Kind: "changed"}
			c.Before, c.After = split(b, a)
		case inA:
			c = change{Path: p, Kind: "added", After: parts{Mid: a}}
		default:
			c = change{Path: p, Kind: "removed", Before: parts{Mid: b}}
		}
		if len(out) == maxChangeRows {
			more++
			continue
		}
		out = append(out, c)
	}
	return out, more
}

// split cuts two texts around what they share at the start and the end, on rune boundaries,
// so only the part that differs is highlighted.
func split(a, b string) (parts, parts) {
	ra, rb := []rune(a), []rune(b)
	h := 0
	for h < len(ra) && h < len(rb) && ra[h] == rb[h] {
		h++
	}
	t := 0
	for t < len(ra)-h && t < len(rb)-h && ra[len(ra)-1-t] == rb[len(rb)-1-t] {
		t++
	}
	// Cut only between words: "12_months_fees" → "24_months_fees" marks 12 and 24, but
	// "partial" → "full" and 4200 → 4800 are marked whole.
	inside := func(x []rune, i int) bool { return i >= 0 && i < len(x) && word(x[i]) }
	for h > 0 && word(ra[h-1]) && (inside(ra, h) || inside(rb, h)) {
		h--
	}
	for t > 0 && word(ra[len(ra)-t]) && (inside(ra, len(ra)-t-1) || inside(rb, len(rb)-t-1)) {
		t--
	}
	return parts{string(ra[:h]), string(ra[h : len(ra)-t]), string(ra[len(ra)-t:])},
		parts{string(rb[:h]), string(rb[h : len(rb)-t]), string(rb[len(rb)-t:])}
}

// word reports whether r is part of a word (a letter or a digit) rather than a separator.
func word(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
