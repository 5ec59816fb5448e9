package api_test

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile"
	"github.com/evident-log/evident/ledger/profile/cheq"
	"github.com/evident-log/evident/ledger/profile/chieflab"
	"github.com/evident-log/evident/ledger/profile/cop"
	"github.com/evident-log/evident/ledger/profile/owp"
	"github.com/evident-log/evident/regpolicy"
)

// TestProfileCodes: the codes the served profiles declare are answered under their own
// name, and none is also one of the API's or the ledger's.
func TestProfileCodes(t *testing.T) {
	codes := profile.Default().Codes()
	if len(codes) < 20 {
		t.Fatalf("only %d profile codes", len(codes))
	}
	for _, c := range codes {
		if api.ProblemCode(c.Code).Known() {
			t.Errorf("%s's code %q is also an api.ProblemCode", c.Profile, c.Code)
		}
		if c.HTTP != 0 && api.LedgerCode(c.Code) != api.ProblemCode(c.Code) {
			t.Errorf("LedgerCode(%q) = %q", c.Code, api.LedgerCode(c.Code))
		}
	}
	for _, want := range []ledger.Code{owp.CodeEventType, owp.CodeWorkerID, owp.CodeWorkerRebound, owp.CodeLifecycle, owp.CodeKnowledgeRef,
		cop.CodeTopicSeq, cop.CodeParentCycle, cheq.CodeConfirmationReused, chieflab.CodeOperatorMismatch} {
		if !slices.ContainsFunc(codes, func(c profile.Code) bool { return c.Code == want && c.HTTP == 422 }) {
			t.Errorf("refusal %q is not declared with 422", want)
		}
	}
}

// httpCodes returns every code evidentd answers with: the API's and the ledger's, and the
// HTTP codes the served profiles declare.
func httpCodes() []api.ProblemCode {
	out := api.ProblemCodes()
	for _, c := range profile.Default().Codes() {
		if c.HTTP != 0 {
			out = append(out, api.ProblemCode(c.Code))
		}
	}
	return out
}

// documentedCodes returns the HTTP problem codes of docs/errors.md: every row of a table
// with an HTTP column, and the rows of the profile table whose kind is a refusal.
func documentedCodes(t *testing.T, path string) map[api.ProblemCode]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cells := func(line string) []string {
		parts := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i, p := range parts {
			parts[i] = strings.ToLower(strings.TrimSpace(p))
		}
		return parts
	}
	out := map[api.ProblemCode]int{}
	var header []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !strings.HasPrefix(line, "|") {
			header = nil
			continue
		}
		if header == nil {
			header = cells(line)
			continue
		}
		if strings.HasPrefix(line, "|---") {
			continue
		}
		row := cells(line)
		codeCol, httpCol, kindCol := slices.Index(header, "code"), slices.Index(header, "http"), slices.Index(header, "kind")
		if codeCol < 0 || codeCol >= len(row) {
			t.Fatalf("%s:%d: a table row without a code column", path, n)
		}
		code := strings.Trim(row[codeCol], "`")
		switch {
		case httpCol >= 0:
		case kindCol >= 0 && kindCol < len(row) && (strings.Contains(row[kindCol], "refusal") || strings.Contains(row[kindCol], "problem")):
		default:
			continue // a finding of the offline replay, not an HTTP problem
		}
		out[api.ProblemCode(code)] = n
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestProblemCodesDocumented: docs/errors.md and the codes evidentd answers with (the
// ProblemCode constants and the profiles' declared HTTP codes) agree exactly.
func TestProblemCodesDocumented(t *testing.T) {
	doc := documentedCodes(t, "../docs/errors.md")
	codes := httpCodes()
	if len(doc) < 40 {
		t.Fatalf("only %d codes parsed from docs/errors.md: the table format changed?", len(doc))
	}
	seen := map[api.ProblemCode]bool{}
	for _, c := range codes {
		if seen[c] {
			t.Errorf("ProblemCodes lists %q twice", c)
		}
		seen[c] = true
		if _, ok := doc[c]; !ok {
			t.Errorf("code %q is not documented in docs/errors.md", c)
		}
	}
	for c, line := range doc {
		if !seen[c] {
			t.Errorf("docs/errors.md:%d documents %q, which evidentd does not answer with", line, c)
		}
	}
}

// TestRegistrationPolicyCodes: every refusal code of the registration policy is a ProblemCode.
func TestRegistrationPolicyCodes(t *testing.T) {
	for _, c := range []string{regpolicy.CodeMalformed, regpolicy.CodeTooLarge, regpolicy.CodeUnknownIssuer,
		regpolicy.CodeUnknownKey, regpolicy.CodeAlgNotAllowed, regpolicy.CodeContentType, regpolicy.CodeMissingClaim,
		regpolicy.CodeBadSignature, regpolicy.CodeNoPolicy, regpolicy.CodeDetachedPayload, regpolicy.CodeX5ChainUnparseable} {
		if !api.ProblemCode(c).Known() {
			t.Errorf("regpolicy code %q is no api.ProblemCode", c)
		}
	}
}

func TestProblemCodesIsACopy(t *testing.T) {
	a := api.ProblemCodes()
	a[0] = "changed"
	if api.ProblemCodes()[0] == "changed" {
		t.Fatal("ProblemCodes returns the package's own slice")
	}
	if api.ProblemCode("no_such_code").Known() {
		t.Fatal("an unknown code is Known")
	}
}

func TestProblemJSON(t *testing.T) {
	two := 2
	for _, tc := range []struct {
		p    api.Problem
		want string
	}{
		{api.Problem{Type: api.CodeNumberOutOfRange.Type(), Title: "Bad Request", Status: 400, Detail: "d", Code: api.CodeNumberOutOfRange, Index: &two},
			`{"type":"urn:evident:problem:number_out_of_range","title":"Bad Request","status":400,"detail":"d","code":"number_out_of_range","index":2}`},
		{api.Problem{Type: api.CodeNoSuchChain.Type(), Title: "Not Found", Status: 404, Code: api.CodeNoSuchChain},
			`{"type":"urn:evident:problem:no_such_chain","title":"Not Found","status":404,"code":"no_such_chain"}`},
	} {
		b, err := json.Marshal(tc.p)
		if err != nil || string(b) != tc.want {
			t.Errorf("got %s %v, want %s", b, err, tc.want)
		}
		var back api.Problem
		if err := json.Unmarshal(b, &back); err != nil || back.Code != tc.p.Code || (back.Index == nil) != (tc.p.Index == nil) {
			t.Errorf("round trip of %s: %+v %v", b, back, err)
		}
	}
}

func TestSealResponseDecoding(t *testing.T) {
	r := api.SealResponse{Receipt: "AQID", Transparent: "BAU="}
	if b, err := r.ReceiptBytes(); err != nil || string(b) != "\x01\x02\x03" {
		t.Errorf("receipt: %x %v", b, err)
	}
	if b, err := r.TransparentStatement(); err != nil || string(b) != "\x04\x05" {
		t.Errorf("statement: %x %v", b, err)
	}
	if _, err := (&api.SealResponse{Receipt: "!"}).ReceiptBytes(); err == nil {
		t.Error("bad base64 decoded")
	}
}
