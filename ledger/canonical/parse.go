package canonical

import (
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Parse parses one JSON value from data under opts. It refuses everything
// listed in the package documentation with an *Error.
func Parse(data []byte, opts Options) (Value, error) {
	maxDepth, maxSize := opts.limits()
	if len(data) > maxSize {
		return nil, tooLarge(len(data), maxSize)
	}
	p := parserPool.Get().(*parser)
	defer p.release()
	p.reset(data, maxDepth, opts.SafeIntegersOnly)
	return p.top()
}

// Canon is the canonical encoding of a value ParseCanonical read from input that was already
// in canonical form, and beside it EncodeSplit's second result, without re-encoding anything.
type Canon struct {
	// Full is a copy of the input: byte for byte what Encode returns for the value.
	Full []byte
	// Without is Full less the outermost object's member named by the cut key and one comma,
	// as EncodeSplit returns it; nil when there is no such member.
	Without []byte
}

// ParseCanonical parses data as Parse does, refusing exactly what Parse refuses. When data is
// already the RFC 8785 encoding of the value it returns ok and the encodings in c; otherwise
// ok is false and the caller encodes the value as before. The parser decides this as it
// reads, conservatively: any whitespace, any escape in a string, members out of canonical
// order or a number not in its canonical spelling make ok false, so ok is never true for
// bytes that Encode would write differently. cut names the outermost object's member that
// c.Without leaves out ("" for none).
func ParseCanonical(data []byte, opts Options, cut string) (v Value, c Canon, ok bool, err error) {
	maxDepth, maxSize := opts.limits()
	if len(data) > maxSize {
		return nil, c, false, tooLarge(len(data), maxSize)
	}
	p := parserPool.Get().(*parser)
	defer p.release()
	p.reset(data, maxDepth, opts.SafeIntegersOnly)
	p.cut.key = cut
	if v, err = p.top(); err != nil || !p.canonical {
		return v, c, false, err
	}
	return v, p.canon(data), true, nil
}

func tooLarge(n, limit int) *Error {
	e := newError(ErrTooLarge, limit, "input is %d bytes, limit is %d", n, limit)
	e.Limit = limit
	return e
}

// top parses the one value the whole input holds.
func (p *parser) top() (Value, error) {
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(p.s) {
		return nil, p.unexpected("after top-level value")
	}
	return v, nil
}

// canon returns the encodings of canonical input data: a copy of it and, when the cut member
// was found, data less that member, in one allocation.
func (p *parser) canon(data []byte) Canon {
	if !p.cut.found {
		return Canon{Full: append([]byte(nil), data...)}
	}
	start, end := p.cut.start, p.cut.end
	if !p.cut.comma && data[end] == ',' {
		end++ // the first member: the comma after it goes instead
	}
	buf := make([]byte, 0, 2*len(data)-(end-start))
	buf = append(buf, data...)
	buf = append(buf, data[:start]...)
	buf = append(buf, data[end:]...)
	return Canon{Full: buf[:len(data):len(data)], Without: buf[len(data):]}
}

// Canonicalize parses data under opts and returns its RFC 8785 encoding.
func Canonicalize(data []byte, opts Options) ([]byte, error) {
	v, err := Parse(data, opts)
	if err != nil {
		return nil, err
	}
	return AppendEncode(make([]byte, 0, len(data)), v)
}

// Arena chunk limits: chunks are sized from a cheap count of the bytes that
// can open a container or separate members, clamped so that input made of
// those bytes inside strings cannot force a large allocation.
const (
	minChunk       = 8
	maxObjectChunk = 1024
	maxMemberChunk = 4096
	maxValueChunk  = 4096
	// mapThreshold is the member count above which duplicate keys are
	// detected with a map instead of a linear scan.
	mapThreshold = 16
)

// parser holds the state of one Parse call. The scratch stacks are reused
// through parserPool; the arenas are handed to the result and never reused.
type parser struct {
	s        string // one private copy of the input
	pos      int
	depth    int
	maxDepth int
	safeInts bool

	// canonical stays true while everything read is in canonical form (ParseCanonical); cut
	// locates the outermost object's member that Canon.Without leaves out.
	canonical bool
	cut       cutSpan

	// Reused scratch.
	members []Member  // members of the objects being parsed, innermost last
	values  []Value   // elements of the arrays being parsed, innermost last
	frames  []frame   // the open arrays and objects, innermost last
	seen    []seenSet // the name sets of the open objects with many members, innermost last
	buf     []byte    // unescaped string being built

	// Arenas from which the result's objects and slices are carved.
	objArena    []Object
	memberArena []Member
	valueArena  []Value
	objChunk    int
	memberChunk int
	valueChunk  int
}

var parserPool = sync.Pool{New: func() any { return new(parser) }}

func (p *parser) reset(data []byte, maxDepth int, safeInts bool) {
	p.s = string(data)
	p.pos = 0
	p.depth = 0
	p.maxDepth = maxDepth
	p.safeInts = safeInts
	p.canonical = true
	p.cut = cutSpan{}
	p.objChunk = clamp(strings.Count(p.s, "{"), maxObjectChunk)
	p.memberChunk = clamp(strings.Count(p.s, ":"), maxMemberChunk)
	p.valueChunk = clamp(strings.Count(p.s, ",")+strings.Count(p.s, "["), maxValueChunk)
}

func (p *parser) release() {
	// Popped entries are left in place while parsing; drop them here so the
	// pool does not keep parsed values alive.
	clear(p.members[:cap(p.members)])
	clear(p.values[:cap(p.values)])
	clear(p.seen[:cap(p.seen)])
	p.seen = p.seen[:0]
	p.members = p.members[:0]
	p.values = p.values[:0]
	if cap(p.buf) > 64<<10 {
		p.buf = nil
	}
	if cap(p.members) > 4096 {
		p.members = nil
	}
	if cap(p.values) > 4096 {
		p.values = nil
	}
	if cap(p.frames) > 4096 {
		p.frames = nil
	}
	p.s = ""
	p.objArena, p.memberArena, p.valueArena = nil, nil, nil
	parserPool.Put(p)
}

func clamp(n, hi int) int {
	return max(minChunk, min(n, hi))
}

// carve returns a slice of length and capacity n from *arena, starting a new
// chunk of size chunk when the current one is exhausted. A request larger
// than chunk gets its own allocation.
func carve[T any](arena *[]T, n, chunk int) []T {
	if n > chunk {
		return make([]T, n)
	}
	a := *arena
	if cap(a)-len(a) < n {
		a = make([]T, 0, chunk)
	}
	start := len(a)
	a = a[:start+n]
	*arena = a
	return a[start : start+n : start+n]
}

func (p *parser) skipSpace() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
			p.canonical = false // canonical JSON has no whitespace outside strings
		default:
			return
		}
	}
}

