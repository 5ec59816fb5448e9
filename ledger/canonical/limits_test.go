package canonical

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// deepDoc is n nested levels alternating objects and arrays around a string, so that both
// kinds of frame are exercised: {"k":[{"k":[..."x"...]}]}.
func deepDoc(n int) string {
	var b strings.Builder
	for i := range n {
		if i%2 == 0 {
			b.WriteString(`{"k":`)
		} else {
			b.WriteString(`[`)
		}
	}
	b.WriteString(`"x"`)
	for i := n - 1; i >= 0; i-- {
		if i%2 == 0 {
			b.WriteString(`}`)
		} else {
			b.WriteString(`]`)
		}
	}
	return b.String()
}

// TestDeepAndLarge parses and encodes documents as deep and as large as the defaults allow,
// and one past each limit, checking the round trip and that a refusal names its limit.
func TestDeepAndLarge(t *testing.T) {
	big := strings.Repeat("abcdefgh", 3<<20/8) // a 3 MiB string
	tests := []struct {
		name  string
		in    string
		opts  Options
		err   error
		limit int
	}{
		{"80 levels", deepDoc(80), Options{}, nil, 0},
		{"5000 levels", deepDoc(5000), CHAP, nil, 0},
		{"default depth", deepDoc(DefaultMaxDepth), Options{MaxDepth: DefaultMaxDepth}, nil, 0},
		{"default depth + 1", deepDoc(DefaultMaxDepth + 1), Options{MaxDepth: DefaultMaxDepth}, ErrTooDeep, DefaultMaxDepth},
		{"lowered depth", deepDoc(81), Options{MaxDepth: 80}, ErrTooDeep, 80},
		{"3 MiB string", `{"draft":"` + big + `"}`, CHAP, nil, 0},
		{"3 MiB string, 1 MiB limit", `{"draft":"` + big + `"}`, Options{MaxSize: 1 << 20}, ErrTooLarge, 1 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Parse([]byte(tc.in), tc.opts)
			if tc.err != nil {
				var e *Error
				if !errors.Is(err, tc.err) || !errors.As(err, &e) || e.Limit != tc.limit {
					t.Fatalf("Parse: %v, want %v with Limit %d", err, tc.err, tc.limit)
				}
				if !strings.Contains(e.Error(), strconv.Itoa(tc.limit)) {
					t.Fatalf("message %q does not name the limit %d", e.Error(), tc.limit)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out, err := Encode(v)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.in { // every input here is already canonical
				t.Fatalf("round trip changed %d bytes into %d", len(tc.in), len(out))
			}
			if _, c, ok, err := ParseCanonical([]byte(tc.in), tc.opts, "k"); err != nil || !ok || !bytes.Equal(c.Full, out) {
				t.Fatalf("ParseCanonical: ok %v, %v", ok, err)
			}
		})
	}
}

// TestNoRecursion parses and encodes a value nested MaxDepthCap levels with the goroutine
// stack capped at 256 KiB: a recursive parser or encoder would need hundreds of MB of
// stack for it and the test binary would die.
func TestNoRecursion(t *testing.T) {
	in := strings.Repeat("[", MaxDepthCap) + strings.Repeat("]", MaxDepthCap)
	old := debug.SetMaxStack(256 << 10)
	defer debug.SetMaxStack(old)
	v, err := Parse([]byte(in), Options{MaxDepth: MaxDepthCap})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Encode(v)
	if err != nil || string(out) != in {
		t.Fatalf("Encode: %d bytes, %v", len(out), err)
	}
	inner := v.([]Value)[0] // MaxDepthCap-1 levels, so that the object holding it is at the cap
	o := &Object{Members: []Member{{"sig", "x"}, {"v", inner}}}
	if _, without, err := EncodeSplit(nil, o, "sig"); err != nil || len(without) != len(in)-2+len(`{"v":}`) {
		t.Fatalf("EncodeSplit: %d bytes, %v", len(without), err)
	}
	if _, err := Encode([]Value{v}); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("Encode one level past MaxDepthCap: %v, want ErrTooDeep", err)
	}
}

// TestFrameSizes pins the bytes a nesting level costs on the explicit stacks, as
// docs/operations.md and BENCHMARKS.md state them.
func TestFrameSizes(t *testing.T) {
	if n := unsafe.Sizeof(frame{}); n > 24 {
		t.Errorf("parser frame is %d bytes, documented as 24", n)
	}
	if n := unsafe.Sizeof(encFrame{}); n > 72 {
		t.Errorf("encoder frame is %d bytes, documented as 72", n)
	}
}

