package canonical

import (
	"slices"
	"strconv"
	"unicode/utf8"
)

// Encode returns the RFC 8785 canonical encoding of v. It refuses strings
// that are not valid UTF-8, objects with duplicate keys, Numbers that are not
// the RFC 8785 form of a finite double, Go types outside Value, and nesting
// deeper than MaxDepthCap (which also catches cyclic objects). It does not apply
// the CHAP number rule; values from Parse with CHAP already satisfy it. Nesting is
// held on an explicit stack, not the goroutine's.
func Encode(v Value) ([]byte, error) {
	return AppendEncode(make([]byte, 0, 256), v)
}

// AppendEncode appends the RFC 8785 canonical encoding of v to dst and
// returns the extended slice; on error dst is returned unchanged.
func AppendEncode(dst []byte, v Value) ([]byte, error) {
	out, err := encode(dst, v, nil)
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
	full, err = encode(dst, o, &c)
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

// encFrame is one open array or object on encode's explicit stack: its elements or members,
// the next one to write and, for an object whose members are not in canonical order, where its
// sorted order lies in encode's order stack.
type encFrame struct {
	elems   []Value
	members []Member
	next    int
	order   int // offset of the object's order in the order stack; -1 when in order
	obj     bool
	cutOpen bool // the cut member's value is being written (outermost object)
}

// cutSpan is where one member of the outermost object lies in the output: bytes [start, end),
// the comma before it included when comma is set.
type cutSpan struct {
	key        string
	start, end int
	comma      bool
	found      bool
}

func tooDeepEncode() *Error {
	return &Error{Code: ErrTooDeep, Offset: -1, Limit: MaxDepthCap,
		Detail: "more than " + strconv.Itoa(MaxDepthCap) + " nested arrays or objects"}
}

// encode writes v, and everything nested in it, without recursion: the open arrays and
// objects are frames on an explicit stack, and the sorted member orders of the open objects
// on a second one (both start in arrays on the goroutine stack, so a small value allocates
// nothing). With cut set, it notes where the outermost object's member of that name is
// written (EncodeSplit).
func encode(dst []byte, v Value, cut *cutSpan) ([]byte, error) {
	var stackBuf [8]encFrame
	var orderBuf [32]int32
	stack, order := stackBuf[:0], orderBuf[:0]
	for {
		switch x := v.(type) {
		case nil:
			dst = append(dst, "null"...)
		case bool:
			if x {
				dst = append(dst, "true"...)
			} else {
				dst = append(dst, "false"...)
			}
		case string:
			var err error
			if dst, err = appendString(dst, x); err != nil {
				return dst, err
			}
		case Number:
			if !checkNumber(x) {
				return dst, newError(ErrNumber, -1, "Number %s is not in canonical form", quote(string(x)))
			}
			dst = append(dst, x...)
		case []Value:
			if len(stack) >= MaxDepthCap {
				return dst, tooDeepEncode()
			}
			dst = append(dst, '[')
			stack = append(stack, encFrame{elems: x, order: -1})
		case *Object:
			if x == nil {
				return dst, newError(ErrUnsupportedType, -1, "nil *Object")
			}
			if len(stack) >= MaxDepthCap {
				return dst, tooDeepEncode()
			}
			off := -1
			var err error
			if order, off, err = sortOrder(order, x.Members); err != nil {
				return dst, err
			}
			dst = append(dst, '{')
			stack = append(stack, encFrame{members: x.Members, order: off, obj: true})
		default:
			return dst, newError(ErrUnsupportedType, -1, "Go type %T", v)
		}
		// Find the next value to write, closing every container that is complete.
		for {
			if len(stack) == 0 {
				return dst, nil
			}
			f := &stack[len(stack)-1]
			if f.cutOpen {
				cut.end, cut.found, f.cutOpen = len(dst), true, false
			}
			if !f.obj {
				if f.next < len(f.elems) {
					if f.next > 0 {
						dst = append(dst, ',')
					}
					v = f.elems[f.next]
					f.next++
					break
				}
				dst = append(dst, ']')
			} else {
				if f.next < len(f.members) {
					k := f.next
					if f.order >= 0 {
						k = int(order[f.order+f.next])
					}
					m := &f.members[k]
					start := len(dst)
					comma := f.next > 0
					if comma {
						dst = append(dst, ',')
					}
					var err error
					if dst, err = appendString(dst, m.Key); err != nil {
						return dst, err
					}
					dst = append(dst, ':')
					if cut != nil && len(stack) == 1 && m.Key == cut.key {
						cut.start, cut.comma, f.cutOpen = start, comma, true
					}
					v = m.Value
					f.next++
					break
				}
				dst = append(dst, '}')
				if f.order >= 0 {
					order = order[:f.order]
				}
			}
			*f = encFrame{}
			stack = stack[:len(stack)-1]
		}
	}
}

// sortOrder checks members for duplicate names and returns the order stack unchanged and -1
// when they are in canonical order, else the stack with a permutation that sorts them pushed
// and its offset. The permutation holds no pointers, so sorting it costs no write barriers; it
// is popped when the object closes.
func sortOrder(stack []int32, members []Member) ([]int32, int, error) {
	for i := 1; i < len(members); i++ {
		c := compareKeys(members[i-1].Key, members[i].Key)
		if c == 0 {
			return stack, -1, newError(ErrDuplicateKey, -1, "key %s", quote(members[i].Key))
		}
		if c > 0 {
			off := len(stack)
			for j := range members {
				stack = append(stack, int32(j))
			}
			order := stack[off:]
			sortMembers(order, members)
			for j := 1; j < len(order); j++ {
				if members[order[j-1]].Key == members[order[j]].Key {
					return stack, -1, newError(ErrDuplicateKey, -1, "key %s", quote(members[order[j]].Key))
				}
			}
			return stack, off, nil
		}
	}
	return stack, -1, nil
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
