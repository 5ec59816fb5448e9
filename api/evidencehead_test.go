package api

import (
	"errors"
	"testing"

	"github.com/evident-log/evident/ledger"
)

// FuzzParseEvidenceHead: a body is either refused with a coded record error or yields a
// well-formed head; a JSON-RPC response is read like its result.
func FuzzParseEvidenceHead(f *testing.F) {
	head := `"sha256:9f2a0c3b6e1d4f5a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c"`
	f.Add([]byte(`{"evidence_head":` + head + `,"audit_count":67,"id":"wsp","members":[]}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"d","result":{"evidence_head":` + head + `,"audit_count":3}}`))
	f.Add([]byte(`{"evidence_head":` + head + `,"audit_count":-1}`))
	f.Add([]byte(`{"evidence_head":"sha256:00","audit_count":1.5}`))
	f.Add([]byte(`{"result":{"result":{}}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := ParseEvidenceHead(body)
		if err != nil {
			var re *ledger.RecordError
			if !errors.As(err, &re) || re.Code != ledger.CodeMalformed {
				t.Fatalf("%q: error %v is not malformed_record", body, err)
			}
			return
		}
		if _, perr := ledger.ParseLink(req.EvidenceHead.String()); perr != nil {
			t.Fatalf("%q: head %s", body, req.EvidenceHead)
		}
	})
}

func TestParseEvidenceHead(t *testing.T) {
	const h = "sha256:9f2a0c3b6e1d4f5a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c"
	for _, tc := range []struct {
		name, body string
		count      uint64
		ok         bool
	}{
		{"describe result", `{"id":"w","evidence_head":"` + h + `","audit_count":67}`, 67, true},
		{"JSON-RPC response", `{"jsonrpc":"2.0","id":1,"result":{"evidence_head":"` + h + `","audit_count":2}}`, 2, true},
		{"no count", `{"evidence_head":"` + h + `"}`, 0, true},
		{"no head (chaining off)", `{"id":"w","audit_count":5}`, 0, false},
		{"bad head", `{"evidence_head":"sha256:AB"}`, 0, false},
		{"negative count", `{"evidence_head":"` + h + `","audit_count":-3}`, 0, false},
		{"fractional count", `{"evidence_head":"` + h + `","audit_count":2.5}`, 0, false},
		{"largest count", `{"evidence_head":"` + h + `","audit_count":9223372036854775807}`, 1<<63 - 1, true},
		{"count past 2^63-1", `{"evidence_head":"` + h + `","audit_count":9223372036854775808}`, 0, false},
		{"count past 2^64-1", `{"evidence_head":"` + h + `","audit_count":18446744073709551616}`, 0, false},
		{"not an object", `"x"`, 0, false},
	} {
		req, err := ParseEvidenceHead([]byte(tc.body))
		if (err == nil) != tc.ok || tc.ok && (req.EvidenceHead.String() != h || req.AuditCount != tc.count) {
			t.Errorf("%s: %+v, %v", tc.name, req, err)
		}
	}
}
