package canonical

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// DefaultMaxDepth is the nesting limit used when Options.MaxDepth is zero.
const DefaultMaxDepth = 64

// DefaultMaxSize is the input size limit in bytes used when Options.MaxSize
// is zero.
const DefaultMaxSize = 1 << 20

// maxDepthCap bounds recursion whatever the caller asks for; Encode uses it
// too, so every parsed value can be encoded and a cyclic Object is refused.
const maxDepthCap = 10000

// Options bounds and shapes parsing. The zero value is general RFC 8785
// JSON with the default limits.
type Options struct {
	// MaxDepth is the maximum nesting of arrays and objects; 0 (or a negative
	// value) means DefaultMaxDepth, and values above 10000 are treated as 10000.
	MaxDepth int
	// MaxSize is the maximum input size in bytes; 0 (or a negative value)
	// means DefaultMaxSize.
	MaxSize int
	// SafeIntegersOnly applies the CHAP number rule: only numbers whose exact
	// value is an integer with |n| <= 2^53-1 are accepted.
	SafeIntegersOnly bool
}

// CHAP is the option set for CHAP 0.3 envelopes: default limits and the
// safe-integer number rule.
var CHAP = Options{SafeIntegersOnly: true}

func (o Options) limits() (depth, size int) {
	depth, size = o.MaxDepth, o.MaxSize
	if depth <= 0 {
		depth = DefaultMaxDepth
	}
	if depth > maxDepthCap {
		depth = maxDepthCap
	}
	if size <= 0 {
		size = DefaultMaxSize
	}
	return depth, size
}

// Value is a parsed JSON value: nil (null), bool, Number, string, []Value or
// *Object.
type Value = any

// Number is a JSON number held as its RFC 8785 canonical text, for example
// "2" for an input of 2.0 under CHAP or "1e+21" for 1e21.
type Number string

// Int64 returns the number as an int64 when it is an integer in range.
func (n Number) Int64() (int64, bool) {
	i, err := strconv.ParseInt(string(n), 10, 64)
	return i, err == nil
}

// Member is one name/value pair of an Object.
type Member struct {
	Key   string
	Value Value
}

// Object is a JSON object with its members in input order. Parse never
// produces duplicate keys; Encode refuses an Object that has them.
type Object struct {
	Members []Member
}

// Get returns the value of the member named key.
func (o *Object) Get(key string) (Value, bool) {
	if o == nil {
		return nil, false
	}
	for i := range o.Members {
		if o.Members[i].Key == key {
			return o.Members[i].Value, true
		}
	}
	return nil, false
}

// String returns the member named key if it exists and is a string.
func (o *Object) String(key string) (string, bool) {
	v, ok := o.Get(key)
	s, isString := v.(string)
	return s, ok && isString
}

// Object returns the member named key if it exists and is a non-nil object.
func (o *Object) Object(key string) (*Object, bool) {
	v, ok := o.Get(key)
	obj, isObject := v.(*Object)
	return obj, ok && isObject && obj != nil
}

// Without returns a shallow copy of o that omits the members named in keys.
// The member values are shared with o, not copied.
func (o *Object) Without(keys ...string) *Object {
	if o == nil {
		return &Object{}
	}
	out := &Object{Members: make([]Member, 0, len(o.Members))}
	for _, m := range o.Members {
		if !slices.Contains(keys, m.Key) {
			out.Members = append(out.Members, m)
		}
	}
	return out
}

// WithoutIn returns a copy of o whose object member named member lacks keys (o itself when
// that member is absent or not an object).
func (o *Object) WithoutIn(member string, keys ...string) *Object {
	inner, ok := o.Object(member)
	if !ok {
		return o
	}
	out := &Object{Members: slices.Clone(o.Members)}
	for i, m := range out.Members {
		if m.Key == member {
			out.Members[i].Value = inner.Without(keys...)
		}
	}
	return out
}

// Sentinel errors carried in Error.Code; test for them with errors.Is.
var (
	// ErrSyntax reports input that is not RFC 8259 JSON, including trailing data.
	ErrSyntax = errors.New("JSON syntax error")
	// ErrInvalidUTF8 reports bytes that are not well-formed UTF-8.
	ErrInvalidUTF8 = errors.New("invalid UTF-8")
	// ErrLoneSurrogate reports a \u escape of a surrogate that is not part of a valid pair.
	ErrLoneSurrogate = errors.New("lone surrogate escape")
	// ErrDuplicateKey reports an object with two members of the same name.
	ErrDuplicateKey = errors.New("duplicate object key")
	// ErrTooDeep reports nesting deeper than the allowed depth.
	ErrTooDeep = errors.New("nesting too deep")
	// ErrTooLarge reports input longer than the allowed size.
	ErrTooLarge = errors.New("input too large")
	// ErrNumber reports a number that is out of range or, under CHAP, not a
	// safe integer; from Encode it also reports a Number not in canonical form.
	ErrNumber = errors.New("number not allowed")
	// ErrUnsupportedType reports a Go value that Encode cannot represent.
	ErrUnsupportedType = errors.New("unsupported value type")
)

// Error describes why input was refused. Code is one of the sentinel errors,
// Offset is the byte offset in the input (-1 for errors from Encode) and
// Detail is a short, bounded human-readable explanation.
type Error struct {
	Code   error
	Offset int
	Detail string
}

// Error returns the message, for example
// `canonical: duplicate object key at offset 12: key "a"`.
func (e *Error) Error() string {
	msg := "canonical: " + e.Code.Error()
	if e.Offset >= 0 {
		msg += " at offset " + strconv.Itoa(e.Offset)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Unwrap returns Code, so errors.Is(err, ErrDuplicateKey) and the like work.
func (e *Error) Unwrap() error { return e.Code }

func newError(code error, offset int, format string, args ...any) *Error {
	return &Error{Code: code, Offset: offset, Detail: fmt.Sprintf(format, args...)}
}

// maxQuoted bounds how much input text an error message may carry.
const maxQuoted = 32

// quote renders untrusted text for an error message: Go-quoted (so control
// characters and invalid bytes cannot reach a log raw) and truncated.
func quote(s string) string {
	if len(s) > maxQuoted {
		return strconv.Quote(s[:maxQuoted]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
	}
	return strconv.Quote(s)
}