// unexpected reports the byte at p.pos (or the end of input) as an error.
func (p *parser) unexpected(context string) *Error {
	if p.pos >= len(p.s) {
		return newError(ErrSyntax, p.pos, "unexpected end of input %s", context)
	}
	c := p.s[p.pos]
	if c >= utf8.RuneSelf {
		r, size := utf8.DecodeRuneInString(p.s[p.pos:])
		if r == utf8.RuneError && size <= 1 {
			return newError(ErrInvalidUTF8, p.pos, "byte 0x%02x %s", c, context)
		}
		return newError(ErrSyntax, p.pos, "unexpected character %U %s", r, context)
	}
	return newError(ErrSyntax, p.pos, "unexpected character %q %s", rune(c), context)
}

// frame is one open array or object on the parser's explicit stack: where its members or
// elements start in the scratch stacks and, for an object, where the name of the member whose
// value is being read starts in the input (the member itself waits, its value unset, on top of
// p.members). Nesting costs one frame (24 bytes) a level, never a Go stack frame, so no input
// can exhaust the goroutine stack whatever the depth limit; a frame holds no pointers, so
// pushing and popping it costs no write barriers.
type frame struct {
	start     int // index in p.members (object) or p.values (array) of the first
	keyOffset int // where the pending member's name starts in the input (object)
	obj       bool
}

