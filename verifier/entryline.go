package verifier

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/evident-log/evident/ledger"
)

// entryLine is one parsed line of entries.jsonl. Record aliases the line's bytes.
type entryLine struct {
	Seq     uint64
	Prev    ledger.Link
	Link    ledger.Link
	Arrival time.Time
	Record  []byte
	Meta    []byte // nil when the line has no meta member
}

// EntryRecord reads one line of entries.jsonl under the verifier's rules (parseEntryLine) and
// returns its seq, its record and the record's metadata (nil when none), aliasing line: for a
// reader of a bundle already verified, such as evident replay.
func EntryRecord(line []byte) (seq uint64, record, meta []byte, err error) {
	e, err := parseEntryLine(line)
	return e.Seq, e.Record, e.Meta, err
}

// parseEntryLine splits one line of entries.jsonl ({"seq","prev","link","arrival","record"}
// and an optional "meta")
// without decoding the record: the record's bytes go to the profile's own strict parser, which
// decides what they mean. The line itself is held to strict rules: every member exactly once,
// no other member, seq a plain decimal integer, links in their only spelling, arrival RFC 3339,
// nothing after the object but whitespace. Duplicate members are refused so that no other
// reader of the bundle can be shown a different record than the one verified.
func parseEntryLine(line []byte) (entryLine, error) {
	var e entryLine
	if !utf8.Valid(line) {
		return e, errors.New("line is not valid UTF-8")
	}
	sc := lineScanner{b: line, clean: !hasControl(line)}
	i := skipWS(line, 0)
	if i >= len(line) || line[i] != '{' {
		return e, errors.New("line is not a JSON object")
	}
	i++
	const (
		hasSeq = 1 << iota
		hasPrev
		hasLink
		hasArrival
		hasRecord
		hasMeta
		hasAll = hasSeq | hasPrev | hasLink | hasArrival | hasRecord
	)
	seen := 0
	first := true
	for {
		i = skipWS(line, i)
		if i >= len(line) {
			return e, errors.New("unterminated object")
		}
		if line[i] == '}' {
			i++
			break
		}
		if !first {
			if line[i] != ',' {
				return e, fmt.Errorf("expected ',' or '}' at offset %d", i)
			}
			i = skipWS(line, i+1)
		}
		first = false
		kEnd, err := sc.skipString(i)
		if err != nil {
			return e, fmt.Errorf("member name: %w", err)
		}
		key, err := memberName(line[i:kEnd])
		if err != nil {
			return e, fmt.Errorf("member name: %w", err)
		}
		i = skipWS(line, kEnd)
		if i >= len(line) || line[i] != ':' {
			return e, fmt.Errorf("expected ':' after %q", key)
		}
		i = skipWS(line, i+1)
		vEnd, err := sc.skipValue(i)
		if err != nil {
			return e, fmt.Errorf("member %q: %w", key, err)
		}
		val := line[i:vEnd]
		i = vEnd
		var bit int
		switch key {
		case "seq":
			bit = hasSeq
			e.Seq, err = parseSeq(val)
		case "prev":
			bit = hasPrev
			e.Prev, err = parseLinkValue(val)
		case "link":
			bit = hasLink
			e.Link, err = parseLinkValue(val)
		case "arrival":
			bit = hasArrival
			var s string
			if s, err = decodeString(val); err == nil {
				e.Arrival, err = time.Parse(time.RFC3339Nano, s)
			}
		case "record":
			bit = hasRecord
			if len(val) == 0 || val[0] != '{' {
				err = errors.New("record must be a JSON object")
			}
			e.Record = val
		case "meta":
			bit = hasMeta
			if len(val) == 0 || val[0] != '{' {
				err = errors.New("meta must be a JSON object")
			}
			e.Meta = val
		default:
			return e, fmt.Errorf("unknown member %.40q", key)
		}
		if err != nil {
			return e, fmt.Errorf("member %q: %w", key, err)
		}
		if seen&bit != 0 {
			return e, fmt.Errorf("duplicate member %q", key)
		}
		seen |= bit
	}
	if skipWS(line, i) != len(line) {
		return e, errors.New("data after the entry object")
	}
	if seen&hasAll != hasAll {
		var missing []string
		for j, n := range []string{"seq", "prev", "link", "arrival", "record"} {
			if seen&(1<<j) == 0 {
				missing = append(missing, n)
			}
		}
		return e, fmt.Errorf("missing member(s) %q", missing)
	}
	return e, nil
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// memberNames are the members an entry line may have, as memberName returns them.
var memberNames = [...]string{"seq", "prev", "link", "arrival", "record", "meta"}

// memberName decodes a member-name token (quotes included). The names of the format come
// back without allocating; any other name, or one spelled with escapes, is decoded in full.
func memberName(tok []byte) (string, error) {
	if len(tok) >= 2 && bytes.IndexByte(tok, '\\') < 0 {
		for _, n := range memberNames {
			if string(tok[1:len(tok)-1]) == n {
				return n, nil
			}
		}
	}
	return decodeString(tok)
}

// inString[c] is true for the bytes that continue a JSON string without ending it, starting
// an escape or being a control character.
var inString = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// lineScanner finds the ends of the values of one line. clean says the line holds no byte
// below 0x20 (no control character, and no whitespace but spaces), so a string can be skipped
// by searching for its quote and backslashes alone, with the same result.
type lineScanner struct {
	b     []byte
	clean bool
}

// hasControl reports whether b holds a byte below 0x20, eight bytes at a time: a byte x of a
// word is below 0x20 exactly when x-0x20 borrows and x has its top bit clear; the lowest such
// byte is always reported, so the word test is exact.
func hasControl(b []byte) bool {
	const ones, highs = 0x2020202020202020, 0x8080808080808080
	for ; len(b) >= 8; b = b[8:] {
		x := binary.LittleEndian.Uint64(b)
		if (x-ones)&^x&highs != 0 {
			return true
		}
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// skipString returns the offset just past the JSON string starting at b[i].
func (sc lineScanner) skipString(i int) (int, error) {
	b := sc.b
	if i >= len(b) || b[i] != '"' {
		return 0, errors.New("expected a string")
	}
	if sc.clean {
		return skipCleanString(b, i+1)
	}
	for j := i + 1; j < len(b); j++ {
		for j < len(b) && inString[b[j]] {
			j++
		}
		if j == len(b) {
			break
		}
		switch c := b[j]; {
		case c == '"':
			return j + 1, nil
		case c == '\\':
			j++
		default:
			return 0, errors.New("control character in string")
		}
	}
	return 0, errors.New("unterminated string")
}

// skipCleanString is skipString from just after the opening quote for a line without
// control characters: it jumps from backslash to backslash up to the closing quote. The
// next quote is looked for again only once an escape has consumed it, so a string of many
// escapes is walked once, not once per escape.
func skipCleanString(b []byte, j int) (int, error) {
	q := -1 // the next quote at or after j, once found
	for j < len(b) {
		if q < j {
			n := bytes.IndexByte(b[j:], '"')
			if n < 0 {
				break
			}
			q = j + n
		}
		esc := bytes.IndexByte(b[j:q], '\\')
		if esc < 0 {
			return q + 1, nil
		}
		j += esc + 2 // the backslash and the byte it escapes
	}
	return 0, errors.New("unterminated string")
}

// skipValue returns the offset just past the JSON value starting at b[i]. It checks structure
// only as far as needed to find the value's end; the value is decoded (strictly) by its
// consumer, whose parser applies the record limits. Nesting is held on an explicit stack of
// one byte a level, so no depth drives the splitter into deep recursion.
func (sc lineScanner) skipValue(i int) (int, error) {
	b := sc.b
	var closers []byte // the open arrays' and objects' closers, innermost last
	for {
		if i >= len(b) {
			return 0, errors.New("missing value")
		}
		var err error
		switch b[i] {
		case '"':
			if i, err = sc.skipString(i); err != nil {
				return 0, err
			}
		case '{', '[':
			closer := b[i] + 2 // '}' is '{'+2, ']' is '['+2
			j := skipWS(b, i+1)
			if j < len(b) && b[j] == closer {
				i = j + 1
				break
			}
			closers = append(closers, closer)
			if closer == '}' {
				if j, err = sc.memberColon(j); err != nil {
					return 0, err
				}
			}
			i = j
			continue
		default:
			j := i
			for j < len(b) && (b[j] == '-' || b[j] == '+' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' ||
				'0' <= b[j] && b[j] <= '9' || 'a' <= b[j] && b[j] <= 'z') {
				j++
			}
			if j == i {
				return 0, fmt.Errorf("unexpected %q", b[i])
			}
			if !json.Valid(b[i:j]) {
				return 0, fmt.Errorf("invalid literal %.20q", b[i:j])
			}
			i = j
		}
		// After a value: close the containers it completes, or go on to the next member.
		for {
			if len(closers) == 0 {
				return i, nil
			}
			j := skipWS(b, i)
			if j >= len(b) {
				return 0, errors.New("unterminated container")
			}
			closer := closers[len(closers)-1]
			if b[j] == closer {
				closers = closers[:len(closers)-1]
				i = j + 1
				continue
			}
			if b[j] != ',' {
				return 0, fmt.Errorf("unexpected %q in container", b[j])
			}
			j = skipWS(b, j+1)
			if closer == '}' {
				if j, err = sc.memberColon(j); err != nil {
					return 0, err
				}
			}
			i = j
			break
		}
	}
}

// memberColon skips a member name and its ':' from b[j], returning where the value starts.
func (sc lineScanner) memberColon(j int) (int, error) {
	b := sc.b
	j, err := sc.skipString(j)
	if err != nil {
		return 0, err
	}
	j = skipWS(b, j)
	if j >= len(b) || b[j] != ':' {
		return 0, errors.New("expected ':'")
	}
	return skipWS(b, j+1), nil
}

// decodeString decodes a JSON string token (quotes included).
func decodeString(tok []byte) (string, error) {
	if len(tok) >= 2 && tok[0] == '"' && tok[len(tok)-1] == '"' && bytes.IndexByte(tok, '\\') < 0 {
		return string(tok[1 : len(tok)-1]), nil
	}
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return "", errors.New("not a JSON string")
	}
	return s, nil
}

func parseSeq(v []byte) (uint64, error) {
	if len(v) == 0 || len(v) > 1 && v[0] == '0' {
		return 0, errors.New("seq must be a decimal integer without leading zeros")
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, errors.New("seq must be a non-negative decimal integer")
		}
	}
	n, err := strconv.ParseUint(string(v), 10, 64)
	if err != nil {
		return 0, errors.New("seq out of range")
	}
	return n, nil
}

// parseLinkValue parses a link token (quotes included); one without escapes is read in place.
func parseLinkValue(v []byte) (ledger.Link, error) {
	if n := len(v); n >= 2 && v[0] == '"' && v[n-1] == '"' && bytes.IndexByte(v, '\\') < 0 {
		return ledger.ParseLinkBytes(v[1 : n-1])
	}
	s, err := decodeString(v)
	if err != nil {
		return ledger.Link{}, err
	}
	return ledger.ParseLink(s)
}
