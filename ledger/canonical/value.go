package canonical

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/evident-log/evident/internal/rawjson"
)

// DefaultMaxDepth is the default record nesting limit of evidentd (--max-depth) and of the
// verifier: far above what any JSON producer a Coordinator runs on writes (Python's json stops
// near 1,000 levels, Node's JSON.stringify at a few thousand). Parsing and encoding hold
// nesting on an explicit stack of frameSize bytes a level, never on the goroutine stack, so a
// limit costs memory in proportion to the input actually nested.
const DefaultMaxDepth = 100_000

// DefaultMaxSize is the default record size limit in bytes of evidentd (--max-record-bytes)
// and of the verifier: 32 MiB, many times the largest record an agent's draft makes (a few
// MiB).
const DefaultMaxSize = 32 << 20

// MaxDepthCap bounds the nesting of any value whatever the caller asks for: Options.MaxDepth
// above it is taken as MaxDepthCap, and Encode refuses a value nested deeper (which also
// catches a cyclic Object). At frameSize bytes a level its explicit stack stays under 100 MB.
const MaxDepthCap = 1 << 20

// MaxSizeCap is the size limit of a Parse whose Options leave it zero: 1 GiB, the most any
// record limit may be set to. What a record may be is a policy the program applies before
// parsing (Limits.Check), with the limits it was configured with.
const MaxSizeCap = 1 << 30

// Limits are a program's record limits: the nesting and size a record may have.
type Limits struct {
	MaxDepth int // most nested arrays and objects
	MaxSize  int // most bytes of input
}

// DefaultLimits returns DefaultMaxDepth and DefaultMaxSize.
func DefaultLimits() Limits { return Limits{MaxDepth: DefaultMaxDepth, MaxSize: DefaultMaxSize} }

// OrDefault returns l with each zero (or negative) field taken from DefaultLimits, and MaxDepth
// above MaxDepthCap taken as MaxDepthCap.
func (l Limits) OrDefault() Limits {
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxSize <= 0 {
		l.MaxSize = DefaultMaxSize
	}
	l.MaxDepth = min(l.MaxDepth, MaxDepthCap)
	return l
}

// Check refuses data larger or more deeply nested than l (OrDefault) allows, with the *Error
// a Parse under those limits returns (ErrTooLarge or ErrTooDeep, Limit set), without parsing
// it: nesting is counted by brackets outside strings. Data within the limits may still be
// refused by the parser for anything else.
func (l Limits) Check(data []byte) error {
	l = l.OrDefault()
	if len(data) > l.MaxSize {
		return tooLarge(len(data), l.MaxSize)
	}
	if d := rawjson.Depth(data); d > l.MaxDepth {
		return &Error{Code: ErrTooDeep, Offset: -1, Limit: l.MaxDepth,
			Detail: fmt.Sprintf("%d levels nested, more than %d nested arrays or objects", d, l.MaxDepth)}
	}
	return nil
}

// Options bounds and shapes parsing. The zero value is general RFC 8785 JSON bounded only by
// MaxDepthCap and MaxSizeCap; a program's record limits are applied with Limits.Check.
type Options struct {
	// MaxDepth is the maximum nesting of arrays and objects; 0 (or a negative value) means
	// MaxDepthCap, and values above MaxDepthCap are treated as MaxDepthCap.
	MaxDepth int
	// MaxSize is the maximum input size in bytes; 0 (or a negative value) means MaxSizeCap.
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
		depth = MaxDepthCap
	}
	if size <= 0 {
		size = MaxSizeCap
	}
	return min(depth, MaxDepthCap), size
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
// Detail is a short, bounded human-readable explanation. For ErrTooDeep and ErrTooLarge,
// Limit is the limit the input went past (nesting levels or bytes), so that a caller can
// name the setting to raise; it is 0 otherwise.
type Error struct {
	Code   error
	Offset int
	Detail string
	Limit  int
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
