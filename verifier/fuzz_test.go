package verifier

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/verifier/internal/testbundle"
)

// FuzzEntryLine drives arbitrary bytes through the entries.jsonl path: the line splitter on
// its own (checked against encoding/json), and the whole verifier with the line in place of
// one entry of a real bundle. Nothing may panic, and a bundle may only verify if the line
// says what the original said.
func FuzzEntryLine(f *testing.F) {
	b := testbundle.Build(f, testbundle.Options{Entries: 4, Participants: 2})
	const at = 2
	lines := b.Lines()
	orig, err := parseEntryLine(lines[at])
	if err != nil {
		f.Fatal(err)
	}
	origRec, err := chap.Parse(orig.Record)
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range lines {
		f.Add(l)
	}
	f.Add(bytes.Replace(lines[at], []byte(`"seq":2`), []byte(`"seq":2,"seq":2`), 1))
	f.Add(bytes.Replace(lines[at], []byte(`{"arrival"`), []byte(` { "arrival" `), 1))
	f.Add([]byte(`{"seq":2,"prev":"x","link":"y","arrival":"z","record":{}}`))
	f.Add([]byte(`{"seq":02,"record":{"a":[1,2,{"b":"\u0000"}]}}`))
	f.Add([]byte(`{"seq":2,"prev":"x","link":"y","arrival":"z","record":{},"meta":{"seq":2,"prev_hash":"sha256:00"}}`))
	f.Add([]byte(`{"meta":[],"meta":{}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(``))

	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := parseEntryLine(line)
		if err == nil && json.Valid(e.Record) {
			// Whatever the splitter accepts with a well-formed record, encoding/json reads the same way.
			var want bundle.EntryLine
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.DisallowUnknownFields()
			if derr := dec.Decode(&want); derr != nil {
				t.Fatalf("splitter accepted %q, encoding/json refuses it: %v", line, derr)
			}
			if want.Seq != e.Seq || want.Prev != e.Prev || want.Link != e.Link || !bytes.Equal(bytes.TrimSpace(want.Record), e.Record) ||
				!bytes.Equal(bytes.TrimSpace(want.Meta), e.Meta) {
				t.Fatalf("splitter and encoding/json disagree on %q", line)
			}
		}
		if bytes.IndexByte(line, '\n') >= 0 {
			return // a newline makes two lines; the bundle test below needs one
		}
		tb := b.Clone()
		ls := tb.Lines()
		ls[at] = line
		tb.SetLines(ls)
		r, rerr := bundle.OpenZipBytes(tb.Zip(t))
		if rerr != nil {
			t.Fatal(rerr)
		}
		rep, verr := Verify(context.Background(), r, Options{Workers: 2})
		if verr != nil {
			t.Fatal(verr)
		}
		if rep.Verdict != Verified {
			return
		}
		// Verified: the line must be the same entry, its record the same canonical record.
		if err != nil || e.Seq != orig.Seq || e.Prev != orig.Prev || e.Link != orig.Link {
			t.Fatalf("verified a bundle whose line %d is %q", at, line)
		}
		rec, perr := chap.Parse(e.Record)
		if perr != nil || !bytes.Equal(rec.Canonical, origRec.Canonical) {
			t.Fatalf("verified a bundle whose record differs: %q", line)
		}
	})
}
