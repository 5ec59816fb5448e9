package api

import (
	_ "embed"
	"slices"
)

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI 3.1 description of evidentd's HTTP API (api/openapi.json),
// served at GET /v1/openapi.json. A test keeps it equal to the routes evidentd registers.
func OpenAPI() []byte { return slices.Clone(openAPI) }
