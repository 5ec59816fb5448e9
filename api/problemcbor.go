package api

import "github.com/fxamacker/cbor/v2"

// RFC 9290 standard concise problem detail keys.
const (
	CPDTitle    = -1
	CPDDetail   = -2
	CPDInstance = -3
)

// ProblemExtension is the custom problem detail entry key (RFC 9290 section 2.1: a URI
// naming a map) under which Evident puts its stable error code: {"code": "<code>"}.
const ProblemExtension = "urn:evident:problem"

// ConciseProblem is a decoded RFC 9290 concise problem detail as evidentd writes it on the
// SCRAPI surface.
type ConciseProblem struct {
	Title    string
	Detail   string
	Instance string
	Code     string // the ProblemCode
}

// ParseConciseProblem decodes a concise problem detail body.
func ParseConciseProblem(b []byte) (ConciseProblem, error) {
	var m map[any]any
	if err := cbor.Unmarshal(b, &m); err != nil {
		return ConciseProblem{}, err
	}
	var p ConciseProblem
	for k, v := range m {
		s, _ := v.(string)
		switch k {
		case int64(CPDTitle):
			p.Title = s
		case int64(CPDDetail):
			p.Detail = s
		case int64(CPDInstance):
			p.Instance = s
		case ProblemExtension:
			if ext, ok := v.(map[any]any); ok {
				p.Code, _ = ext["code"].(string)
			}
		}
	}
	return p, nil
}
