package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/echo"
	"github.com/evident-log/evident/ledger/profile"
	"github.com/evident-log/evident/ledger/profile/service"
)

// chainRoutePrefix starts the pattern of every route below a chain.
const chainRoutePrefix = "GET /v1/chains/{chain}/"

// extensionRoutes returns the routes the profiles' extensions add (ledger/profile/service):
// each served below its chain, for the chains of its profile.
func extensionRoutes(exts []profile.Extension) []route {
	var out []route
	for _, ext := range exts {
		for _, rt := range ext.Routes() {
			out = append(out, route{chainRoutePrefix + rt.Path, read(extensionHandler(ext.Profile, rt)), nil})
		}
	}
	return out
}

// CheckExtensions reports an extension route that would take the place of one of evidentd's
// own routes.
func CheckExtensions(exts []profile.Extension) error {
	own := map[string]bool{}
	for _, rt := range routes() {
		own[rt.pattern] = true
	}
	for _, rt := range extensionRoutes(exts) {
		if own[rt.pattern] {
			return fmt.Errorf("%w: route %q is one of evidentd's own", service.ErrDeclaration, rt.pattern)
		}
	}
	return nil
}

// extensionHandler serves a profile's route: the chain's head first (so the route sees the
// chain up to the size it had when the request came; a chain of another profile is answered
// 404 with the route's WrongProfile code), then the route's own answer. An error before the
// first byte is answered as a problem (s.fail); after it, it cuts the answer short, which
// its reader detects (the records end early).
func extensionHandler(prof string, rt service.Route) handlerMethod {
	return func(s *Server, w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("chain")
		h, err := s.c.Pipeline.Head(r.Context(), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if h.Profile != prof {
			problem(w, http.StatusNotFound, api.ProblemCode(rt.WrongProfile),
				fmt.Sprintf("chain %s is a %s chain; …/%s is served for %s chains only", echo.Quote(id), h.Profile, rt.Path, prof), -1)
			return
		}
		c := s.ex.Chain(id, h.Profile, h.Size)
		lw := &lazyWriter{w: w, contentType: rt.ContentType}
		switch err := rt.Serve(r.Context(), c, lw); {
		case err == nil:
			if !lw.started {
				lw.start()
			}
		case lw.started:
			s.streamFailed(r, rt.Path+" failed", "chain", id, "err", err)
		default:
			s.fail(w, r, err)
		}
	}
}

// lazyWriter sends the success headers with the first byte, so that a route can still
// answer a problem until it writes.
type lazyWriter struct {
	w           http.ResponseWriter
	contentType string
	started     bool
}

func (l *lazyWriter) start() {
	l.started = true
	l.w.Header().Set("Content-Type", l.contentType)
	l.w.Header().Set("Cache-Control", "no-store")
	l.w.WriteHeader(http.StatusOK)
}

func (l *lazyWriter) Write(p []byte) (int, error) {
	if !l.started {
		l.start()
	}
	return l.w.Write(p)
}

// Describe returns the OpenAPI description evidentd serves at GET /v1/openapi.json: its own
// routes (api/openapi.json) with the extensions' routes added.
func Describe(exts []profile.Extension) ([]byte, error) {
	own := api.OpenAPI()
	if len(exts) == 0 {
		return own, nil
	}
	var doc map[string]any
	if err := json.Unmarshal(own, &doc); err != nil {
		return nil, fmt.Errorf("api/openapi.json: %w", err)
	}
	paths, ok := doc["paths"].(map[string]any)
	if !ok {
		return nil, errors.New("api/openapi.json: no paths")
	}
	for _, ext := range exts {
		for _, rt := range ext.Routes() {
			ref := func(name string) map[string]any { return map[string]any{"$ref": "#/components/responses/" + name} }
			paths["/v1/chains/{chain}/"+rt.Path] = map[string]any{"get": map[string]any{
				"operationId": rt.OperationID,
				"summary":     rt.Summary,
				"responses": map[string]any{
					"200":     map[string]any{"description": rt.Summary, "content": map[string]any{rt.ContentType: map[string]any{"schema": map[string]any{"type": "string"}}}},
					"400":     ref("BadRequest"),
					"404":     ref("NotFound"),
					"default": ref("Problem"),
				},
				"parameters": []any{map[string]any{"$ref": "#/components/parameters/chain"}},
				"tags":       []any{"chains"},
				"security":   []any{},
			}}
		}
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}
