package canonical

import (
	"slices"
	"unicode/utf8"
)

// Encode returns the RFC 8785 canonical encoding of v. It refuses strings
// that are not valid UTF-8, objects with duplicate keys, Numbers that are not
// the RFC 8785 form of a finite double, Go types outside Value, and nesting
// deeper than 10000 (which also catches cyclic objects). It does not apply
// the CHAP number rule; values from Parse with CHAP already satisfy it.
func Encode(v Value) ([]byte, error) {
	return AppendEncode(make([]byte, 0, 256), v)
}

// AppendEncode appends the RFC 8785 canonical encoding of v to dst and
// returns the extended slice; on error dst is returned unchanged.
func AppendEncode(dst []byte, v Value) ([]byte, error) {
	var e encoder
	out, err := e.value(dst, v)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// EncodeSplit appends the canonical encoding of o to dst, as AppendEncode does, and returns
// beside it the encoding of o without its member named key, which equals
// Encode(o.Without(key)): an object's members are written in one fixed order separated by
// commas, so cutting that member and one comma out of the first encoding gives the second
// with no second pass over o. without is a new slice, nil when o has no member named key.
// A caller that has to hash an object and verify a signature over it less one member (a
// CHAP envelope less its sig) gets both at the cost of one encoding.
func EncodeSplit(dst []byte, o *Object, key string) (full, without []byte, err error) {
	if o == nil {
		return dst, nil, newError(ErrUnsupportedType, -1, "nil *Object")
	}
	c := cutSpan{key: key}
	e := encoder{cut: &c}
	full, err = e.object(dst, o.Members)
	if err != nil {
		return dst, nil, err
	}
	if !c.found {
		return full, nil, nil
	}
	start, end := c.start, c.end
	if !c.comma && full[end] == ',' {
		end++ // the first member: the comma after it goes instead
	}
	without = make([]byte, 0, len(full)-len(dst)-(end-start))
	without = append(without, full[len(dst):start]...)
	return full, append(without, full[end:]...), nil
}

// encoder tracks nesting so that cyclic or absurdly deep values are refused. With cut set, it
// notes where the outermost object's member of that name is written (EncodeSplit).
type encoder struct {
	depth int
	cut   *cutSpan
}

// cutSpan is where one member of the outermost object lies in the output: bytes [start, end),
// the comma before it included when comma is set.
type cutSpan struct {
	key        string
	start, end int
	comma      bool
	found      bool
}

func (e *encoder) value(dst []byte, v Value) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		if x {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case string:
		return appendString(dst, x)
	case Number:
		if !checkNumber(x) {
			return dst, newError(ErrNumber, -1, "Number %s is not in canonical form", quote(string(x)))
		}
		return append(dst, x...), nil
	case []Value:
		if e.depth++; e.depth > maxDepthCap {
			return dst, newError(ErrTooDeep, -1, "more than %d nested arrays or objects", maxDepthCap)
		}
		dst = append(dst, '[')
		for i, elem := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = e.value(dst, elem); err != nil {
				return dst, err
			}
		}
		e.depth--
		return append(dst, ']'), nil
	case *Object:
		if x == nil {
			return dst, newError(ErrUnsupportedType, -1, "nil *Object")
		}
		return e.object(dst, x.Members)
	default:
		return dst, newError(ErrUnsupportedType, -1, "Go type %T", v)
	}
}

func (e *encoder) object(dst []byte, members []Member) ([]byte, error) {
	if e.depth++; e.depth > maxDepthCap {
		return dst, newError(ErrTooDeep, -1, "more than %d nested arrays or objects", maxDepthCap)
	}
	// Members already in canonical order (common when re-encoding canonical
	// input) are written directly. Otherwise a permutation is sorted; it
	// holds no pointers, so sorting it costs no write barriers, and small
	// objects keep it on the stack.
	inOrder := true
	for i := 1; i < len(members); i++ {
		c := compareKeys(members[i-1].Key, members[i].Key)
		if c == 0 {
			return dst, newError(ErrDuplicateKey, -1, "key %s", quote(members[i].Key))
		}
		if c > 0 {
			inOrder = false
			break
		}
	}
	dst = append(dst, '{')
	var err error
	if inOrder {
		for i := range members {
			if dst, err = e.member(dst, i > 0, &members[i]); err != nil {
				return dst, err
			}
		}
	} else {
		var small [32]int32
		order := small[:0]
		if len(members) > len(small) {
			order = make([]int32, 0, len(members))
		}
		for i := range members {
			order = append(order, int32(i))
		}
		sortMembers(order, members)
		for i, k := range order {
			if i > 0 && members[order[i-1]].Key == members[k].Key {
				return dst, newError(ErrDuplicateKey, -1, "key %s", quote(members[k].Key))
			}
			if dst, err = e.member(dst, i > 0, &members[k]); err != nil {
				return dst, err
			}
		}
	}
	e.depth--
	return append(dst, '}'), nil
}

func (e *encoder) member(dst []byte, comma bool, m *Member) ([]byte, error) {
	start := len(dst)
	if comma {
		dst = append(dst, ',')
	}
	dst, err := appendString(dst, m.Key)
	if err != nil {
		return dst, err
	}
	dst = append(dst, ':')
	if dst, err = e.value(dst, m.Value); err != nil {
		return dst, err
	}
	if c := e.cut; c != nil && e.depth == 1 && m.Key == c.key {
		c.start, c.end, c.comma, c.found = start, len(dst), comma, true
	}
	return dst, nil
}

// sortMembers sorts order, a permutation of members, by key.
func sortMembers(order []int32, members []Member) {
	if len(order) <= 16 {
		for i := 1; i < len(order); i++ {
			k := order[i]
			j := i
			for ; j > 0 && compareKeys(members[order[j-1]].Key, members[k].Key) > 0; j-- {
				order[j] = order[j-1]
			}
			order[j] = k
		}
		return
	}
	slices.SortFunc(order, func(a, b int32) int { return compareKeys(members[a].Key, members[b].Key) })
}

// compareKeys orders two valid UTF-8 strings by their UTF-16 code units, as
// RFC 8785 section 3.2.3 requires. UTF-8 byte order equals code point order,
// which differs from UTF-16 order only between a supplementary character
// (encoded as surrogates 0xD800-0xDBFF, UTF-8 lead byte 0xF0-0xF4) and a
// character in U+E000-U+FFFF (lead byte 0xEE or 0xEF); both lead bytes start
// a character, so the first differing byte decides.
func compareKeys(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	ca, cb := a[i], b[i]
	if ca >= 0xF0 && (cb == 0xEE || cb == 0xEF) {
		return -1
	}
	if cb >= 0xF0 && (ca == 0xEE || ca == 0xEF) {
		return 1
	}
	return int(ca) - int(cb)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as an RFC 8785 string: only '"', '\\' and control
// characters are escaped, the latter with the short forms where JSON has
// them and lowercase \u00xx otherwise.
func appendString(dst []byte, s string) ([]byte, error) {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size <= 1 {
				return dst, newError(ErrInvalidUTF8, -1, "string %s", quote(s))
			}
			i += size
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), nil
}
