package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestQueryBool: the one parser of boolean query parameters takes true/1 and false/0, given
// once, and nothing else; an absent parameter is the default.
func TestQueryBool(t *testing.T) {
	for _, tc := range []struct {
		query   string
		def     bool
		want    bool
		refused bool
	}{
		{"", false, false, false},
		{"", true, true, false},
		{"other=1", false, false, false},
		{"close=true", false, true, false},
		{"close=1", false, true, false},
		{"close=false", true, false, false},
		{"close=0", true, false, false},
		{"close=maybe", false, false, true},
		{"close=", false, false, true},
		{"close", false, false, true},
		{"close=TRUE", false, false, true},
		{"close=True", false, false, true},
		{"close=yes", false, false, true},
		{"close=on", false, false, true},
		{"close=01", false, false, true},
		{"close=%20true", false, false, true},
		{"close=true&close=true", false, false, true},
		{"close=true&close=false", false, false, true},
	} {
		t.Run(tc.query, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/v1/chains/c/seal?"+tc.query, nil)
			got, err := queryBool(r, "close", tc.def)
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), "close") {
					t.Fatalf("%q: %v, %v; want a refusal naming the parameter", tc.query, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("%q: %v, %v; want %v", tc.query, got, err, tc.want)
			}
		})
	}
}

// TestMediaTypeOf: a body route takes its types with any parameters (a UTF-8 charset) and in
// any case, and a body without Content-Type as its default; anything else is refused naming
// the types it takes.
func TestMediaTypeOf(t *testing.T) {
	for _, tc := range []struct {
		contentType string
		types       []string
		taken       bool
	}{
		{"", ingestTypes, true},
		{"application/json", ingestTypes, true},
		{"application/jsonl", ingestTypes, true},
		{"application/x-ndjson", ingestTypes, true},
		{"application/json; charset=utf-8", ingestTypes, true},
		{"application/json;charset=UTF-8", ingestTypes, true},
		{"APPLICATION/JSONL; CHARSET=utf-8", ingestTypes, true},
		{"application/json; version=2", ingestTypes, true},
		{"application/jsonl", evidenceHeadTypes, false},
		{"text/plain", ingestTypes, false},
		{"text/plain; charset=utf-8", evidenceHeadTypes, false},
		{"application/x-www-form-urlencoded", ingestTypes, false},
		{"application/json; charset=utf-16", ingestTypes, false},
		{"application/json; charset=", ingestTypes, false},
		{"application/json;;", ingestTypes, false},
		{"application/", ingestTypes, false},
		{"application/json+x", ingestTypes, false},
		{"*/*", ingestTypes, false},
	} {
		t.Run(tc.contentType, func(t *testing.T) {
			err := mediaTypeOf(tc.contentType, tc.types)
			if tc.taken != (err == nil) {
				t.Fatalf("%q: %v, want taken %v", tc.contentType, err, tc.taken)
			}
			if err == nil {
				return
			}
			for _, mt := range tc.types {
				if !strings.Contains(err.Error(), mt) {
					t.Errorf("%q: the refusal does not name %s: %v", tc.contentType, mt, err)
				}
			}
		})
	}
}
