package chap

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
)

func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile(filepath.FromSlash(vectorsPath)); err == nil {
		var v vectors
		if json.Unmarshal(b, &v) == nil {
			f.Add([]byte(v.JCSSample.Canonical))
			f.Add([]byte(v.Refusal.Entry))
			for _, e := range v.Chain.Entries {
				f.Add([]byte(e.Record))
			}
		}
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"m","sig":"ed25519:k:5VZDAMNgrHKQhuLMgG6CioSHfx645dl02HPgZSJJAVVfuIIVkKM7rMYeOXAc+bRr0lv18FlbviRlUUFDjnoQCw=="}`,
		`{"jsonrpc":"2.0","id":"x","result":{"a":[1,-0,1e2,"\u00e9\ud83d\ude00"]}}`,
		`{"outcome":{"status":"refused"},"request":{"id":"e","method":"m","params":{"from":"a"}},"seq":1,"prev_hash":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}`,
		`{"chap":"0.3","method":"participant.join","params":{"jwk":{"kty":"OKP","crv":"Ed25519","kid":"k","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}}}`,
		`{"jsonrpc":"2.0","method":"m","ts":"2026-05-17T09:00:00Z","evidence":{"prev_hash":"sha256:00"}}`,
		`{"seq":0,"arrived":"2023-11-14T22:13:22.000Z","envelope":{"jsonrpc":"2.0","id":"01H","method":"workspace.create","params":{"workspace":"w","from":"human:a","ts":"2023-11-15T00:00:01.000Z"}},"prev_hash":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}`,
		`{"seq":3,"arrived":"2023-11-14T22:13:22Z","envelope":{"jsonrpc":"2.0","id":"x","method":"m","params":{"from":"a"}}}`,
		`{"seq":-1,"envelope":{}}`, `{"envelope":{"jsonrpc":"2.0","method":"m"}}`, `{"seq":1,"envelope":{"evidence":{"prev_hash":"x"}}}`,
		`{"seq":1,"envelope":[],"extra":1}`, `{"seq":9007199254740991,"arrived":1,"envelope":{}}`,
		`{"a":1,"a":2}`, `1.5`, `[]`, `{}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(data)
		if err != nil {
			var re *ledger.RecordError
			if !errors.As(err, &re) || re.Code == "" {
				t.Fatalf("Parse error %v is not a coded *ledger.RecordError", err)
			}
			if r != nil {
				t.Fatal("Parse returned a record with an error")
			}
			return
		}
		reparse := func() (*Record, error) { return Parse(r.Canonical) }
		if r.Meta != nil {
			// A Coordinator audit entry: the record is stored without its metadata, which is
			// kept beside it and handed back on replay.
			reparse = func() (*Record, error) { return ParseStored(r.Canonical, r.Meta) }
		}
		r2, err := reparse()
		if err != nil {
			t.Fatalf("canonical bytes %q of accepted input do not re-parse: %v", r.Canonical, err)
		}
		if !bytes.Equal(r2.Canonical, r.Canonical) {
			t.Fatalf("canonical not a fixed point:\n%q\n%q", r.Canonical, r2.Canonical)
		}
		// Whether encoded or taken from input already in canonical form (r2 always is), the
		// bytes a link hashes and a signature covers are JCS of the object and of it less sig.
		for _, rec := range []*Record{r, r2} {
			if want, err := canonical.Encode(rec.Object); err != nil || !bytes.Equal(rec.Canonical, want) {
				t.Fatalf("Canonical %q, JCS of the object %q (%v)", rec.Canonical, want, err)
			}
			if si, err := rec.SigningInput(); !rec.Refusal && (err != nil || !bytes.Equal(si, must(canonical.Encode(rec.Object.Without("sig"))))) {
				t.Fatalf("SigningInput %q (%v) is not JCS of the object less sig", si, err)
			}
		}
		if r2.Refusal != r.Refusal || r2.Method != r.Method || r2.From != r.From || r2.Workspace != r.Workspace || r2.Entry() != r.Entry() ||
			!bytes.Equal(r2.Meta, r.Meta) || (r.Seq == nil) != (r2.Seq == nil) || r.Seq != nil && *r.Seq != *r2.Seq {
			t.Fatalf("re-parse changed fields: %+v vs %+v", r, r2)
		}
		if !r.Refusal {
			// An envelope is hashed as received: parsing its canonical form keeps every field.
			if r2.ID != r.ID || !r2.TS.Equal(r.TS) || (r.PrevHash == nil) != (r2.PrevHash == nil) || (r.Sig == nil) != (r2.Sig == nil) {
				t.Fatalf("re-parse changed envelope fields: %+v vs %+v", r, r2)
			}
			if r.Sig != nil && r.Sig.Tag() != r2.Sig.Tag() {
				t.Fatal("signature changed")
			}
			si, err := r.SigningInput()
			if err != nil {
				t.Fatalf("SigningInput: %v", err)
			}
			// Cut from the encoding of Canonical, it is JCS(envelope − sig) all the same.
			if want, err := canonical.Encode(r.Object.Without("sig")); err != nil || !bytes.Equal(si, want) {
				t.Fatalf("SigningInput %q, JCS without sig %q (%v)", si, want, err)
			}
		}
		// Admission must not panic either, whatever the record says.
		st, _ := Adapter{}.NewState(nil)
		st.Admit(ledger.Position{Chain: r.Workspace}, data)
	})
}

// must returns b, or nil when err is set (then no comparison with it can succeed).
func must(b []byte, err error) []byte {
	if err != nil {
		return nil
	}
	return b
}
