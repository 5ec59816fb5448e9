package server_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/veraison/go-cose"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/evidentd/server"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/regpolicy"
	"github.com/evident-log/evident/regpolicy/regpolicytest"
)

// TestSCRAPIProblems walks every SCRAPI route's error cases — and paths and methods under
// them that no route serves — on a real evidentd, and decodes each answer: an RFC 9290
// concise problem detail (application/concise-problem-details+cbor, never
// application/problem+json) whose title (-1) is draft-ietf-scitt-scrapi-11's where the
// draft names the error, whose detail (-2) is not empty and whose instance (-3) is the
// request's path.
func TestSCRAPIProblems(t *testing.T) {
	dir := t.TempDir()
	ed := regpolicytest.NewIssuer(t, "https://ed.example", cose.AlgorithmEdDSA)
	es := regpolicytest.NewIssuer(t, "https://es.example", cose.AlgorithmES256)
	stranger := regpolicytest.NewIssuer(t, "https://stranger.example", cose.AlgorithmEdDSA)
	policy := regpolicytest.WritePolicy(t, dir, regpolicy.Policy{Algorithms: []string{"EdDSA"}, ContentTypes: []string{"application/spdx+json"}}, ed, es)
	e := startEvidentd(t, newData(t), 100*time.Millisecond, 5*time.Second, policy)

	sbom := []byte(`{"spdxVersion":"SPDX-2.3"}`)
	opts := regpolicytest.Options{Subject: "pkg:x", ContentType: "application/spdx+json", IssuedAt: time.Now().Unix()}
	good := ed.Sign(t, sbom, opts)
	noSub := opts
	noSub.Subject = ""
	unknownID := strings.Repeat("0", 64)
	unknownKid := base64.RawURLEncoding.EncodeToString(make([]byte, 32))

	for _, tc := range []struct {
		name, method, path, contentType string
		body                            []byte
		status                          int
		title                           string
		code                            api.ProblemCode
		allow                           string // the Allow header of a 405
	}{
		// Register Signed Statement (section 2.3).
		{"wrong Content-Type", "POST", "/entries", "text/plain", good, 415, "Unsupported Media Type", api.CodeUnsupportedMediaType, ""},
		{"Content-Type that does not parse", "POST", "/entries", "cose", good, 415, "Unsupported Media Type", api.CodeUnsupportedMediaType, ""},
		{"statement with a charset", "POST", "/entries", server.COSEType + "; charset=latin1", good, 415, "Unsupported Media Type", api.CodeUnsupportedMediaType, ""},
		{"not COSE", "POST", "/entries", server.COSEType, []byte("not a COSE_Sign1"), 400, server.TitleMalformed, api.CodeMalformedStatement, ""},
		{"truncated COSE", "POST", "/entries", server.COSEType, good[:len(good)/2], 400, server.TitleMalformed, api.CodeMalformedStatement, ""},
		{"algorithm the policy refuses", "POST", "/entries", server.COSEType, es.Sign(t, sbom, opts), 400, server.TitleBadAlgorithm, api.CodeAlgorithmNotAllowed, ""},
		{"detached payload", "POST", "/entries", server.COSEType, detach(t, good), 400, server.TitlePayloadMissing, api.CodeDetachedPayload, ""},
		{"issuer not in the policy", "POST", "/entries", server.COSEType, stranger.Sign(t, sbom, opts), 403, server.TitleRejected, api.CodeUnknownIssuer, ""},
		{"no subject", "POST", "/entries", server.COSEType, ed.Sign(t, sbom, noSub), 400, server.TitleRejected, api.CodeMissingClaim, ""},
		{"content type the policy refuses", "POST", "/entries", server.COSEType, ed.Sign(t, sbom, regpolicytest.Options{Subject: "s", ContentType: "text/plain", IssuedAt: 1}), 400, server.TitleRejected, api.CodeContentTypeNotAllowed, ""},
		{"too large", "POST", "/entries", server.COSEType, make([]byte, receipts.MaxStatementSize+1), 413, http.StatusText(413), api.CodeStatementTooLarge, ""},
		{"GET /entries", "GET", "/entries", "", nil, 405, http.StatusText(405), api.CodeMethodNotAllowed, "POST"},
		{"DELETE /entries", "DELETE", "/entries", "", nil, 405, http.StatusText(405), api.CodeMethodNotAllowed, "POST"},
		// Resolve Receipt (section 2.4) and the transparent statement.
		{"invalid locator", "GET", "/entries/xyz", "", nil, 400, server.TitleInvalidLocator, api.CodeBadID, ""},
		{"upper-case locator", "GET", "/entries/" + strings.Repeat("A", 64), "", nil, 400, server.TitleInvalidLocator, api.CodeBadID, ""},
		{"unknown entry", "GET", "/entries/" + unknownID, "", nil, 404, server.TitleNotFound, api.CodeNotFound, ""},
		{"unknown entry's statement", "GET", "/entries/" + unknownID + "/statement", "", nil, 404, server.TitleNotFound, api.CodeNotFound, ""},
		{"invalid locator's statement", "GET", "/entries/xyz/statement", "", nil, 400, server.TitleInvalidLocator, api.CodeBadID, ""},
		{"query that does not parse", "GET", "/entries/" + unknownID + "?a;b", "", nil, 400, server.TitleMalformed, api.CodeBadQuery, ""},
		{"PUT an entry", "PUT", "/entries/" + unknownID, "", nil, 405, http.StatusText(405), api.CodeMethodNotAllowed, "GET, HEAD"},
		{"POST a transparent statement", "POST", "/entries/" + unknownID + "/statement", "", nil, 405, http.StatusText(405), api.CodeMethodNotAllowed, "GET, HEAD"},
		{"empty id", "GET", "/entries/", "", nil, 404, http.StatusText(404), api.CodeNoSuchRoute, ""},
		{"unknown resource under an entry", "GET", "/entries/" + unknownID + "/receipt", "", nil, 404, http.StatusText(404), api.CodeNoSuchRoute, ""},
		{"deep unknown path", "GET", "/entries/a/b/c", "", nil, 404, http.StatusText(404), api.CodeNoSuchRoute, ""},
		// Transparency Service Keys (sections 2.1 and 2.2).
		{"kid not base64url", "GET", "/.well-known/scitt-keys/zz", "", nil, 400, server.TitleMalformed, api.CodeBadKid, ""},
		{"unknown kid", "GET", "/.well-known/scitt-keys/" + unknownKid, "", nil, 404, server.TitleNoSuchKey, api.CodeNotFound, ""},
		{"POST the key set", "POST", "/.well-known/scitt-keys", "", nil, 405, http.StatusText(405), api.CodeMethodNotAllowed, "GET, HEAD"},
		{"unknown path under the keys", "GET", "/.well-known/scitt-keys/a/b", "", nil, 404, http.StatusText(404), api.CodeNoSuchRoute, ""},
		{"keys query that does not parse", "GET", "/.well-known/scitt-keys?a;b", "", nil, 400, server.TitleMalformed, api.CodeBadQuery, ""},
		// Earlier drafts' transparency configuration, which -11 does not define.
		{"transparency configuration", "GET", "/.well-known/transparency-configuration", "", nil, 404, http.StatusText(404), api.CodeNoSuchRoute, ""},
		{"POST transparency configuration", "POST", "/.well-known/transparency-configuration", "", nil, 404, http.StatusText(404), api.CodeNoSuchRoute, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := do(t, plain, tc.method, e.base+tc.path, tc.contentType, tc.body)
			if a.code != tc.status {
				t.Fatalf("%s %s: %d, want %d: %q", tc.method, tc.path, a.code, tc.status, a.body)
			}
			if ct := a.header.Get("Content-Type"); ct != server.ConciseProblemType {
				t.Fatalf("Content-Type %q, want %s: %q", ct, server.ConciseProblemType, a.body)
			}
			// RFC 9290: a CBOR map with title -1 and detail -2 (text), instance -3.
			var m map[any]any
			if err := cbor.Unmarshal(a.body, &m); err != nil {
				t.Fatalf("not a CBOR map: %v (%x)", err, a.body)
			}
			title, _ := m[int64(-1)].(string)
			detail, _ := m[int64(-2)].(string)
			instance, _ := m[int64(-3)].(string)
			if title != tc.title || detail == "" || instance != strings.SplitN(tc.path, "?", 2)[0] {
				t.Errorf("title %q (want %q), detail %q, instance %q", title, tc.title, detail, instance)
			}
			p, err := api.ParseConciseProblem(a.body)
			if err != nil || p.Code != string(tc.code) {
				t.Errorf("problem %+v, %v: want code %s", p, err, tc.code)
			}
			if got := a.header.Get("Allow"); got != tc.allow {
				t.Errorf("Allow %q, want %q", got, tc.allow)
			}
		})
	}

	// A path that only starts like a SCRAPI one is not under it: the API's problem+json.
	a := do(t, plain, "GET", e.base+"/entriesX", "", nil)
	if a.code != 404 || a.header.Get("Content-Type") != api.MediaProblem {
		t.Errorf("GET /entriesX: %d %s", a.code, a.header.Get("Content-Type"))
	}
}

// detach returns the COSE_Sign1 statement with its payload replaced by nil (detached).
func detach(t *testing.T, statement []byte) []byte {
	t.Helper()
	var tag cbor.Tag
	if err := cbor.Unmarshal(statement, &tag); err != nil {
		t.Fatal(err)
	}
	arr, ok := tag.Content.([]any)
	if !ok || len(arr) != 4 {
		t.Fatalf("not a COSE_Sign1: %T", tag.Content)
	}
	arr[2] = nil
	b, err := cbor.Marshal(cbor.Tag{Number: tag.Number, Content: arr})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
