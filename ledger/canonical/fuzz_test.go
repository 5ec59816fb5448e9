package canonical

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// strictnessErrors are the refusals by which this package is deliberately
// stricter than jcs.Transform (or may be, depending on its version).
var strictnessErrors = []error{ErrDuplicateKey, ErrTooDeep, ErrLoneSurrogate, ErrInvalidUTF8, ErrTooLarge}

// FuzzCanonicalize compares Canonicalize with jcs.Transform: whatever we
// accept must canonicalise to the same bytes, and whatever jcs accepts but we
// refuse must be refused for one of our strictness rules. It also checks
// idempotence, Parse+Encode consistency, the CHAP rule and error hygiene.
func FuzzCanonicalize(f *testing.F) {
	seeds := []string{
		``, ` `, `{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `-1.5e-7`, `1e21`, `1e400`,
		`2.0`, `1e2`, `9007199254740991`, `9007199254740992`, `9007199254740993`, `0.1`,
		`1.0000000000000000001`, `5e-324`, `1e-400`, `123456789012345678901234567890`,
		`{"a":1,"b":[1,2,3]}`, `{"b":1,"a":2}`, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`,
		`["😀"]`, `{"\u0000":"\u001f"}`, `"\ud83d\ude00"`, `"\ud800"`, `"\udc00"`, `"\ud800\u0041"`,
		`"\uDBFF\uDFFF"`, `"\/\b\f\n\r\t\"\\"`, `"\u2028\u2029"`, "\"\x7f\"",
		`[1e21,1e-6,5e-324,1.7976931348623157e308]`, `{"b":{"a":[{},[]]}}`,
		"[\"caf\xc3\xa9\"]", "\"\xff\"", "\"\xed\xa0\x80\"", "\xef\xbb\xbf{}",
		`  {"a" : 1}  `, `{"a":1,}`, `[1,]`, `[01]`, `tru`, `nul`, `{"a" 1}`, `[1 2]`,
		"{\"\uffff\":1,\"\U00010000\":2,\"\ue000\":3}",
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
		envelope,
	}
	// Deep nesting and a big string, as reference Coordinators log them (built here, not kept
	// as files): 80 and 5,000 levels, and a 1.1 MB string.
	seeds = append(seeds, deepDoc(80), deepDoc(5000), `{"draft":"`+strings.Repeat("x\u00e9y", 1100000/8)+`"}`)
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	for _, name := range []string{"serialization.input.json", "sorting.input.json"} {
		if data, err := os.ReadFile(filepath.Join("testdata", "rfc8785", name)); err == nil {
			f.Add(data)
		}
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Canonicalize(data, Options{})
		ref, refErr := jcs.Transform(data)

		if err != nil {
			checkError(t, data, err)
			if refErr == nil && !isOneOf(err, strictnessErrors) {
				t.Fatalf("jcs accepts %q (-> %q) but we refuse it for a non-strictness reason: %v", data, ref, err)
			}
		} else {
			if refErr != nil {
				t.Fatalf("we accept %q (-> %q) but jcs refuses it: %v", data, got, refErr)
			}
			if !bytes.Equal(got, ref) {
				t.Fatalf("differential mismatch for %q:\n ours %q\n jcs  %q", data, got, ref)
			}
			if !utf8.Valid(got) {
				t.Fatalf("output is not UTF-8: %q", got)
			}
			again, err := Canonicalize(got, Options{})
			if err != nil || !bytes.Equal(again, got) {
				t.Fatalf("not idempotent: %q -> %q -> %q, %v", data, got, again, err)
			}
			v, err := Parse(data, Options{})
			if err != nil {
				t.Fatalf("Canonicalize accepted but Parse refused: %v", err)
			}
			enc, err := Encode(v)
			if err != nil || !bytes.Equal(enc, got) {
				t.Fatalf("Parse+Encode = %q, %v; Canonicalize = %q", enc, err, got)
			}
		}

		// The CHAP rule only ever refuses numbers, and what it accepts has
		// the same canonical form as under the general rule.
		chap, chapErr := Canonicalize(data, CHAP)
		switch {
		case chapErr == nil && err != nil:
			t.Fatalf("CHAP accepts %q but the general rule refuses it: %v", data, err)
		case chapErr == nil && !bytes.Equal(chap, got):
			t.Fatalf("CHAP output %q differs from general output %q", chap, got)
		case chapErr != nil && err == nil && !errors.Is(chapErr, ErrNumber):
			t.Fatalf("CHAP refuses %q for a non-number reason: %v", data, chapErr)
		case chapErr != nil:
			checkError(t, data, chapErr)
		}
	})
}