// seenSet is the set of member names of an open object with more than mapThreshold members,
// which duplicates are then looked up in; depth is the object's.
type seenSet struct {
	depth int
	names map[string]struct{}
}

// value parses one JSON value at p.pos, nested values included, with an explicit stack of
// frames in place of recursion.
func (p *parser) value() (Value, error) {
	stack := p.frames[:0]
	defer func() { p.frames = stack[:0] }()
	for {
		// Read a value, or open a container and read its first member or element.
		p.skipSpace()
		if p.pos >= len(p.s) {
			return nil, p.unexpected("where a value was expected")
		}
		var v Value
		switch c := p.s[p.pos]; c {
		case '{', '[':
			if err := p.enter(); err != nil {
				return nil, err
			}
			p.pos++
			p.skipSpace()
			f := frame{obj: c == '{', start: len(p.values)}
			if f.obj {
				f.start = len(p.members)
			}
			if p.pos < len(p.s) && p.s[p.pos] == c+2 { // '}' is '{'+2, ']' is '['+2
				p.pos++
				p.depth--
				v = p.finish(f)
				break
			}
			if f.obj {
				if err := p.memberName(&f); err != nil {
					return nil, err
				}
			}
			stack = append(stack, f)
			continue
		case '"':
			s, err := p.str()
			if err != nil {
				return nil, err
			}
			v = s
		case 't':
			if err := p.literal("true"); err != nil {
				return nil, err
			}
			v = true
		case 'f':
			if err := p.literal("false"); err != nil {
				return nil, err
			}
			v = false
		case 'n':
			if err := p.literal("null"); err != nil {
				return nil, err
			}
		default:
			if c != '-' && (c < '0' || c > '9') {
				return nil, p.unexpected("where a value was expected")
			}
			n, err := p.number()
			if err != nil {
				return nil, err
			}
			v = n
		}
		// Hand the value to the innermost open container; close every container it completes.
		for {
			if len(stack) == 0 {
				return v, nil
			}
			f := &stack[len(stack)-1]
			if f.obj {
				m := &p.members[len(p.members)-1]
				m.Value = v
				if p.depth == 1 && p.cut.key != "" && m.Key == p.cut.key && p.canonical {
					p.noteCut(f.keyOffset, len(p.members)-1 > f.start)
				}
			} else {
				p.values = append(p.values, v)
			}
			p.skipSpace()
			if p.pos < len(p.s) && p.s[p.pos] == ',' {
				p.pos++
				if f.obj {
					p.skipSpace()
					if err := p.memberName(f); err != nil {
						return nil, err
					}
				}
				break // read the next member or element
			}
			closer, what := byte(']'), "where ',' or ']' was expected"
			if f.obj {
				closer, what = '}', "where ',' or '}' was expected"
			}
			if p.pos >= len(p.s) || p.s[p.pos] != closer {
				return nil, p.unexpected(what)
			}
			p.pos++
			p.depth--
			v = p.finish(*f)
			stack = stack[:len(stack)-1]
		}
	}
}

func (p *parser) literal(lit string) error {
	if strings.HasPrefix(p.s[p.pos:], lit) {
		p.pos += len(lit)
		return nil
	}
	end := min(p.pos+len(lit), len(p.s))
	return newError(ErrSyntax, p.pos, "invalid literal %s", quote(p.s[p.pos:end]))
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > p.maxDepth {
		return &Error{Code: ErrTooDeep, Offset: p.pos, Limit: p.maxDepth,
			Detail: "more than " + strconv.Itoa(p.maxDepth) + " nested arrays or objects"}
	}
	return nil
}

