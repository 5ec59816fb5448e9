package rawjson

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"testing"
)

func TestElementsAndMember(t *testing.T) {
	deep := strings.Repeat(`{"a":[`, 50000) + "1" + strings.Repeat("]}", 50000) // 100,000 levels
	tests := []struct {
		name  string
		in    string
		elems []string
		err   error
	}{
		{"empty", ` [ ] `, nil, nil},
		{"records", "[{\"a\":1}, {\"b\":[2,\"x\\\"]\"]}\n]", []string{`{"a":1}`, `{"b":[2,"x\"]"]}`}, nil},
		{"deep", "[" + deep + "]", []string{deep}, nil},
		{"bad element", `[{"a":1},{"a":}]`, nil, &ElementError{Index: 1}},
		{"unclosed", `[{"a":1}`, nil, ErrSyntax},
		{"trailing", `[1] 2`, nil, ErrSyntax},
		{"too many", `[1,2,3,4]`, nil, ErrTooMany},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Elements([]byte(tc.in), 3)
			var ee *ElementError
			switch {
			case tc.err == nil && err != nil:
				t.Fatal(err)
			case tc.err != nil && errors.As(tc.err, &ee):
				var g *ElementError
				if !errors.As(err, &g) || g.Index != ee.Index {
					t.Fatalf("got %v, want element %d refused", err, ee.Index)
				}
			case tc.err != nil && !errors.Is(err, tc.err):
				t.Fatalf("got %v, want %v", err, tc.err)
			}
			if len(got) != len(tc.elems) {
				t.Fatalf("%d elements, want %d", len(got), len(tc.elems))
			}
			for i := range got {
				if string(got[i]) != tc.elems[i] {
					t.Fatalf("element %d = %.40q, want %.40q", i, got[i], tc.elems[i])
				}
			}
		})
	}
	page := `{"entries":[` + deep + `], "next_seq" : 7}`
	if v, ok, err := Member([]byte(page), "next_seq"); err != nil || !ok || string(v) != "7" {
		t.Fatalf("next_seq: %q %v %v", v, ok, err)
	}
	if v, ok, err := Member([]byte(page), "entries"); err != nil || !ok || len(v) != len(deep)+2 {
		t.Fatalf("entries: %d bytes %v %v", len(v), ok, err)
	}
	if _, ok, err := Member([]byte(page), "result"); err != nil || ok {
		t.Fatalf("result: %v %v", ok, err)
	}
	if _, _, err := Member([]byte(`{"seq":1,"seq":2}`), "seq"); !errors.Is(err, ErrSyntax) {
		t.Fatalf("duplicate: %v", err)
	}
}

// TestNoRecursion checks a million levels under a 256 KiB goroutine stack.
func TestNoRecursion(t *testing.T) {
	in := []byte(strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20))
	old := debug.SetMaxStack(256 << 10)
	defer debug.SetMaxStack(old)
	if !Valid(in) {
		t.Fatal("deep array not valid")
	}
}

// TestValidDifferential compares Valid with encoding/json's on random byte strings made of
// JSON's tokens, whole and cut short.
func TestValidDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	tokens := []string{"{", "}", "[", "]", ",", ":", `"a"`, `"\u00e9\n"`, `"\x"`, "1", "-0.5e+3", "01", "1.", "true", "nul", "null", " ", "\n"}
	for i := range 200000 {
		var b strings.Builder
		for range 1 + r.IntN(14) {
			b.WriteString(tokens[r.IntN(len(tokens))])
		}
		s := []byte(b.String())
		if got, want := Valid(s), json.Valid(s); got != want {
			t.Fatalf("case %d: Valid(%q) = %v, encoding/json says %v", i, s, got, want)
		}
	}
}

func TestDepth(t *testing.T) {
	for in, want := range map[string]int{`1`: 0, `[]`: 1, `{"a":[{}]}`: 3, `["[[\"[["]`: 1, `[` + strings.Repeat(`{"k":[`, 2500) + strings.Repeat(`]}`, 2500) + `]`: 5001} {
		if got := Depth([]byte(in)); got != want {
			t.Errorf("Depth(%.30q) = %d, want %d", in, got, want)
		}
	}
}
