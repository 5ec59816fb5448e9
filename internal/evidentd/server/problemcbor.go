package server

import (
	"net/http"
	"strings"

	"github.com/fxamacker/cbor/v2"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/echo"
)

// ConciseProblemType is the media type of RFC 9290 concise problem details, which SCRAPI
// uses for its errors.
const ConciseProblemType = api.MediaConciseProblem

// Titles of the concise problem details draft-ietf-scitt-scrapi-11 defines. The draft's
// section 2 makes every 4xx and 5xx answer of a SCRAPI resource a concise problem detail
// with a short title and a detail, and gives these titles to the errors it names; an error
// the draft does not name is titled with its status's reason phrase.
const (
	// TitleMalformed is section 2's "malformed" error type: the request could not be
	// parsed (a signed statement that is not a COSE_Sign1, a body cut short).
	TitleMalformed = "Malformed request"
	// TitleBadAlgorithm is section 2.3.3's error for a statement signed with an
	// algorithm the service does not accept.
	TitleBadAlgorithm = "Bad Signature Algorithm"
	// TitlePayloadMissing is section 2.3.3's error for a statement without payload.
	TitlePayloadMissing = "Payload Missing"
	// TitleRejected is section 2.3.3's error for a statement the registration policy in
	// force does not accept.
	TitleRejected = "Rejected"
	// TitleInvalidLocator is section 2.3.3's error for a locator (EntryID) that is not in
	// a valid form.
	TitleInvalidLocator = "Invalid locator"
	// TitleNotFound is section 2.4's error for an EntryID with no receipt.
	TitleNotFound = "Not Found"
	// TitleNoSuchKey is section 2.2's error for a kid that names no service key.
	TitleNoSuchKey = "No such key"
)

// ConciseTitle is the title of a concise problem detail with this status and code: the
// draft's title for the errors it defines, the status's reason phrase otherwise.
func ConciseTitle(status int, code api.ProblemCode) string {
	switch code {
	case api.CodeMalformedStatement, api.CodeBadBody, api.CodeBadQuery, api.CodeBadKid:
		if status == http.StatusBadRequest {
			return TitleMalformed
		}
	case api.CodeAlgorithmNotAllowed:
		return TitleBadAlgorithm
	case api.CodeDetachedPayload:
		return TitlePayloadMissing
	case api.CodeUnknownIssuer, api.CodeUnknownKey, api.CodeNoRegistrationPolicy, api.CodeContentTypeNotAllowed,
		api.CodeMissingClaim, api.CodeBadSignature, api.CodeBadX5Chain:
		return TitleRejected
	case api.CodeBadID:
		return TitleInvalidLocator
	}
	return http.StatusText(status)
}

// conciseProblem writes an RFC 9290 concise problem detail titled as ConciseTitle says.
// instance is the request's path, which the client chose: it is bounded as every echo of
// the client's input is (echo.String), and the detail as a JSON problem's is (maxDetail).
func conciseProblem(w http.ResponseWriter, status int, code api.ProblemCode, detail, instance string) {
	conciseProblemTitled(w, status, ConciseTitle(status, code), code, detail, instance)
}

// conciseProblemTitled writes an RFC 9290 concise problem detail with the given title.
func conciseProblemTitled(w http.ResponseWriter, status int, title string, code api.ProblemCode, detail, instance string) {
	retryable(w, status)
	m := map[any]any{
		api.CPDTitle:         title,
		api.CPDDetail:        echo.Cut(detail, maxDetail),
		api.ProblemExtension: map[string]any{"code": string(code)},
	}
	if instance != "" {
		m[api.CPDInstance] = echo.String(instance)
	}
	b, err := cborEnc.Marshal(m)
	if err != nil {
		http.Error(w, detail, status)
		return
	}
	w.Header().Set("Content-Type", ConciseProblemType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b)
}

var cborEnc = func() cbor.EncMode {
	em, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		panic(err)
	}
	return em
}()

// conciseRoute reports whether a route answers its problems as RFC 9290 concise problem
// details (the SCITT surface and the consistency proofs, docs/errors.md) rather than as
// problem+json.
func conciseRoute(pattern string) bool {
	_, path, _ := strings.Cut(pattern, " ")
	return scittPath(path) || strings.HasSuffix(path, "/consistency")
}

// scittPath reports whether a request path lies under a SCRAPI resource: /entries and
// everything below it, /.well-known/scitt-keys and below, and the transparency
// configuration of earlier drafts. Every answer there that is an error is a concise
// problem detail, also when no route matches the path or the method.
func scittPath(path string) bool {
	for _, p := range []string{"/entries", "/.well-known/scitt-keys", "/.well-known/transparency-configuration"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// scittUnmatched answers, as a concise problem detail, a request under a SCRAPI path
// (scittPath) that no route matched: 405 with allow as the Allow header when the mux
// reported status 405, 404 otherwise. It reports false, writing nothing, for any other
// path.
func scittUnmatched(w http.ResponseWriter, r *http.Request, status int, allow string) bool {
	if !scittPath(r.URL.Path) {
		return false
	}
	if status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", allow)
		conciseProblem(w, http.StatusMethodNotAllowed, api.CodeMethodNotAllowed,
			echo.String(r.Method)+" is not served on "+echo.String(r.URL.Path)+"; allowed: "+allow, r.URL.Path)
		return true
	}
	detail := "no SCRAPI resource " + echo.String(r.URL.Path)
	switch {
	case strings.HasPrefix(r.URL.Path, "/.well-known/transparency-configuration"):
		detail += ": draft-ietf-scitt-scrapi-11 defines no transparency configuration; the service keys are at /.well-known/scitt-keys"
	case strings.HasPrefix(r.URL.Path, "/entries"):
		detail += ": a registration is GET /entries/{id} (64 hex digits), its transparent statement GET /entries/{id}/statement"
	}
	conciseProblem(w, http.StatusNotFound, api.CodeNoSuchRoute, detail, r.URL.Path)
	return true
}
