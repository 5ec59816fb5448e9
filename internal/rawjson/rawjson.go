// Package rawjson finds the extent of JSON values in a byte slice without decoding them: the
// end of a value, the elements of an array, a member of an object. It is what splits request
// bodies and dumps into records before each record's own strict parser (ledger/canonical)
// reads it, and it replaces encoding/json there, whose scanner refuses nesting deeper than
// 10,000 levels. It checks the JSON grammar (not UTF-8, not duplicate names) with an explicit
// stack of one byte a level, so no nesting can exhaust the goroutine stack; the depth it
// takes is bounded only by the input's length.
package rawjson

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrSyntax is wrapped by every refusal of input that is not JSON.
var ErrSyntax = errors.New("rawjson: not JSON")

// ErrTooMany is returned by Elements for an array of more elements than allowed.
var ErrTooMany = errors.New("rawjson: too many elements")

func syntax(i int, format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", ErrSyntax, i, fmt.Sprintf(format, args...))
}

func ws(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// Valid reports whether b is one JSON value, with white space around it allowed.
func Valid(b []byte) bool {
	i := ws(b, 0)
	end, err := End(b, i)
	return err == nil && ws(b, end) == len(b)
}

// End returns the offset just past the JSON value starting at b[i] (white space before it
// skipped).
func End(b []byte, i int) (int, error) {
	var stack []byte // the closers of the open arrays and objects, innermost last
	var err error
	for {
		i = ws(b, i)
		if i >= len(b) {
			return 0, syntax(i, "unexpected end where a value was expected")
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			closer := c + 2 // '}' is '{'+2, ']' is '['+2
			i = ws(b, i+1)
			if i < len(b) && b[i] == closer {
				i++
				break
			}
			stack = append(stack, closer)
			if closer == '}' {
				if i, err = name(b, i); err != nil {
					return 0, err
				}
			}
			continue
		case c == '"':
			if i, err = str(b, i); err != nil {
				return 0, err
			}
		case c == 't' || c == 'f' || c == 'n':
			lit := "null"
			if c == 't' {
				lit = "true"
			} else if c == 'f' {
				lit = "false"
			}
			if !bytes.HasPrefix(b[i:], []byte(lit)) {
				return 0, syntax(i, "invalid literal")
			}
			i += len(lit)
		case c == '-' || c >= '0' && c <= '9':
			if i, err = num(b, i); err != nil {
				return 0, err
			}
		default:
			return 0, syntax(i, "unexpected %q where a value was expected", c)
		}
		// After a value: close what it completes, or go on to the next member or element.
		for {
			if len(stack) == 0 {
				return i, nil
			}
			i = ws(b, i)
			if i >= len(b) {
				return 0, syntax(i, "unexpected end in an array or object")
			}
			top := stack[len(stack)-1]
			if b[i] == ',' {
				i++
				if top == '}' {
					if i, err = name(b, ws(b, i)); err != nil {
						return 0, err
					}
				}
				break
			}
			if b[i] != top {
				return 0, syntax(i, "unexpected %q where ',' or %q was expected", b[i], top)
			}
			i++
			stack = stack[:len(stack)-1]
		}
	}
}

// name reads a member name and the ':' after it, returning the offset after the ':'.
func name(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return 0, syntax(i, "a member name was expected")
	}
	i, err := str(b, i)
	if err != nil {
		return 0, err
	}
	i = ws(b, i)
	if i >= len(b) || b[i] != ':' {
		return 0, syntax(i, "':' was expected")
	}
	return i + 1, nil
}

// str returns the offset past the string starting at b[i].
func str(b []byte, i int) (int, error) {
	start := i
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 >= len(b) {
				return 0, syntax(i, "unterminated escape")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+5 >= len(b) || !hex(b[i+2]) || !hex(b[i+3]) || !hex(b[i+4]) || !hex(b[i+5]) {
					return 0, syntax(i, "invalid \\u escape")
				}
				i += 5
			default:
				return 0, syntax(i, "invalid escape")
			}
		case c < 0x20:
			return 0, syntax(i, "control character in a string")
		}
	}
	return 0, syntax(start, "unterminated string")
}

func hex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// num returns the offset past the number starting at b[i].
func num(b []byte, i int) (int, error) {
	start := i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return 0, syntax(start, "invalid number")
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return 0, syntax(start, "invalid number")
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return 0, syntax(start, "invalid number")
		}
		i = j
	}
	return i, nil
}

// ElementError is the refusal of an array's element: its index and why.
type ElementError struct {
	Index int
	Err   error
}

func (e *ElementError) Error() string { return fmt.Sprintf("element %d: %v", e.Index, e.Err) }

// Unwrap returns the cause.
func (e *ElementError) Unwrap() error { return e.Err }

// Elements returns the elements of the JSON array b (white space around it allowed), each
// without the white space around it, refusing more than max (ErrTooMany; max < 1: no bound).
// An element that is not JSON is an *ElementError.
func Elements(b []byte, max int) ([][]byte, error) {
	i := ws(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, syntax(i, "not an array")
	}
	var out [][]byte
	i = ws(b, i+1)
	if i < len(b) && b[i] == ']' {
		i++
	} else {
		for {
			start := ws(b, i)
			end, err := End(b, start)
			if err != nil {
				return nil, &ElementError{Index: len(out), Err: err}
			}
			if max > 0 && len(out) == max {
				return nil, ErrTooMany
			}
			out = append(out, b[start:end])
			i = ws(b, end)
			if i < len(b) && b[i] == ',' {
				i++
				continue
			}
			if i < len(b) && b[i] == ']' {
				i++
				break
			}
			return nil, syntax(i, "',' or ']' was expected after element %d", len(out)-1)
		}
	}
	if ws(b, i) != len(b) {
		return nil, syntax(i, "data after the array")
	}
	return out, nil
}

// Member returns the value of the member named name of the JSON object b (white space
// around it allowed), and whether there is one; a name is compared as written, escapes
// and all. Two members of that name are refused, so that no reader takes the other one.
func Member(b []byte, name string) ([]byte, bool, error) {
	i := ws(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false, syntax(i, "not an object")
	}
	var found []byte
	ok := false
	i = ws(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			i = ws(b, i)
			if i >= len(b) || b[i] != '"' {
				return nil, false, syntax(i, "a member name was expected")
			}
			kEnd, err := str(b, i)
			if err != nil {
				return nil, false, err
			}
			key := b[i+1 : kEnd-1]
			i = ws(b, kEnd)
			if i >= len(b) || b[i] != ':' {
				return nil, false, syntax(i, "':' was expected")
			}
			start := ws(b, i+1)
			end, err := End(b, start)
			if err != nil {
				return nil, false, err
			}
			if string(key) == name {
				if ok {
					return nil, false, syntax(i, "member %q twice", name)
				}
				found, ok = b[start:end], true
			}
			i = ws(b, end)
			if i < len(b) && b[i] == ',' {
				i++
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return nil, false, syntax(i, "',' or '}' was expected")
		}
	}
	if ws(b, i) != len(b) {
		return nil, false, syntax(i, "data after the object")
	}
	return found, ok, nil
}

// Depth returns the deepest nesting of arrays and objects in b, counting brackets outside
// strings; it does not check that b is JSON (a refused record is measured for a message).
func Depth(b []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		}
	}
	return deepest
}