// TestLimitsCheck: Limits.Check refuses what a Parse under the same limits refuses for size
// or nesting, with the same error (code and limit), and passes what is within them; zero
// fields take the defaults, a depth above the cap is the cap.
func TestLimitsCheck(t *testing.T) {
	l := Limits{MaxDepth: 10, MaxSize: 100}
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"10 levels", []byte(deepDoc(10)), nil},
		{"11 levels", []byte(deepDoc(11)), ErrTooDeep},
		{"brackets in a string do not nest", []byte(`["[[[[[[[[[[[[[[[[[[[["]`), nil},
		{"100 bytes", append(append([]byte(`"`), bytes.Repeat([]byte("a"), 98)...), '"'), nil},
		{"101 bytes", append(append([]byte(`"`), bytes.Repeat([]byte("a"), 99)...), '"'), ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := l.Check(tc.data)
			_, perr := Parse(tc.data, Options{MaxDepth: l.MaxDepth, MaxSize: l.MaxSize})
			if !errors.Is(err, tc.want) || !errors.Is(perr, tc.want) {
				t.Fatalf("Check: %v, Parse: %v, want %v", err, perr, tc.want)
			}
			var ce, pe *Error
			if tc.want != nil && (!errors.As(err, &ce) || !errors.As(perr, &pe) || ce.Limit != pe.Limit) {
				t.Fatalf("limits named: Check %+v, Parse %+v", ce, pe)
			}
		})
	}
	if got := (Limits{}).OrDefault(); got != DefaultLimits() {
		t.Fatalf("zero limits: %+v", got)
	}
	if got := (Limits{MaxDepth: MaxDepthCap * 4}).OrDefault(); got.MaxDepth != MaxDepthCap {
		t.Fatalf("a depth above the cap: %+v", got)
	}
	if _, err := Parse([]byte(deepDoc(DefaultMaxDepth+1)), Options{}); err != nil {
		t.Fatalf("Options{} is bounded by the caps, not the default record limits: %v", err)
	}
}

// randomDoc writes a random JSON document of nesting up to depth: objects, arrays, strings
// with escapes and non-ASCII text, numbers, literals, random whitespace, and sometimes a
// duplicate key, so that both acceptance and refusal are compared.
func randomDoc(r *rand.Rand, b *strings.Builder, depth int) {
	ws := func() {
		if r.IntN(4) == 0 {
			b.WriteString([]string{" ", "\n", "\t", "\r\n "}[r.IntN(4)])
		}
	}
	ws()
	switch k := r.IntN(10); {
	case k < 2 && depth > 0:
		b.WriteByte('{')
		n := r.IntN(5)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			key := strconv.Itoa(r.IntN(6))
			b.WriteString(`"` + key + `"`)
			ws()
			b.WriteByte(':')
			randomDoc(r, b, depth-1)
		}
		ws()
		b.WriteByte('}')
	case k < 4 && depth > 0:
		b.WriteByte('[')
		n := r.IntN(5)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			randomDoc(r, b, depth-1)
		}
		b.WriteByte(']')
	case k < 6:
		b.WriteString([]string{`"plain"`, `"caf\u00e9 \n\"q\""`, `"😀\ud83d\ude00"`, `""`, `"\u001f/\/"`}[r.IntN(5)])
	case k < 8:
		b.WriteString([]string{`0`, `-1`, `1.5`, `1e21`, `-0`, `123456789`, `2.0e-3`, `1E400`}[r.IntN(8)])
	default:
		b.WriteString([]string{`true`, `false`, `null`}[r.IntN(3)])
	}
	ws()
}

// sameAsStd compares a parsed Value with encoding/json's reading of the same document.
func sameAsStd(v Value, std any) error {
	switch x := v.(type) {
	case nil:
		if std != nil {
			return fmt.Errorf("null vs %v", std)
		}
	case bool, string:
		if x != std {
			return fmt.Errorf("%v vs %v", x, std)
		}
	case Number:
		n, ok := std.(json.Number)
		f1, err1 := strconv.ParseFloat(string(x), 64)
		f2, err2 := strconv.ParseFloat(string(n), 64)
		if !ok || err1 != nil || err2 != nil || f1 != f2 {
			return fmt.Errorf("number %s vs %v", x, std)
		}
	case []Value:
		a, ok := std.([]any)
		if !ok || len(a) != len(x) {
			return fmt.Errorf("array of %d vs %T", len(x), std)
		}
		for i := range x {
			if err := sameAsStd(x[i], a[i]); err != nil {
				return err
			}
		}
	case *Object:
		m, ok := std.(map[string]any)
		if !ok || len(m) != len(x.Members) {
			return fmt.Errorf("object of %d vs %T", len(x.Members), std)
		}
		for _, mem := range x.Members {
			if err := sameAsStd(mem.Value, m[mem.Key]); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestDifferentialStdlib compares the iterative parser with encoding/json on 20,000 random
// documents: the same documents are accepted (but for what this package refuses on purpose:
// duplicate keys, numbers overflowing a double), and they read the same.
func TestDifferentialStdlib(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		var b strings.Builder
		randomDoc(r, &b, 1+r.IntN(12))
		doc := []byte(b.String())
		if r.IntN(20) == 0 && len(doc) > 1 { // now and then a broken document
			doc = doc[:r.IntN(len(doc))]
		}
		v, err := Parse(doc, Options{})
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber()
		var std any
		stdErr := dec.Decode(&std)
		if stdErr == nil && dec.More() {
			stdErr = errors.New("trailing data")
		}
		if stdErr == nil {
			if _, err := dec.Token(); err == nil {
				stdErr = errors.New("trailing data")
			}
		}
		switch {
		case err == nil && stdErr != nil:
			t.Fatalf("doc %d: we accept %q, encoding/json refuses it: %v", i, doc, stdErr)
		case err != nil && stdErr == nil && !errors.Is(err, ErrDuplicateKey) && !errors.Is(err, ErrNumber):
			t.Fatalf("doc %d: encoding/json accepts %q, we refuse it: %v", i, doc, err)
		case err == nil:
			if d := sameAsStd(v, std); d != nil {
				t.Fatalf("doc %d: %q read differently: %v", i, doc, d)
			}
		}
	}
}
