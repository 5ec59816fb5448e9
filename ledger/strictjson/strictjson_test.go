package strictjson

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

type inner struct {
	ID   string `json:"id"`
	Size uint64 `json:"size,omitempty"`
}

type embedded struct {
	Note string `json:"note,omitempty"`
}

type doc struct {
	embedded
	Format string            `json:"format"`
	Items  []inner           `json:"items"`
	Files  map[string]string `json:"files"`
	Raw    json.RawMessage   `json:"raw,omitempty"`
	Ptr    *inner            `json:"ptr,omitempty"`
}

func TestDecode(t *testing.T) {
	for _, c := range []struct {
		in   string
		want error // nil: accepted
		msg  string
	}{
		{`{"format":"f","items":[{"id":"a","size":9007199254740991}],"files":{"A":"1","a":"2"},"note":"n","raw":{"x":1},"ptr":{"id":"p"}}`, nil, ""},
		{`{"format":"f","format":"g"}`, ErrAmbiguous, "duplicate"},
		{`{"files":{"a":"1","a":"2"}}`, ErrAmbiguous, "duplicate"},
		{`{"Format":"f"}`, ErrAmbiguous, "only in case"},
		{`{"items":[{"ID":"a"}]}`, ErrAmbiguous, "items[0]"},
		{`{"ptr":{"Id":"a"}}`, ErrAmbiguous, "only in case"},
		{`{"NOTE":"x"}`, ErrAmbiguous, "only in case"},
		{`{"format":"\ud800"}`, ErrAmbiguous, "surrogate"},
		{"{\"format\":\"\xff\"}", ErrAmbiguous, "UTF-8"},
		{`{"items":[{"id":"a","size":9007199254740993}]}`, ErrAmbiguous, "safe integer"},
		{`{"items":[{"id":"a","size":1.5}]}`, ErrAmbiguous, "integer"},
		{`{"raw":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, ErrTooDeep, "deep"},
		{`{"surprise":1}`, nil, "unknown field"},
		{`{"format":"f"} {}`, nil, "syntax"},
		{`{"format":`, nil, "syntax"},
	} {
		var d doc
		err := Decode([]byte(c.in), &d, 32, 1<<20)
		switch {
		case c.want == nil && c.msg == "":
			if err != nil {
				t.Errorf("%s: %v", c.in, err)
			}
		case c.want != nil:
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("%.60s: %v, want %v (%s)", c.in, err, c.want, c.msg)
			}
		default:
			if err == nil || errors.Is(err, ErrAmbiguous) || errors.Is(err, ErrTooDeep) {
				t.Errorf("%.60s: %v, want a plain refusal (%s)", c.in, err, c.msg)
			}
		}
	}
}

// FuzzDecode: whatever Decode accepts, encoding/json decodes to the same value, and
// re-encoding that value is accepted again.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"format":"f","items":[{"id":"a","size":1}],"files":{"a":"b"}}`,
		`{"format":"f","FORMAT":"g"}`, `{"files":{"a":"1","a":"2"}}`, `{"note":"\ud800"}`,
		`{"items":[{"id":"a","size":9007199254740993}]}`, `{"raw":[[[[1]]]]}`, `{"ptr":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var got doc
		if err := Decode(in, &got, 32, 1<<20); err != nil {
			return
		}
		var want doc
		if err := json.Unmarshal(in, &want); err != nil {
			t.Fatalf("accepted what encoding/json refuses: %v", err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded %+v, encoding/json %+v", got, want)
		}
		out, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		var again doc
		if err := Decode(out, &again, 32, 1<<20); err != nil {
			t.Fatalf("re-encoded %s refused: %v", out, err)
		}
	})
}