// memberName reads an object member's name and the ':' after it, refusing a name the object
// already has, and pushes the member, its value unset, onto p.members.
func (p *parser) memberName(f *frame) error {
	if p.pos >= len(p.s) || p.s[p.pos] != '"' {
		return p.unexpected("where an object key was expected")
	}
	keyOffset := p.pos
	key, err := p.str()
	if err != nil {
		return err
	}
	start := f.start
	if len(p.members) > start && compareKeys(p.members[len(p.members)-1].Key, key) >= 0 {
		p.canonical = false // not in canonical order (or a duplicate, refused below)
	}
	if n := len(p.seen); n > 0 && p.seen[n-1].depth == p.depth {
		seen := p.seen[n-1].names
		if _, dup := seen[key]; dup {
			return newError(ErrDuplicateKey, keyOffset, "key %s", quote(key))
		}
		seen[key] = struct{}{}
	} else {
		for i := start; i < len(p.members); i++ {
			if p.members[i].Key == key {
				return newError(ErrDuplicateKey, keyOffset, "key %s", quote(key))
			}
		}
		if len(p.members)-start >= mapThreshold {
			seen := make(map[string]struct{}, 2*mapThreshold)
			for _, m := range p.members[start:] {
				seen[m.Key] = struct{}{}
			}
			seen[key] = struct{}{}
			p.seen = append(p.seen, seenSet{depth: p.depth, names: seen})
		}
	}
	p.skipSpace()
	if p.pos >= len(p.s) || p.s[p.pos] != ':' {
		return p.unexpected("where ':' was expected")
	}
	p.pos++
	f.keyOffset = keyOffset
	p.members = append(p.members, Member{Key: key})
	return nil
}

// finishObject moves the members from start on off the scratch stack into a new Object, and
// drops the object's set of names if it has one.
// finish builds the container f opened, now closed.
func (p *parser) finish(f frame) Value {
	if f.obj {
		return p.finishObject(f.start)
	}
	return p.finishArray(f.start)
}

func (p *parser) finishObject(start int) *Object {
	if n := len(p.seen); n > 0 && p.seen[n-1].depth == p.depth+1 {
		p.seen[n-1] = seenSet{}
		p.seen = p.seen[:n-1]
	}
	if len(p.objArena) == cap(p.objArena) {
		p.objArena = make([]Object, 0, p.objChunk)
	}
	p.objArena = p.objArena[:len(p.objArena)+1]
	obj := &p.objArena[len(p.objArena)-1]
	if n := len(p.members) - start; n > 0 {
		obj.Members = carve(&p.memberArena, n, p.memberChunk)
		copy(obj.Members, p.members[start:])
		p.members = p.members[:start]
	}
	return obj
}

// noteCut records that the outermost object's member starting at keyOffset and ending at
// p.pos is the one Canon.Without leaves out; in canonical input a member after the first is
// preceded by its comma, which goes with it.
func (p *parser) noteCut(keyOffset int, comma bool) {
	start := keyOffset
	if comma {
		start--
	}
	p.cut.start, p.cut.end, p.cut.comma, p.cut.found = start, p.pos, comma, true
}

// finishArray moves the elements from start on off the scratch stack into a new slice.
func (p *parser) finishArray(start int) []Value {
	n := len(p.values) - start
	elems := carve(&p.valueArena, n, p.valueChunk)
	copy(elems, p.values[start:])
	p.values = p.values[:start]
	return elems
}

// plain[c] is true for bytes that stand for themselves inside a JSON string
// and need no escaping in canonical output: printable ASCII other than '"'
// and '\\'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str parses the string starting at the '"' at p.pos. Strings without
// escapes are returned as substrings of the input copy, without allocating.
func (p *parser) str() (string, error) {
	s := p.s
	begin := p.pos + 1
	i := skipPlain(s, begin)
	for i < len(s) {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			p.pos = i + 1
			return s[begin:i], nil
		case c == '\\':
			return p.strSlow(begin, i)
		case c < 0x20:
			return "", newError(ErrSyntax, i, "unescaped control character 0x%02x in string", c)
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			return "", newError(ErrInvalidUTF8, i, "byte 0x%02x in string", c)
		}
		i += size
	}
	return "", newError(ErrSyntax, p.pos, "unterminated string")
}

