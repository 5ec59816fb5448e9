package canonical

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
)

const (
	numberVectorsPath = "../../testvectors/external/chap/canonical-number-vectors.json"
	chapVectorsPath   = "../../testvectors/external/chap/chap-0.3-vectors.json"
)

func TestCHAPNumberVectors(t *testing.T) {
	raw, err := os.ReadFile(numberVectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	var vectors struct {
		Accept []struct {
			Value     json.RawMessage `json:"value"`
			Canonical string          `json:"canonical"`
		} `json:"accept"`
		Reject []struct {
			Note string `json:"note"`
			JSON string `json:"json"`
		} `json:"reject"`
	}
	if err := json.Unmarshal(raw, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors.Accept) == 0 || len(vectors.Reject) == 0 {
		t.Fatal("vector file has no accept or reject cases")
	}
	for _, tc := range vectors.Accept {
		// Marshal the vector's value with encoding/json to get the input;
		// RawMessage keeps 9007199254740991 exact.
		in, err := json.Marshal(tc.Value)
		if err != nil {
			t.Fatal(err)
		}
		t.Run("accept/"+string(in), func(t *testing.T) {
			got, err := Canonicalize(in, CHAP)
			if err != nil {
				t.Fatalf("Canonicalize(%s): %v", in, err)
			}
			if string(got) != tc.Canonical {
				t.Fatalf("Canonicalize(%s) = %s, want %s", in, got, tc.Canonical)
			}
		})
	}
	for _, tc := range vectors.Reject {
		t.Run("reject/"+tc.JSON, func(t *testing.T) {
			got, err := Canonicalize([]byte(tc.JSON), CHAP)
			if !errors.Is(err, ErrNumber) {
				t.Fatalf("Canonicalize(%s) = %q, %v; want ErrNumber (%s)", tc.JSON, got, err, tc.Note)
			}
		})
	}
}

func TestCHAPJCSSample(t *testing.T) {
	raw, err := os.ReadFile(chapVectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	var vectors struct {
		JCSSample struct {
			Canonical string `json:"canonical"`
			SHA256    string `json:"sha256"`
		} `json:"jcs_sample"`
	}
	if err := json.Unmarshal(raw, &vectors); err != nil {
		t.Fatal(err)
	}
	sample := vectors.JCSSample
	if sample.Canonical == "" || sample.SHA256 == "" {
		t.Fatal("jcs_sample missing from vector file")
	}
	got, err := Canonicalize([]byte(sample.Canonical), CHAP)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != sample.Canonical {
		t.Fatalf("re-canonicalisation changed the sample:\n got %s\nwant %s", got, sample.Canonical)
	}
	sum := sha256.Sum256(got)
	if digest := "sha256:" + hex.EncodeToString(sum[:]); digest != sample.SHA256 {
		t.Fatalf("digest %s, want %s", digest, sample.SHA256)
	}
}

func TestCHAPNumbers(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" means refused with ErrNumber
	}{
		{"2.0", "2"},
		{"1e2", "100"},
		{"1E+2", "100"},
		{"-0", "0"},
		{"-0.0", "0"},
		{"0e999999999999999999999", "0"},
		{"0.000e-5", "0"},
		{"100e-2", "1"},
		{"1.5e1", "15"},
		{"-12.340e2", "-1234"},
		{"9007199254740991", "9007199254740991"},
		{"-9007199254740991", "-9007199254740991"},
		{"9007199254740991.000", "9007199254740991"},
		{"9.007199254740991e15", "9007199254740991"},
		{"900719925474099.1e1", "9007199254740991"},
		{"1000000000000000", "1000000000000000"},
		{"1e15", "1000000000000000"},
		{"123456789012345", "123456789012345"},
		{"1.5", ""},
		{"0.1", ""},
		{"-0.5", ""},
		{"1e-7", ""},
		{"1e21", ""},
		{"1e16", ""},
		{"9007199254740992", ""},
		{"9007199254740993", ""},
		{"-9007199254740992", ""},
		{"10000000000000000", ""},
		{"9007199254740991.5", ""},
		{"1.0000000000000000001", ""}, // exact value is not an integer (JS would round it to 1)
		{"1e99999999999999999999999", ""},
		{"1e-99999999999999999999999", ""},
		{"123456789012345678901234567890", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Canonicalize([]byte(tc.in), CHAP)
			if tc.want == "" {
				if !errors.Is(err, ErrNumber) {
					t.Fatalf("got %q, %v; want ErrNumber", got, err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
			// Anything CHAP accepts has the same canonical form under the
			// general rule.
			general, err := Canonicalize([]byte(tc.in), Options{})
			if err != nil || string(general) != tc.want {
				t.Fatalf("general rule: got %q, %v; want %q", general, err, tc.want)
			}
		})
	}
}

func TestGeneralNumbers(t *testing.T) {
	tests := []struct{ in, want string }{
		{"0", "0"},
		{"-0", "0"},
		{"-0.0e-5", "0"},
		{"1.5", "1.5"},
		{"1e21", "1e+21"},
		{"1e20", "100000000000000000000"},
		{"1E-7", "1e-7"},
		{"0.000001", "0.000001"},
		{"9007199254740993", "9007199254740992"},
		{"123456789012345678901234567890", "1.2345678901234568e+29"},
		{"1e-400", "0"}, // underflow rounds to zero, as in ECMAScript
		{"-1e-400", "0"},
		{"1.7976931348623157e308", "1.7976931348623157e+308"},
	}
	for _, tc := range tests {
		got, err := Canonicalize([]byte(tc.in), Options{})
		if err != nil || string(got) != tc.want {
			t.Errorf("Canonicalize(%s) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"1e400", "-1e400", "1.7976931348623159e308"} {
		if _, err := Canonicalize([]byte(in), Options{}); !errors.Is(err, ErrNumber) {
			t.Errorf("Canonicalize(%s): %v, want ErrNumber", in, err)
		}
	}
}

func TestRFC8785Examples(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "rfc8785", "*.input.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) < 2 {
		t.Fatalf("expected golden files in testdata/rfc8785, found %v", inputs)
	}
	for _, inPath := range inputs {
		name := strings.TrimSuffix(filepath.Base(inPath), ".input.json")
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(inPath)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", "rfc8785", name+".canonical.json"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Canonicalize(in, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
			again, err := Canonicalize(got, Options{})
			if err != nil || !bytes.Equal(again, want) {
				t.Fatalf("not idempotent: %s, %v", again, err)
			}
		})
	}
}

func TestRFC8785Numbers(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "rfc8785", "numbers.txt"))
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for line := range strings.Lines(string(raw)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			t.Fatalf("bad line %q", line)
		}
		bits, err := strconv.ParseUint(fields[0], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		in, want := fields[1], fields[2]
		rows++
		t.Run(fields[0], func(t *testing.T) {
			f, err := strconv.ParseFloat(in, 64)
			if err != nil {
				t.Fatal(err)
			}
			// -0 and +0 compare equal; check the magnitude bits for them.
			if got := math.Float64bits(f); got != bits && !(f == 0 && bits&^(1<<63) == 0) {
				t.Fatalf("input %s is %016x, not %s", in, got, fields[0])
			}
			got, err := Canonicalize([]byte("["+in+"]"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "["+want+"]" {
				t.Fatalf("Canonicalize(%s) = %s, want [%s]", in, got, want)
			}
		})
	}
	if rows < 20 {
		t.Fatalf("only %d rows in numbers.txt", rows)
	}
}

func TestStringEscaping(t *testing.T) {
	tests := []struct{ in, want string }{
		{`"\u0000\u0001\u001f"`, `"\u0000\u0001\u001f"`},
		{`"\b\f\n\r\t"`, `"\b\f\n\r\t"`},
		{`"\u0008\u000C\u000A\u000D\u0009"`, `"\b\f\n\r\t"`},
		{`"\"\\\/"`, `"\"\\/"`},
		{`"\u2028\u2029"`, "\"\u2028\u2029\""},
		{`"\u007f\u00e9"`, "\"\x7f\u00e9\""},
		{`"\uD83D\uDE00"`, "\"\U0001F600\""},
		{"\"\U0001F600\"", "\"\U0001F600\""},
		{`"\u001B[31m"`, `"\u001b[31m"`},
		{`"</script>"`, `"</script>"`},
	}
	for _, tc := range tests {
		got, err := Canonicalize([]byte(tc.in), Options{})
		if err != nil || string(got) != tc.want {
			t.Errorf("Canonicalize(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestKeySortUTF16(t *testing.T) {
	// U+10000 and above sort before U+E000-U+FFFF in UTF-16 order, although
	// their UTF-8 bytes sort after.
	in := "{\"\uffff\":1,\"\U00010000\":2,\"\ue000\":3,\"\ud7ff\":4,\"a\":5,\"\":6,\"ab\":7,\"\U0010ffff\":8}"
	want := "{\"\":6,\"a\":5,\"ab\":7,\"\ud7ff\":4,\"\U00010000\":2,\"\U0010ffff\":8,\"\ue000\":3,\"\uffff\":1}"
	got, err := Canonicalize([]byte(in), Options{})
	if err != nil || string(got) != want {
		t.Fatalf("got %s, %v\nwant %s", got, err, want)
	}

	// compareKeys agrees with comparing utf16.Encode code units.
	keys := []string{"", "a", "ab", "b", "\x7f", "\u0080", "\u07ff", "\u0800", "\ud7ff", "\ue000",
		"\uefff", "\uf000", "\uffff", "\U00010000", "\U0001F600", "\U0010ffff", "a\U00010000", "a\uffff",
		"\U00010000a", "\uffffa", "\u00e9", "e\u0301"}
	for _, a := range keys {
		for _, b := range keys {
			want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
			if got := compareKeys(a, b); sign(got) != want {
				t.Errorf("compareKeys(%q, %q) = %d, want sign %d", a, b, got, want)
			}
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func TestWhitespaceAndStructure(t *testing.T) {
	tests := []struct{ in, want string }{
		{" \t\r\n{ \"b\" : [ 1 , 2 ] , \"a\" : { } } \n", `{"a":{},"b":[1,2]}`},
		{"[]", "[]"},
		{"{}", "{}"},
		{"[[],{},[[]]]", "[[],{},[[]]]"},
		{" true ", "true"},
		{"null", "null"},
		{`"x"`, `"x"`},
		{`{"a":{"d":1,"c":2},"b":[{"z":0,"y":null}]}`, `{"a":{"c":2,"d":1},"b":[{"y":null,"z":0}]}`},
	}
	for _, tc := range tests {
		got, err := Canonicalize([]byte(tc.in), Options{})
		if err != nil || string(got) != tc.want {
			t.Errorf("Canonicalize(%q) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestRejections(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	deepObj := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	manyKeys := func(n int, dup string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			b.WriteString(`"k` + strconv.Itoa(i) + `":1,`)
		}
		b.WriteString(`"` + dup + `":2}`)
		return b.String()
	}
	tests := []struct {
		name   string
		in     string
		opts   Options
		want   error
		offset int // -1: don't check
	}{
		{"empty", "", Options{}, ErrSyntax, 0},
		{"only space", "  ", Options{}, ErrSyntax, 2},
		{"trailing garbage", `{} x`, Options{}, ErrSyntax, 3},
		{"two values", `1 2`, Options{}, ErrSyntax, 2},
		{"trailing comma array", `[1,]`, Options{}, ErrSyntax, 3},
		{"trailing comma object", `{"a":1,}`, Options{}, ErrSyntax, 7},
		{"leading comma", `[,1]`, Options{}, ErrSyntax, 1},
		{"missing colon", `{"a" 1}`, Options{}, ErrSyntax, 5},
		{"unquoted key", `{a:1}`, Options{}, ErrSyntax, 1},
		{"single quotes", `'a'`, Options{}, ErrSyntax, 0},
		{"unterminated string", `"abc`, Options{}, ErrSyntax, 0},
		{"unterminated array", `[1`, Options{}, ErrSyntax, 2},
		{"unterminated object", `{"a":1`, Options{}, ErrSyntax, 6},
		{"raw control char", "\"a\tb\"", Options{}, ErrSyntax, 2},
		{"bad escape", `"\x41"`, Options{}, ErrSyntax, 1},
		{"short unicode escape", `"\u12"`, Options{}, ErrSyntax, 1},
		{"bad literal", `tru`, Options{}, ErrSyntax, 0},
		{"literal prefix", `nulls`, Options{}, ErrSyntax, 4},
		{"NaN", `NaN`, Options{}, ErrSyntax, 0},
		{"leading zero", `01`, Options{}, ErrSyntax, 1},
		{"plus sign", `+1`, Options{}, ErrSyntax, 0},
		{"bare minus", `-`, Options{}, ErrSyntax, 1},
		{"bare dot", `.5`, Options{}, ErrSyntax, 0},
		{"trailing dot", `1.`, Options{}, ErrSyntax, 2},
		{"empty exponent", `1e`, Options{}, ErrSyntax, 2},
		{"hex", `0x10`, Options{}, ErrSyntax, 1},
		{"comment", `[1]//`, Options{}, ErrSyntax, 3},
		{"BOM", "\xef\xbb\xbf{}", Options{}, ErrSyntax, 0},
		{"invalid UTF-8 in string", "\"a\xffb\"", Options{}, ErrInvalidUTF8, 2},
		{"invalid UTF-8 in key", "{\"\xc3\":1}", Options{}, ErrInvalidUTF8, 2},
		{"overlong UTF-8", "\"\xc0\xaf\"", Options{}, ErrInvalidUTF8, 1},
		{"UTF-8 encoded surrogate", "\"\xed\xa0\x80\"", Options{}, ErrInvalidUTF8, 1},
		{"truncated UTF-8", "\"\xe2\x82\"", Options{}, ErrInvalidUTF8, 1},
		{"invalid UTF-8 outside string", "[1,\xff]", Options{}, ErrInvalidUTF8, 3},
		{"invalid UTF-8 trailing", "{} \xfe", Options{}, ErrInvalidUTF8, 3},
		{"lone high surrogate", `"\ud800"`, Options{}, ErrLoneSurrogate, 1},
		{"lone high surrogate then text", `"\ud800abcdef"`, Options{}, ErrLoneSurrogate, 1},
		{"lone low surrogate", `"x\udc00"`, Options{}, ErrLoneSurrogate, 2},
		{"reversed pair", `"\ude00\ud83d"`, Options{}, ErrLoneSurrogate, 1},
		{"high high", `"\ud83d\ud83d"`, Options{}, ErrLoneSurrogate, 1},
		{"lone surrogate in key", `{"\uDBFF":1}`, Options{}, ErrLoneSurrogate, 2},
		{"duplicate key", `{"a":1,"a":2}`, Options{}, ErrDuplicateKey, 7},
		{"duplicate key after unescape", `{"a":1,"\u0061":2}`, Options{}, ErrDuplicateKey, 7},
		{"duplicate key nested", `{"x":{"b":1,"c":2,"b":3}}`, Options{}, ErrDuplicateKey, 18},
		{"duplicate key in large object", manyKeys(100, "k57"), Options{}, ErrDuplicateKey, -1},
		{"duplicate key at map threshold", manyKeys(mapThreshold, "k0"), Options{}, ErrDuplicateKey, -1},
		{"too deep arrays", deep(65), Options{MaxDepth: 64}, ErrTooDeep, 64},
		{"too deep objects", deepObj(65), Options{MaxDepth: 64}, ErrTooDeep, -1},
		{"too deep default", deep(DefaultMaxDepth + 1), Options{MaxDepth: DefaultMaxDepth}, ErrTooDeep, DefaultMaxDepth},
		{"too deep custom", deep(4), Options{MaxDepth: 3}, ErrTooDeep, 3},
		{"too large", `[1,2,3]`, Options{MaxSize: 6}, ErrTooLarge, 6},
		{"too large default", "[" + strings.Repeat(" ", DefaultMaxSize) + "]", Options{MaxSize: DefaultMaxSize}, ErrTooLarge, DefaultMaxSize},
		{"number overflow", `[1e309]`, Options{}, ErrNumber, 1},
		{"CHAP fraction", `{"a":1.5}`, CHAP, ErrNumber, 5},
		{"CHAP unsafe", `[9007199254740993]`, CHAP, ErrNumber, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Parse([]byte(tc.in), tc.opts)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Parse(%q) = %v, %v; want %v", truncate(tc.in), v, err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not *Error", err)
			}
			if tc.offset >= 0 && e.Offset != tc.offset {
				t.Errorf("offset %d, want %d (%v)", e.Offset, tc.offset, err)
			}
			if len(err.Error()) > 200 {
				t.Errorf("error message too long: %d bytes", len(err.Error()))
			}
			if _, err := Canonicalize([]byte(tc.in), tc.opts); !errors.Is(err, tc.want) {
				t.Errorf("Canonicalize: %v, want %v", err, tc.want)
			}
		})
	}
}

func truncate(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

func TestDepthLimits(t *testing.T) {
	at := strings.Repeat("[", DefaultMaxDepth) + strings.Repeat("]", DefaultMaxDepth)
	if _, err := Parse([]byte(at), Options{}); err != nil {
		t.Fatalf("depth %d refused: %v", DefaultMaxDepth, err)
	}
	deep := strings.Repeat(`{"a":[`, 500) + strings.Repeat("]}", 500)
	if _, err := Parse([]byte(deep), Options{MaxDepth: 1000}); err != nil {
		t.Fatalf("depth 1000 refused with MaxDepth 1000: %v", err)
	}
	huge := strings.Repeat("[", MaxDepthCap+1) + strings.Repeat("]", MaxDepthCap+1)
	if _, err := Parse([]byte(huge), Options{MaxDepth: 1 << 30}); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("MaxDepth above the cap: %v, want ErrTooDeep", err)
	}
}

func TestErrorMessagesBounded(t *testing.T) {
	long := strings.Repeat(`k\n\u001b`, 1000) // the key is "k\n\x1b" repeated
	_, err := Parse([]byte(`{"`+long+`":1,"`+long+`":2}`), Options{})
	if !errors.Is(err, ErrDuplicateKey) {
		t.Fatal(err)
	}
	msg := err.Error()
	if len(msg) > 200 || strings.ContainsAny(msg, "\n\x1b") {
		t.Fatalf("message not bounded or not quoted: %q", msg)
	}
	if !strings.Contains(msg, `"k\n\x1bk\n\x1b`) || !strings.Contains(msg, "bytes") {
		t.Fatalf("message does not quote the truncated key: %q", msg)
	}
	_, err = Parse([]byte("[1e99999"+strings.Repeat("9", 5000)+"]"), Options{})
	if !errors.Is(err, ErrNumber) || len(err.Error()) > 200 {
		t.Fatalf("number error: %v", err)
	}
}

func TestParseValues(t *testing.T) {
	v, err := Parse([]byte(`{"s":"x\ny","n":-2.0,"b":true,"z":null,"a":[1,"2",false],"o":{"k":"v"}}`), CHAP)
	if err != nil {
		t.Fatal(err)
	}
	obj, ok := v.(*Object)
	if !ok {
		t.Fatalf("top-level value is %T", v)
	}
	keys := make([]string, 0, len(obj.Members))
	for _, m := range obj.Members {
		keys = append(keys, m.Key)
	}
	if want := []string{"s", "n", "b", "z", "a", "o"}; !slices.Equal(keys, want) {
		t.Fatalf("member order %v, want input order %v", keys, want)
	}
	if s, ok := obj.String("s"); !ok || s != "x\ny" {
		t.Errorf("String(s) = %q, %v", s, ok)
	}
	if _, ok := obj.String("n"); ok {
		t.Error("String(n) reported a number as a string")
	}
	if n, ok := obj.Get("n"); !ok || n != Number("-2") {
		t.Errorf("Get(n) = %#v, %v", n, ok)
	}
	if i, ok := Number("-2").Int64(); !ok || i != -2 {
		t.Errorf("Int64 = %d, %v", i, ok)
	}
	if b, ok := obj.Get("b"); !ok || b != true {
		t.Errorf("Get(b) = %#v, %v", b, ok)
	}
	if z, ok := obj.Get("z"); !ok || z != nil {
		t.Errorf("Get(z) = %#v, %v", z, ok)
	}
	if _, ok := obj.Get("missing"); ok {
		t.Error("Get(missing) found something")
	}
	a, _ := obj.Get("a")
	if arr, ok := a.([]Value); !ok || len(arr) != 3 || arr[0] != Number("1") || arr[1] != "2" || arr[2] != false {
		t.Errorf("array = %#v", a)
	}
	inner, ok := obj.Object("o")
	if !ok {
		t.Fatal("Object(o) not found")
	}
	if s, _ := inner.String("k"); s != "v" {
		t.Errorf("inner k = %q", s)
	}
	if _, ok := obj.Object("s"); ok {
		t.Error("Object(s) reported a string as an object")
	}

	without := obj.Without("a", "o", "absent")
	if len(without.Members) != 4 || len(obj.Members) != 6 {
		t.Fatalf("Without: %d members (original %d)", len(without.Members), len(obj.Members))
	}
	enc, err := Encode(without)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"b":true,"n":-2,"s":"x\ny","z":null}`; string(enc) != want {
		t.Fatalf("Encode(Without) = %s, want %s", enc, want)
	}
	var nilObj *Object
	if _, ok := nilObj.Get("a"); ok {
		t.Error("nil Object Get found something")
	}
	if w := nilObj.Without("a"); w == nil || len(w.Members) != 0 {
		t.Error("nil Object Without")
	}
}

func TestParseResultIsIndependentOfInput(t *testing.T) {
	in := []byte(`{"key":"value","n":12}`)
	v, err := Parse(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 'X'
	}
	got, err := Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"key":"value","n":12}` {
		t.Fatalf("result changed with the input buffer: %s", got)
	}
}

func TestEncodeConstructedValues(t *testing.T) {
	cyclic := &Object{}
	cyclic.Members = []Member{{Key: "self", Value: cyclic}}
	tests := []struct {
		name string
		v    Value
		want string
		err  error
	}{
		{"nested", &Object{Members: []Member{
			{"b", []Value{Number("1"), "x", nil, true}},
			{"a", &Object{}},
		}}, `{"a":{},"b":[1,"x",null,true]}`, nil},
		{"nil slice", []Value(nil), `[]`, nil},
		{"escapes", "\x00\u00e9\"", `"\u0000é\""`, nil},
		{"canonical numbers", []Value{Number("1e+21"), Number("-0.5"), Number("9007199254740992")}, `[1e+21,-0.5,9007199254740992]`, nil},
		{"rounded number", Number("9007199254740993"), "", ErrNumber},
		{"non-canonical number", Number("2.0"), "", ErrNumber},
		{"non-canonical exponent", Number("1e21"), "", ErrNumber},
		{"negative zero", Number("-0"), "", ErrNumber},
		{"not a number", Number("abc"), "", ErrNumber},
		{"empty number", Number(""), "", ErrNumber},
		{"invalid UTF-8 string", "\xff", "", ErrInvalidUTF8},
		{"invalid UTF-8 key", &Object{Members: []Member{{"\xff", nil}}}, "", ErrInvalidUTF8},
		{"duplicate keys sorted", &Object{Members: []Member{{"a", nil}, {"a", nil}}}, "", ErrDuplicateKey},
		{"duplicate keys unsorted", &Object{Members: []Member{{"b", nil}, {"a", nil}, {"b", nil}}}, "", ErrDuplicateKey},
		{"float64", 1.5, "", ErrUnsupportedType},
		{"map", map[string]any{}, "", ErrUnsupportedType},
		{"nil object", (*Object)(nil), "", ErrUnsupportedType},
		{"cycle", cyclic, "", ErrTooDeep},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Encode(tc.v)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Encode = %q, %v; want %v", got, err, tc.err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("Encode = %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestAppendEncode(t *testing.T) {
	dst := []byte("prefix:")
	out, err := AppendEncode(dst, []Value{"a"})
	if err != nil || string(out) != `prefix:["a"]` {
		t.Fatalf("AppendEncode = %q, %v", out, err)
	}
	out, err = AppendEncode([]byte("keep"), []Value{"a", 1.5})
	if err == nil || string(out) != "keep" {
		t.Fatalf("AppendEncode on error = %q, %v; want dst unchanged and an error", out, err)
	}
}

func TestConcurrentUse(t *testing.T) {
	// Exercises the parser pool under -race.
	inputs := []string{envelope, `{"b":[1,2,{"c":"\u00e9"}],"a":null}`, `[{"x":1},{"y":2}]`}
	want := make([]string, len(inputs))
	for i, in := range inputs {
		out, err := Canonicalize([]byte(in), CHAP)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = string(out)
	}
	done := make(chan error)
	for g := range 8 {
		go func() {
			for i := range 200 {
				k := (g + i) % len(inputs)
				out, err := Canonicalize([]byte(inputs[k]), CHAP)
				if err == nil && string(out) != want[k] {
					err = errors.New("mismatch: " + string(out))
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestEncodeSplit(t *testing.T) {
	// without "" marks an object with no such member at the top (without is nil) or one only
	// compared with Encode(Without) by checkSplit.
	for _, tc := range []struct{ in, key, without string }{
		{`{"sig":"s"}`, "sig", `{}`},
		{`{"a":1,"sig":"s"}`, "sig", `{"a":1}`},
		{`{"sig":"s","z":1}`, "sig", `{"z":1}`},
		{`{"a":1,"sig":"s","z":[1,{"sig":2}]}`, "sig", `{"a":1,"z":[1,{"sig":2}]}`},
		{`{"z":1,"sig":"s","a":{"sig":{"sig":3}}}`, "sig", `{"a":{"sig":{"sig":3}},"z":1}`},
		{`{"a":{"sig":1}}`, "sig", ""},
		{`{}`, "sig", ""},
		{envelope, "sig", ""},
	} {
		v, err := Parse([]byte(tc.in), Options{})
		if err != nil {
			t.Fatal(err)
		}
		o := v.(*Object)
		checkSplit(t, o, tc.key)
		if tc.without == "" {
			continue
		}
		if _, without, _ := EncodeSplit(nil, o, tc.key); string(without) != tc.without {
			t.Errorf("%s without %q = %s, want %s", tc.in, tc.key, without, tc.without)
		}
	}
	if _, _, err := EncodeSplit(nil, nil, "sig"); !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("nil object: %v, want ErrUnsupportedType", err)
	}
	dup := &Object{Members: []Member{{Key: "a", Value: "1"}, {Key: "sig", Value: "s"}, {Key: "a", Value: "2"}}}
	if _, _, err := EncodeSplit(nil, dup, "sig"); !errors.Is(err, ErrDuplicateKey) {
		t.Errorf("duplicate key: %v, want ErrDuplicateKey", err)
	}
}

func TestParseCanonical(t *testing.T) {
	for _, tc := range []struct {
		in      string
		ok      bool
		without string // "-" for nil
	}{
		{`{"a":1,"sig":"s"}`, true, `{"a":1}`},
		{`{"sig":"s","z":1}`, true, `{"z":1}`},
		{`{"sig":"s"}`, true, `{}`},
		{`{"a":1,"sig":"s","z":[1,{"sig":2}]}`, true, `{"a":1,"z":[1,{"sig":2}]}`},
		{`{"a":{"sig":1}}`, true, "-"},
		{`[{"sig":1}]`, true, "-"},
		{`{"a":"caf` + "\u00e9" + `","sig":"s"}`, true, `{"a":"caf` + "\u00e9" + `"}`},
		{"{\"\ue000\":1,\"\U00010000\":2}", false, ""}, // UTF-8 byte order, not UTF-16 order
		{"{\"\U00010000\":2,\"\ue000\":1}", true, "-"},
		{`{"a":1, "sig":"s"}`, false, ""},
		{` {"a":1}`, false, ""},
		{`{"a":1}` + "\n", false, ""},
		{`{"sig":"s","a":1}`, false, ""},
		{`{"a":"\u0041"}`, false, ""},
		{`{"a":"\n"}`, false, ""}, // the encoder's spelling too, but escapes are not compared
		{`{"a":1.0}`, false, ""},
		{`{"a":-0}`, false, ""},
		{`{"a":1e2}`, false, ""},
		{`{"a":10000000000000000000000}`, false, ""},
		{`{"a":1e+22}`, true, "-"},
	} {
		v, c, ok, err := ParseCanonical([]byte(tc.in), Options{}, "sig")
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if ok != tc.ok {
			t.Errorf("%s: canonical %v, want %v", tc.in, ok, tc.ok)
			continue
		}
		if !ok {
			if c.Full != nil || c.Without != nil {
				t.Errorf("%s: not canonical, yet Canon %q %q", tc.in, c.Full, c.Without)
			}
			continue
		}
		if enc, err := Encode(v); err != nil || string(enc) != tc.in || string(c.Full) != tc.in {
			t.Errorf("%s: Full %s, Encode %s (%v)", tc.in, c.Full, enc, err)
		}
		if tc.without == "-" {
			if c.Without != nil {
				t.Errorf("%s: Without %s, want nil", tc.in, c.Without)
			}
		} else if string(c.Without) != tc.without {
			t.Errorf("%s: Without %s, want %s", tc.in, c.Without, tc.without)
		}
	}
	// Refusals are Parse's, whatever the input's form.
	for _, in := range []string{`{"a":1,"a":2}`, `{"a":1`, `{"a":9007199254740992}`} {
		_, _, _, err := ParseCanonical([]byte(in), CHAP, "sig")
		_, werr := Parse([]byte(in), CHAP)
		if err == nil || werr == nil || err.Error() != werr.Error() {
			t.Errorf("%s: ParseCanonical %v, Parse %v", in, err, werr)
		}
	}
}