func isOneOf(err error, targets []error) bool {
	for _, target := range targets {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// checkError checks that a refusal is a well-formed, bounded *Error.
func checkError(t *testing.T, data []byte, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T is not *Error: %v", err, err)
	}
	if e.Offset < 0 || e.Offset > len(data) {
		t.Fatalf("error offset %d outside input of %d bytes: %v", e.Offset, len(data), err)
	}
	if !isOneOf(err, []error{ErrSyntax, ErrNumber, ErrDuplicateKey, ErrTooDeep, ErrLoneSurrogate, ErrInvalidUTF8, ErrTooLarge}) {
		t.Fatalf("error has an unexpected code: %v", err)
	}
	if msg := err.Error(); len(msg) > 256 || !utf8.ValidString(msg) {
		t.Fatalf("error message unbounded or not UTF-8 (%d bytes): %q", len(msg), msg)
	}
}

// FuzzEncodeSplit checks EncodeSplit against its definition: for every object Parse accepts
// and every member name, the first result is Encode of the object and the second is Encode of
// the object without that member (nil when it has none).
func FuzzEncodeSplit(f *testing.F) {
	for _, s := range []string{`{}`, `{"sig":1}`, `{"a":1,"sig":2}`, `{"sig":2,"z":1}`, `{"a":{"sig":1},"sig":[{"sig":2}]}`,
		`{"b":1,"a":2,"sig":"x"}`, `{"a":{"sig":1}}`, envelope, `{"sig":1,"a":` + deepDoc(5000) + `}`} {
		f.Add([]byte(s), "sig")
	}
	f.Add([]byte(`{"\u00e9":1,"e":2}`), "\u00e9")
	f.Fuzz(func(t *testing.T, data []byte, key string) {
		v, err := Parse(data, Options{})
		if err != nil {
			return
		}
		o, ok := v.(*Object)
		if !ok {
			return
		}
		checkSplit(t, o, key)
	})
}

// checkSplit compares EncodeSplit(o, key) with Encode(o) and Encode(o.Without(key)).
func checkSplit(t *testing.T, o *Object, key string) {
	t.Helper()
	prefix := []byte("prefix")
	full, without, err := EncodeSplit(bytes.Clone(prefix), o, key)
	want, werr := Encode(o)
	if (err != nil) != (werr != nil) {
		t.Fatalf("EncodeSplit error %v, Encode error %v", err, werr)
	}
	if err != nil {
		return
	}
	if !bytes.HasPrefix(full, prefix) || !bytes.Equal(full[len(prefix):], want) {
		t.Fatalf("EncodeSplit full = %q, want %q after the prefix", full, want)
	}
	if _, has := o.Get(key); !has {
		if without != nil {
			t.Fatalf("no member %q, yet without = %q", key, without)
		}
		return
	}
	wantWithout, err := Encode(o.Without(key))
	if err != nil || !bytes.Equal(without, wantWithout) {
		t.Fatalf("EncodeSplit without %q = %q, want %q (%v)", key, without, wantWithout, err)
	}
}

// FuzzParseCanonical checks ParseCanonical against Parse, Encode and EncodeSplit: it refuses
// what Parse refuses, and whenever it reports input canonical, Canon.Full is Encode of the
// value and Canon.Without is EncodeSplit's second result. Input without escapes that Encode
// reproduces must be reported canonical, so the fast path is not merely never taken.
func FuzzParseCanonical(f *testing.F) {
	for _, s := range []string{`{}`, `{"sig":1}`, `{"a":1,"sig":2}`, `{"sig":2,"z":1}`, `{"a":{"sig":1},"sig":[{"sig":2}]}`,
		`{"b":1,"a":2,"sig":"x"}`, `{"a":1, "sig":2}`, `{"a":1.0,"sig":2}`, `{"a":"\u0041","sig":2}`, `[{"sig":1}]`,
		`"sig"`, `-0`, `1e2`, `{"\u00e9":1,"e":2}`, "{\"\ue000\":1,\"\U00010000\":2}", "{\"\U00010000\":2,\"\ue000\":1}", envelope,
		`{"sig":"s","k":` + deepDoc(5000) + `}`, `{"draft":"` + strings.Repeat("abcdefgh", 1100000/8) + `","sig":"s"}`} {
		f.Add([]byte(s), "sig")
	}
	f.Fuzz(func(t *testing.T, data []byte, key string) {
		v, c, ok, err := ParseCanonical(data, Options{}, key)
		want, werr := Parse(data, Options{})
		if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
			t.Fatalf("ParseCanonical error %v, Parse error %v", err, werr)
		}
		if err != nil {
			return
		}
		enc, eerr := Encode(want)
		if eerr != nil {
			t.Fatalf("Encode of a parsed value: %v", eerr)
		}
		if !ok {
			if bytes.Equal(enc, data) && !bytes.ContainsRune(data, '\\') {
				t.Fatalf("%q is its own encoding, yet not reported canonical", data)
			}
			return
		}
		if !bytes.Equal(c.Full, data) || !bytes.Equal(c.Full, enc) {
			t.Fatalf("reported canonical: Full %q, input %q, Encode %q", c.Full, data, enc)
		}
		var wantWithout []byte
		if o, isObj := v.(*Object); isObj && key != "" {
			_, wantWithout, _ = EncodeSplit(nil, o, key)
		}
		if !bytes.Equal(c.Without, wantWithout) || (c.Without == nil) != (wantWithout == nil) {
			t.Fatalf("Without %q = %q, EncodeSplit gives %q", key, c.Without, wantWithout)
		}
	})
}

