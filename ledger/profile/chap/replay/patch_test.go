package replay

import (
	"errors"
	"testing"

	"github.com/evident-log/evident/ledger/canonical"
)

func mustParse(t testing.TB, s string) canonical.Value {
	t.Helper()
	v, err := canonical.Parse([]byte(s), canonical.CHAP)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestApply follows RFC 6902 Appendix A, plus the CHAP paper's replace {from, to} shape.
func TestApply(t *testing.T) {
	tests := []struct{ name, doc, patch, want string }{
		{"A.1 add member", `{"foo":"bar"}`, `[{"op":"add","path":"/baz","value":"qux"}]`, `{"baz":"qux","foo":"bar"}`},
		{"A.2 add array element", `{"foo":["bar","baz"]}`, `[{"op":"add","path":"/foo/1","value":"qux"}]`, `{"foo":["bar","qux","baz"]}`},
		{"A.3 remove member", `{"baz":"qux","foo":"bar"}`, `[{"op":"remove","path":"/baz"}]`, `{"foo":"bar"}`},
		{"A.4 remove array element", `{"foo":["bar","qux","baz"]}`, `[{"op":"remove","path":"/foo/1"}]`, `{"foo":["bar","baz"]}`},
		{"A.5 replace", `{"baz":"qux","foo":"bar"}`, `[{"op":"replace","path":"/baz","value":"boo"}]`, `{"baz":"boo","foo":"bar"}`},
		{"A.6 move", `{"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}}`, `[{"op":"move","from":"/foo/waldo","path":"/qux/thud"}]`, `{"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}}`},
		{"A.7 move array element", `{"foo":["all","grass","cows","eat"]}`, `[{"op":"move","from":"/foo/1","path":"/foo/3"}]`, `{"foo":["all","cows","eat","grass"]}`},
		{"A.8 test success", `{"baz":"qux","foo":["a",2,"c"]}`, `[{"op":"test","path":"/baz","value":"qux"},{"op":"test","path":"/foo/1","value":2}]`, `{"baz":"qux","foo":["a",2,"c"]}`},
		{"A.10 add nested", `{"foo":"bar"}`, `[{"op":"add","path":"/child","value":{"grandchild":{}}}]`, `{"child":{"grandchild":{}},"foo":"bar"}`},
		{"A.14 escapes", `{"/":9,"~1":10}`, `[{"op":"test","path":"/~01","value":10}]`, `{"/":9,"~1":10}`},
		{"A.16 append", `{"foo":["bar"]}`, `[{"op":"add","path":"/foo/-","value":["abc","def"]}]`, `{"foo":["bar",["abc","def"]]}`},
		{"copy", `{"a":{"b":1}}`, `[{"op":"copy","from":"/a","path":"/c"}]`, `{"a":{"b":1},"c":{"b":1}}`},
		{"paper replace from/to", `{"comments":[{"severity":"warning"}]}`, `[{"op":"replace","path":"/comments/0/severity","from":"warning","to":"info"}]`, `{"comments":[{"severity":"info"}]}`},
		{"replace whole document", `{"a":1}`, `[{"op":"replace","path":"","value":[1]}]`, `[1]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := mustParse(t, tc.doc)
			before, _ := canonical.Encode(doc)
			got, err := Apply(doc, mustParse(t, tc.patch))
			if err != nil {
				t.Fatal(err)
			}
			g, _ := canonical.Encode(got)
			if string(g) != tc.want {
				t.Fatalf("got %s, want %s", g, tc.want)
			}
			if after, _ := canonical.Encode(doc); string(after) != string(before) {
				t.Fatalf("Apply changed its input: %s", after)
			}
		})
	}
}

func TestApplyRejects(t *testing.T) {
	tests := []struct{ name, doc, patch string }{
		{"A.9 test failure", `{"baz":"qux"}`, `[{"op":"test","path":"/baz","value":"bar"}]`},
		{"A.12 add to nonexistent target", `{"foo":"bar"}`, `[{"op":"add","path":"/baz/bat","value":"qux"}]`},
		{"A.13 invalid op", `{"foo":"bar"}`, `[{"op":"jump","path":"/foo"}]`},
		{"A.15 comparing strings and numbers", `{"/":9,"~1":10}`, `[{"op":"test","path":"/~01","value":"10"}]`},
		{"remove missing", `{"a":1}`, `[{"op":"remove","path":"/b"}]`},
		{"replace missing", `{"a":1}`, `[{"op":"replace","path":"/b","value":2}]`},
		{"index out of range", `{"a":[1]}`, `[{"op":"add","path":"/a/5","value":2}]`},
		{"leading zero index", `{"a":[1,2]}`, `[{"op":"remove","path":"/a/01"}]`},
		{"bad escape", `{"a":1}`, `[{"op":"remove","path":"/~2"}]`},
		{"pointer without slash", `{"a":1}`, `[{"op":"remove","path":"a"}]`},
		{"move into itself", `{"a":{"b":{}}}`, `[{"op":"move","from":"/a","path":"/a/b/c"}]`},
		{"paper from mismatch", `{"a":"x"}`, `[{"op":"replace","path":"/a","from":"y","to":"z"}]`},
		{"not an array", `{"a":1}`, `{"op":"remove","path":"/a"}`},
		{"remove root", `{"a":1}`, `[{"op":"remove","path":""}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Apply(mustParse(t, tc.doc), mustParse(t, tc.patch))
			if !errors.Is(err, ErrPatch) {
				t.Fatalf("err = %v, want ErrPatch", err)
			}
		})
	}
}

// FuzzApply feeds arbitrary documents and diffs: Apply must never panic, never change its
// input, and a result must encode canonically.
func FuzzApply(f *testing.F) {
	f.Add(`{"foo":["bar","baz"]}`, `[{"op":"add","path":"/foo/1","value":"qux"}]`)
	f.Add(`{"a":{"b":1}}`, `[{"op":"move","from":"/a/b","path":"/c"},{"op":"copy","from":"/c","path":"/a/d"}]`)
	f.Add(`[1,2,3]`, `[{"op":"remove","path":"/0"},{"op":"replace","path":"/0","from":2,"to":5}]`)
	f.Fuzz(func(t *testing.T, doc, patch string) {
		d, err := canonical.Parse([]byte(doc), canonical.CHAP)
		if err != nil {
			return
		}
		p, err := canonical.Parse([]byte(patch), canonical.CHAP)
		if err != nil {
			return
		}
		before, err := canonical.Encode(d)
		if err != nil {
			return
		}
		res, err := Apply(d, p)
		if after, _ := canonical.Encode(d); string(after) != string(before) {
			t.Fatalf("input changed")
		}
		if err == nil {
			if _, err := canonical.Encode(res); err != nil {
				t.Fatalf("result does not encode: %v", err)
			}
		}
	})
}
