package bundle

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/evident-log/evident/ledger"
)

// TestAppendEntryLine: for compact records and metadata the line is byte for byte what
// encoding/json writes with HTML escaping off, and it reads back as the same entry.
func TestAppendEntryLine(t *testing.T) {
	prev := ledger.NextLink([]byte(`{}`), ledger.Genesis)
	link := ledger.NextLink([]byte(`{"a":1}`), prev)
	for _, e := range []EntryLine{
		{Seq: 0, Prev: ledger.Genesis, Link: prev, Arrival: "2026-01-02T03:04:05.000Z", Record: []byte(`{}`)},
		{Seq: 18446744073709551615, Prev: prev, Link: link, Arrival: "2026-01-02T03:04:05.123Z",
			Record: []byte(`{"a":"<&> é \u2028 \"q\" \\ \u001f","n":[1,-2.5e-7,true,null,{}]}`)},
		{Seq: 7, Prev: prev, Link: link, Arrival: "2026-01-02T03:04:05.000Z", Record: []byte(`{"a":1}`),
			Meta: []byte(`{"arrived":"2026-01-02T03:04:05.000Z","seq":7}`)},
		{Seq: 8, Prev: prev, Link: link, Arrival: "odd \"arrival\" é\t<>", Record: []byte(`{"a":1}`)},
	} {
		got, err := AppendEntryLine([]byte("before\n"), &e)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
		if line, ok := bytes.CutPrefix(got, []byte("before\n")); !ok || !bytes.Equal(line, want.Bytes()) {
			t.Fatalf("line\n%s\nencoding/json\n%s", got, want.Bytes())
		}
		var back EntryLine
		if err := json.Unmarshal(got[len("before\n"):], &back); err != nil {
			t.Fatal(err)
		}
		if back.Seq != e.Seq || back.Prev != e.Prev || back.Link != e.Link || back.Arrival != e.Arrival ||
			!bytes.Equal(back.Record, e.Record) || !bytes.Equal(back.Meta, e.Meta) {
			t.Fatalf("read back %+v, wrote %+v", back, e)
		}
	}
}

// TestAppendEntryLineRefuses: a record or meta that is not one object on one line would
// break the file's framing; nothing is appended.
func TestAppendEntryLineRefuses(t *testing.T) {
	for _, tc := range []struct{ record, meta, want string }{
		{``, ``, "record: not a JSON object"},
		{`[1]`, ``, "record: not a JSON object"},
		{`{"a":1}` + "\n" + `{"b":2}`, ``, "record: holds a line break"},
		{`{"a":"x` + "\r" + `"}`, ``, "record: holds a line break"},
		{`{"a":1}`, `"m"`, "meta: not a JSON object"},
		{`{"a":1}`, "{\n}", "meta: holds a line break"},
	} {
		e := EntryLine{Record: []byte(tc.record)}
		if tc.meta != "" {
			e.Meta = []byte(tc.meta)
		}
		got, err := AppendEntryLine([]byte("x"), &e)
		if err == nil || !strings.Contains(err.Error(), tc.want) || string(got) != "x" {
			t.Errorf("record %q meta %q: %q, %v; want the error %q and nothing appended", tc.record, tc.meta, got, err, tc.want)
		}
	}
}
