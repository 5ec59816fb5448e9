package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/evident-log/evident/api"
)

// TestOpenAPIMatchesRoutes: every route of the table is described in api/openapi.json, and
// every described path and method is served by a route of the table, as the real
// http.ServeMux resolves it.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(api.OpenAPI(), &doc); err != nil {
		t.Fatalf("api/openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	mux := http.NewServeMux()
	table := map[string]bool{}
	for _, rt := range routes() {
		if table[rt.pattern] {
			t.Errorf("route %q twice in the table", rt.pattern)
		}
		table[rt.pattern] = true
		mux.Handle(rt.pattern, http.NotFoundHandler())
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	described := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			switch method {
			case "get", "post", "put", "delete", "patch", "head", "options":
			default:
				continue // parameters, summary: not operations
			}
			m := strings.ToUpper(method)
			req := httptest.NewRequest(m, param.ReplaceAllString(path, "x1"), nil)
			_, pattern := mux.Handler(req)
			if pattern == "" {
				t.Errorf("described %s %s is not served by any route", m, path)
				continue
			}
			if !strings.HasPrefix(pattern, m+" ") {
				t.Errorf("described %s %s resolves to %q", m, path, pattern)
			}
			described[pattern] = true
		}
	}
	for p := range table {
		if !described[p] {
			t.Errorf("route %q is not described in api/openapi.json", p)
		}
	}
	if !slices.ContainsFunc(routes(), func(r route) bool { return r.pattern == "GET /v1/openapi.json" }) {
		t.Error("the description is not served")
	}
}
