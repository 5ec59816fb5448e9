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

// conciseProblem writes an RFC 9290 concise problem detail. instance is the request's path,
// which the client chose: it is bounded as every echo of the client's input is (echo.String),
// and the detail as a JSON problem's is (maxDetail).
func conciseProblem(w http.ResponseWriter, status int, code api.ProblemCode, detail, instance string) {
	retryable(w, status)
	m := map[any]any{
		api.CPDTitle:         http.StatusText(status),
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
	return strings.HasPrefix(path, "/entries") || strings.HasPrefix(path, "/.well-known/scitt-keys") || strings.HasSuffix(path, "/consistency")
}
