package server

import (
	"crypto"
	"crypto/ed25519"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/ledger/profile"
	"github.com/evident-log/evident/ledger/profile/service"
)

// TestOpenAPIMatchesRoutes: every route of the table is described in api/openapi.json, and
// every described path and method is served by a route of the table, as the real
// http.ServeMux resolves it.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	desc, all := described(t)
	if err := json.Unmarshal(desc, &doc); err != nil {
		t.Fatalf("api/openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	mux := http.NewServeMux()
	table := map[string]bool{}
	for _, rt := range all {
		if table[rt.pattern] {
			t.Errorf("route %q twice in the table", rt.pattern)
		}
		if method, _, _ := strings.Cut(rt.pattern, " "); method != strings.ToUpper(method) || strings.HasPrefix(rt.pattern, "/") {
			t.Errorf("route %q does not start with its method (observe tells the mux's redirects by it)", rt.pattern)
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

// described returns the description evidentd serves with the served profiles' extensions,
// and every route it serves: its own and theirs.
func described(t *testing.T) ([]byte, []route) {
	t.Helper()
	exts, err := profile.Default().Open(func(profile.Provider) (service.Env, error) {
		return service.Env{Origin: "example.org/log", Key: func(string) (crypto.Signer, error) {
			_, k, err := ed25519.GenerateKey(nil)
			return k, err
		}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(exts) == 0 {
		t.Fatal("no profile extends evidentd: the extension routes go untested")
	}
	if err := CheckExtensions(exts); err != nil {
		t.Fatal(err)
	}
	desc, err := Describe(exts)
	if err != nil {
		t.Fatal(err)
	}
	return desc, append(routes(), extensionRoutes(exts)...)
}

// bodyTypes are the media types each route that takes a body reads it under (consumes, and
// the SCRAPI registration's own check); every other route takes none.
var bodyTypes = map[string][]string{
	ingestRoute:                             ingestTypes,
	"POST /v1/chains/{chain}/evidence-head": evidenceHeadTypes,
	"POST /entries":                         {COSEType, LegacyStatementType},
}

// operation is what TestOpenAPIAnswers reads of an operation of api/openapi.json.
type operation struct {
	OperationID string                     `json:"operationId"`
	Security    *[]map[string][]string     `json:"security"`
	Responses   map[string]json.RawMessage `json:"responses"`
	RequestBody *struct {
		Content map[string]json.RawMessage `json:"content"`
	} `json:"requestBody"`
}

// TestOpenAPIAnswers: the description tells the answers the routes give. Every operation has
// a unique operationId; every problem it lists is in its route family's format (problem+json,
// or concise CBOR on the SCRAPI routes); every route lists 400 (a query that does not parse is
// bad_query on all of them); a route that takes a body lists exactly the media types it reads
// and 415; a write lists its security, 401 and 403, and a read none; the writes that are safe
// to resend list 200 beside 201.
func TestOpenAPIAnswers(t *testing.T) {
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Responses map[string]struct {
				Content map[string]json.RawMessage `json:"content"`
			} `json:"responses"`
		} `json:"components"`
	}
	desc, all := described(t)
	if err := json.Unmarshal(desc, &doc); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, rt := range all {
		mux.Handle(rt.pattern, http.NotFoundHandler())
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	ids := map[string]string{}
	for path, item := range doc.Paths {
		for method, raw := range item {
			if method != "get" && method != "post" {
				continue
			}
			var op operation
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			_, pattern := mux.Handler(httptest.NewRequest(strings.ToUpper(method), param.ReplaceAllString(path, "x1"), nil))
			name := strings.ToUpper(method) + " " + path
			if op.OperationID == "" {
				t.Errorf("%s: no operationId", name)
			} else if other, ok := ids[op.OperationID]; ok {
				t.Errorf("%s: operationId %q is %s's too", name, op.OperationID, other)
			}
			ids[op.OperationID] = name
			problemType := api.MediaProblem
			if conciseRoute(pattern) {
				problemType = api.MediaConciseProblem
			}
			for status, r := range op.Responses {
				if status != "default" && status < "400" {
					continue
				}
				var resp struct {
					Ref     string                     `json:"$ref"`
					Content map[string]json.RawMessage `json:"content"`
				}
				if err := json.Unmarshal(r, &resp); err != nil {
					t.Fatal(err)
				}
				content := resp.Content
				if ref, ok := strings.CutPrefix(resp.Ref, "#/components/responses/"); ok {
					content = doc.Components.Responses[ref].Content
				}
				if got := slices.Collect(maps.Keys(content)); !slices.Equal(got, []string{problemType}) {
					t.Errorf("%s: %s answers %v, want %s", name, status, got, problemType)
				}
			}
			if _, ok := op.Responses["400"]; !ok {
				t.Errorf("%s: no 400 (bad_query)", name)
			}
			takes, hasBody := bodyTypes[pattern]
			switch {
			case hasBody != (op.RequestBody != nil):
				t.Errorf("%s: requestBody %v, but the route takes a body: %v", name, op.RequestBody != nil, hasBody)
			case hasBody:
				if got := slices.Sorted(maps.Keys(op.RequestBody.Content)); !slices.Equal(got, slices.Sorted(slices.Values(takes))) {
					t.Errorf("%s: requestBody %v, the route takes %v", name, got, takes)
				}
				if _, ok := op.Responses["415"]; !ok {
					t.Errorf("%s: no 415", name)
				}
			}
			write := strings.HasPrefix(pattern, "POST /v1/chains/")
			if op.Security == nil || (len(*op.Security) > 0) != write {
				t.Errorf("%s: security %v, write %v", name, op.Security, write)
			}
			_, lists401 := op.Responses["401"]
			_, lists403 := op.Responses["403"]
			if lists401 != write || (write && !lists403) {
				t.Errorf("%s: lists 401 %v, 403 %v; write %v", name, lists401, lists403, write)
			}
			if pattern == ingestRoute || pattern == "POST /v1/chains/{chain}/seal" {
				for _, status := range []string{"200", "201"} {
					if _, ok := op.Responses[status]; !ok {
						t.Errorf("%s: no %s", name, status)
					}
				}
			}
		}
	}
}
