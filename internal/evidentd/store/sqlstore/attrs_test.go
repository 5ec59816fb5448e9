package sqlstore

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/evident-log/evident/internal/evidentd/store"
)

func TestEncodeAttrs(t *testing.T) {
	long := strings.Repeat("v", store.MaxAttrValue+1)
	for _, tc := range []struct {
		name string
		in   map[string][]string
		want string
	}{
		{"none", nil, ""},
		{"empty values", map[string][]string{"a": {}}, ""},
		{"only unindexable", map[string][]string{"a": {long}, "": {"x"}, "b": {"\xff"}}, ""},
		{"sorted and once", map[string][]string{"z": {"2", "1", "2"}, "a": {"x"}}, `{"a":["x"],"z":["1","2"]}`},
		{"unindexable values left out", map[string][]string{"a": {long, "ok", "\xfe"}}, `{"a":["ok"]}`},
		{"escapes", map[string][]string{"t": {"q\"b\\s/\n\r\t\x01\x1f<é>"}}, `{"t":["q\"b\\s/\n\r\t\u0001\u001f<é>"]}`},
		{"short escapes", map[string][]string{"t": {"\b\f\x7f"}}, "{\"t\":[\"\\b\\f\x7f\"]}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := encodeAttrs(indexedAttrs(tc.in))
			if got != tc.want {
				t.Fatalf("encodeAttrs = %s, want %s", got, tc.want)
			}
			if got == "" {
				return
			}
			back, err := decodeAttrs([]byte(got))
			if err != nil {
				t.Fatal(err)
			}
			if want := indexed(tc.in); !reflect.DeepEqual(back, want) {
				t.Fatalf("decoded %q, want %q", back, want)
			}
		})
	}
}

func TestDecodeAttrsRefuses(t *testing.T) {
	for _, b := range []string{``, `null`, `[]`, `{"a":"x"}`, `{"a":[1]}`, `{"a":null}`, `{"a":["x"]`, `{"a":["x"]} x`, `{}`, `{"a":[null]}`, `{"a":["x",null]}`} {
		if m, err := decodeAttrs([]byte(b)); !errors.Is(err, errAttrs) {
			t.Errorf("decodeAttrs(%s) = %q, %v; want errAttrs", b, m, err)
		}
	}
}

// indexed is what a store keeps of m: the indexable values, each name's sorted and once.
func indexed(m map[string][]string) map[string][]string {
	var out map[string][]string
	for name, vs := range m {
		for _, v := range vs {
			if store.Indexable(name, v) {
				if out == nil {
					out = map[string][]string{}
				}
				out[name] = append(out[name], v)
			}
		}
	}
	for name, vs := range out {
		slices.Sort(vs)
		out[name] = slices.Compact(vs)
	}
	return out
}

// FuzzAttrs: any attributes encode to valid JSON that decodes to what stores index, and
// any bytes decode to attributes or errAttrs, never a panic.
func FuzzAttrs(f *testing.F) {
	f.Add("task_id", "t1", "tag", "a\"b", []byte(`{"a":["b"]}`))
	f.Add("x", "\x00\xff", "", "", []byte(`{"a":[]}`))
	f.Add("n", strings.Repeat("é", 300), "n", "", []byte(`{"a":["\ud800"]}`))
	f.Fuzz(func(t *testing.T, n1, v1, n2, v2 string, raw []byte) {
		in := map[string][]string{n1: {v1, v2}, n2: {v2}}
		enc := encodeAttrs(indexedAttrs(in))
		want := indexed(in)
		if (enc == "") != (want == nil) {
			t.Fatalf("encodeAttrs(%q) = %q, indexed %q", in, enc, want)
		}
		if enc != "" {
			if !json.Valid([]byte(enc)) {
				t.Fatalf("encodeAttrs(%q) = %q: not JSON", in, enc)
			}
			got, err := decodeAttrs([]byte(enc))
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("decodeAttrs(%q) = %q, %v; want %q", enc, got, err, want)
			}
		}
		if m, err := decodeAttrs(raw); err != nil {
			if !errors.Is(err, errAttrs) {
				t.Fatalf("decodeAttrs(%q): %v", raw, err)
			}
		} else if m == nil {
			t.Fatalf("decodeAttrs(%q): nil attributes, no error", raw)
		}
	})
}