// skipPlain returns the offset of the first byte from i on that is not plain, or a little
// before it: it skips eight plain bytes at a time and leaves the rest to str's byte loop.
func skipPlain(s string, i int) int {
	for i+8 <= len(s) && plainWord(load64(s, i)) {
		i += 8
	}
	return i
}

// load64 returns the eight bytes of s from i, the first in the lowest bits.
func load64(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// plainWord reports whether all eight bytes of x are plain: none is above 0x7f, below 0x20,
// '"' or '\\'. When no byte has its top bit set, subtracting 0x20 from every byte borrows into
// a top bit exactly when some byte is below 0x20, and subtracting 1 from x with '"' (or '\\')
// xored out of every byte does so exactly when some byte was '"' (or '\\'): each test is
// exact for whether such a byte exists, so a word of plain bytes is never missed or misread.
func plainWord(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote, backslash := x^(ones*'"'), x^(ones*'\\')
	return (x|(x-ones*0x20)|(quote-ones)|(backslash-ones))&highs == 0
}

// strSlow continues str from the first backslash at i, unescaping into p.buf.
func (p *parser) strSlow(begin, i int) (string, error) {
	// RFC 8785 escapes some characters, but an escape is taken as not canonical rather
	// than checked against the one spelling the encoder would choose.
	p.canonical = false
	s := p.s
	buf := append(p.buf[:0], s[begin:i]...)
	for i < len(s) {
		c := s[i]
		if plain[c] {
			buf = append(buf, c)
			i++
			continue
		}
		switch {
		case c == '"':
			p.pos = i + 1
			p.buf = buf
			return string(buf), nil
		case c == '\\':
			if i+1 >= len(s) {
				return "", newError(ErrSyntax, i, "unterminated escape")
			}
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, n, err := p.unicodeEscape(i)
				if err != nil {
					return "", err
				}
				buf = utf8.AppendRune(buf, r)
				i += n
				continue
			default:
				return "", newError(ErrSyntax, i, "invalid escape %s", quote(s[i:i+2]))
			}
			i += 2
		case c < 0x20:
			return "", newError(ErrSyntax, i, "unescaped control character 0x%02x in string", c)
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size <= 1 {
				return "", newError(ErrInvalidUTF8, i, "byte 0x%02x in string", c)
			}
			buf = append(buf, s[i:i+size]...)
			i += size
		}
	}
	p.buf = buf
	return "", newError(ErrSyntax, p.pos, "unterminated string")
}

// unicodeEscape decodes the \uXXXX escape at i (and its low-surrogate partner
// if it is a high surrogate), returning the rune and the bytes consumed.
func (p *parser) unicodeEscape(i int) (rune, int, error) {
	r, ok := hex4(p.s, i+2)
	if !ok {
		return 0, 0, newError(ErrSyntax, i, "invalid \\u escape %s", quote(p.s[i:min(i+6, len(p.s))]))
	}
	switch {
	case r < 0xD800 || r > 0xDFFF:
		return r, 6, nil
	case r >= 0xDC00:
		return 0, 0, newError(ErrLoneSurrogate, i, "low surrogate \\u%04x without a preceding high surrogate", r)
	}
	j := i + 6
	if j+1 >= len(p.s) || p.s[j] != '\\' || p.s[j+1] != 'u' {
		return 0, 0, newError(ErrLoneSurrogate, i, "high surrogate \\u%04x not followed by a low surrogate", r)
	}
	r2, ok := hex4(p.s, j+2)
	if !ok {
		return 0, 0, newError(ErrSyntax, j, "invalid \\u escape %s", quote(p.s[j:min(j+6, len(p.s))]))
	}
	if r2 < 0xDC00 || r2 > 0xDFFF {
		return 0, 0, newError(ErrLoneSurrogate, i, "high surrogate \\u%04x followed by \\u%04x", r, r2)
	}
	return 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00), 12, nil
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}