// FuzzLimitsCheck: on any input the parser takes, Limits.Check agrees with a Parse under the
// same limits — both refuse it for nesting or size, or neither does — so the policy a service
// applies before its profile is the one the parser would have applied.
func FuzzLimitsCheck(f *testing.F) {
	for _, s := range []string{`{}`, `[[[["a"]]]]`, `{"a":"[[[[[["}`, `"\"[["`, `[1,[2,[3,[4]]]]`, `{"k":[{"k":[{}]}]}`} {
		f.Add([]byte(s), 3, 10)
	}
	f.Fuzz(func(t *testing.T, data []byte, depth, size int) {
		if _, err := Parse(data, Options{}); err != nil {
			return // the check measures JSON; what the parser refuses anyway is not compared
		}
		l := Limits{MaxDepth: 1 + abs(depth)%8, MaxSize: 1 + abs(size)%64}
		_, perr := Parse(data, Options{MaxDepth: l.MaxDepth, MaxSize: l.MaxSize})
		cerr := l.Check(data)
		for _, code := range []error{ErrTooDeep, ErrTooLarge} {
			if errors.Is(perr, code) != errors.Is(cerr, code) {
				t.Fatalf("limits %+v on %q: Parse %v, Check %v", l, data, perr, cerr)
			}
		}
		if perr == nil && cerr != nil {
			t.Fatalf("limits %+v on %q: Parse takes it, Check refuses: %v", l, data, cerr)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
