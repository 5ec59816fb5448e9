package canonical

import (
	"strconv"

	"github.com/gowebpki/jcs"
)

// maxSafeInteger is 2^53-1, the largest integer n such that n and n+1 are
// both exactly representable as IEEE 754 doubles.
const maxSafeInteger = 1<<53 - 1

// plainIntDigits is the number of digits below which an integer literal is
// always already in canonical form under both number rules (10^15 < 2^53).
const plainIntDigits = 15

// numParts is a number literal split along the RFC 8259 grammar.
type numParts struct {
	neg        bool
	intDigits  string
	fracDigits string
	expDigits  string
	expNeg     bool
}

// scanNumber scans the number literal starting at s[i]. It returns the parts
// and the offset just past the literal, or ok == false and the offset of the
// byte that breaks the grammar.
func scanNumber(s string, i int) (np numParts, end int, ok bool) {
	if i < len(s) && s[i] == '-' {
		np.neg = true
		i++
	}
	start := i
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return np, i, false
	}
	np.intDigits = s[start:i]
	if i < len(s) && s[i] == '.' {
		i++
		start = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return np, i, false
		}
		np.fracDigits = s[start:i]
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			np.expNeg = s[i] == '-'
			i++
		}
		start = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return np, i, false
		}
		np.expDigits = s[start:i]
	}
	return np, i, true
}

// number parses the number at p.pos and returns its canonical form; a literal spelled
// otherwise makes the input not canonical (ParseCanonical).
func (p *parser) number() (Number, error) {
	start := p.pos
	n, err := p.numberValue()
	if err == nil && string(n) != p.s[start:p.pos] {
		p.canonical = false
	}
	return n, err
}

// numberValue parses the number at p.pos and returns its canonical form.
func (p *parser) numberValue() (Number, error) {
	start := p.pos
	np, end, ok := scanNumber(p.s, start)
	p.pos = end
	if !ok {
		return "", p.unexpected("in number")
	}
	lit := p.s[start:end]
	if np.fracDigits == "" && np.expDigits == "" && len(np.intDigits) <= plainIntDigits {
		if lit == "-0" {
			return "0", nil
		}
		return Number(lit), nil
	}
	if p.safeInts {
		return safeInteger(start, lit, np)
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		// The grammar was checked above, so only overflow to ±Inf remains.
		return "", newError(ErrNumber, start, "number %s overflows a double", quote(lit))
	}
	out, err := jcs.NumberToJSON(f)
	if err != nil {
		return "", newError(ErrNumber, start, "number %s: %v", quote(lit), err)
	}
	return Number(out), nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// safeInteger applies the CHAP rule to a grammatically valid literal: its
// exact value, sign * intDigits.fracDigits * 10^exp, must be an integer of
// magnitude at most 2^53-1. No floating point is involved.
func safeInteger(offset int, lit string, np numParts) (Number, error) {
	intDigits, fracDigits, expDigits := np.intDigits, np.fracDigits, np.expDigits
	// The significand is intDigits followed by fracDigits; find its first and
	// last non-zero digit.
	digit := func(k int) byte {
		if k < len(intDigits) {
			return intDigits[k]
		}
		return fracDigits[k-len(intDigits)]
	}
	total := len(intDigits) + len(fracDigits)
	first := 0
	for first < total && digit(first) == '0' {
		first++
	}
	if first == total {
		return "0", nil // 0, -0, 0.000, 0e99 ...
	}
	last := total
	for digit(last-1) == '0' {
		last--
	}

	// Exponent, saturated far beyond anything that could still be in range.
	const expLimit = 1 << 40
	var exp int64
	for k := 0; k < len(expDigits); k++ {
		exp = exp*10 + int64(expDigits[k]-'0')
		if exp > expLimit {
			exp = expLimit
			break
		}
	}
	if np.expNeg {
		exp = -exp
	}
	// value = digits[first:last] * 10^scale
	scale := exp - int64(len(fracDigits)) + int64(total-last)
	if scale < 0 {
		return "", newError(ErrNumber, offset, "number %s is not an integer", quote(lit))
	}
	sig := last - first
	if int64(sig)+scale > 16 {
		return "", newError(ErrNumber, offset, "number %s is outside the safe integer range", quote(lit))
	}
	var n uint64
	for k := first; k < last; k++ {
		n = n*10 + uint64(digit(k)-'0')
	}
	for ; scale > 0; scale-- {
		n *= 10
	}
	if n > maxSafeInteger {
		return "", newError(ErrNumber, offset, "number %s is outside the safe integer range", quote(lit))
	}
	var b [20]byte
	out := b[:0]
	if np.neg {
		out = append(out, '-')
	}
	out = strconv.AppendUint(out, n, 10)
	if string(out) == lit {
		return Number(lit), nil // already canonical: share the input copy
	}
	return Number(out), nil
}

// checkNumber reports whether n is the canonical RFC 8785 text of a finite
// double, i.e. what Parse would produce for it.
func checkNumber(n Number) bool {
	s := string(n)
	if plainInteger(s) {
		return true
	}
	if !validNumberSyntax(s) {
		return false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return false
	}
	out, err := jcs.NumberToJSON(f)
	return err == nil && out == s
}

// plainInteger reports whether s is an integer literal of at most
// plainIntDigits digits with no leading zero and no "-0".
func plainInteger(s string) bool {
	if s == "0" {
		return true
	}
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > plainIntDigits || s[0] == '0' {
		return false
	}
	for k := 0; k < len(s); k++ {
		if !isDigit(s[k]) {
			return false
		}
	}
	return true
}

// validNumberSyntax reports whether s matches the RFC 8259 number grammar.
func validNumberSyntax(s string) bool {
	_, end, ok := scanNumber(s, 0)
	return ok && end == len(s)
}
