package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/evident-log/evident/api"
)

func TestConciseProblemRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		status                  int
		code, detail, in, title string
	}{
		{http.StatusForbidden, "unknown_issuer", "issuer \"x\" is not in the registration policy", "/entries", TitleRejected},
		{http.StatusBadRequest, "bad_signature", "the signature does not verify", "", TitleRejected},
		{http.StatusBadRequest, "malformed_statement", "not a COSE_Sign1", "/entries", TitleMalformed},
		{http.StatusBadRequest, "algorithm_not_allowed", "ES512 is not allowed", "/entries", TitleBadAlgorithm},
		{http.StatusBadRequest, "detached_payload", "the payload is detached", "/entries", TitlePayloadMissing},
		{http.StatusBadRequest, "bad_id", "not 64 hex digits", "/entries/x", TitleInvalidLocator},
		{http.StatusNotFound, "not_found", "no registration", "/entries/00", TitleNotFound},
		{http.StatusRequestEntityTooLarge, "statement_too_large", "over 65536 bytes", "/entries", http.StatusText(http.StatusRequestEntityTooLarge)},
		{http.StatusServiceUnavailable, "pushback", "the log is busy", "/entries", http.StatusText(http.StatusServiceUnavailable)},
	} {
		rec := httptest.NewRecorder()
		conciseProblem(rec, tc.status, api.ProblemCode(tc.code), tc.detail, tc.in)
		if rec.Code != tc.status || rec.Header().Get("Content-Type") != ConciseProblemType {
			t.Fatalf("%d %s", rec.Code, rec.Header().Get("Content-Type"))
		}
		p, err := api.ParseConciseProblem(rec.Body.Bytes())
		if err != nil || p.Code != tc.code || p.Detail != tc.detail || p.Title != tc.title || p.Instance != tc.in {
			t.Fatalf("%+v, %v", p, err)
		}
		// RFC 9290: title is key -1 and detail key -2 (0x20, 0x21 as CBOR negative integers).
		b := rec.Body.Bytes()
		if b[0]&0xe0 != 0xa0 {
			t.Fatalf("not a CBOR map: %x", b[:4])
		}
	}
}

func FuzzParseConciseProblem(f *testing.F) {
	rec := httptest.NewRecorder()
	conciseProblem(rec, 400, "bad_signature", "detail", "/entries")
	f.Add(rec.Body.Bytes())
	f.Add([]byte{0xa0})
	f.Fuzz(func(t *testing.T, data []byte) {
		api.ParseConciseProblem(data) // must not panic
	})
}
