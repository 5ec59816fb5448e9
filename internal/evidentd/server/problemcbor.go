package server

import (
	"net/http"

	"github.com/fxamacker/cbor/v2"

	"github.com/evident-log/evident/api"
)

// ConciseProblemType is the media type of RFC 9290 concise problem details, which SCRAPI
// uses for its errors.
const ConciseProblemType = api.MediaConciseProblem

// RFC 9290 standard problem detail keys.
const (
	cpdTitle    = -1
	cpdDetail   = -2
	cpdInstance = -3
)

// ProblemExtension is the custom problem detail entry key (RFC 9290 section 2.1: a URI
// naming a map) under which Evident puts its stable error code: {"code": "<code>"}.
const ProblemExtension = "urn:evident:problem"

// ConciseProblem is a decoded RFC 9290 problem detail as Evident writes it.
type ConciseProblem struct {
	Title    string
	Detail   string
	Instance string
	Code     string
}

// conciseProblem writes an RFC 9290 concise problem detail.
func conciseProblem(w http.ResponseWriter, status int, code api.ProblemCode, detail, instance string) {
	m := map[any]any{
		cpdTitle:         http.StatusText(status),
		cpdDetail:        detail,
		ProblemExtension: map[string]any{"code": string(code)},
	}
	if instance != "" {
		m[cpdInstance] = instance
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
		case int64(cpdTitle):
			p.Title = s
		case int64(cpdDetail):
			p.Detail = s
		case int64(cpdInstance):
			p.Instance = s
		case ProblemExtension:
			if ext, ok := v.(map[any]any); ok {
				p.Code, _ = ext["code"].(string)
			}
		}
	}
	return p, nil
}

var cborEnc = func() cbor.EncMode {
	em, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		panic(err)
	}
	return em
}()
