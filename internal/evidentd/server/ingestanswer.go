package server

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/evident-log/evident/api"
)

// writeIngestAnswer writes the answer to an accepted ingest request: the same headers and
// the same bytes as writeJSON(w, status, *out), built by appendIngestResponse instead of
// encoding/json's reflection and re-indentation, which cost more than the rest of the
// handler around the pipeline on a single-envelope request.
func writeIngestAnswer(w http.ResponseWriter, status int, out *api.IngestResponse) {
	w.Header().Set("Content-Type", api.MediaJSON)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(appendIngestResponse(make([]byte, 0, 160+256*len(out.Accepted)), out))
}

// appendIngestResponse appends r to dst as encoding/json's Encoder with SetIndent("", "  ")
// writes it, final newline included; TestIngestAnswerMatchesEncodingJSON and
// FuzzIngestAnswer hold the two to the same bytes.
func appendIngestResponse(dst []byte, r *api.IngestResponse) []byte {
	dst = append(dst, "{\n  \"chain\": "...)
	dst = appendJSONString(dst, r.Chain)
	dst = append(dst, ",\n  \"accepted\": "...)
	switch {
	case r.Accepted == nil:
		dst = append(dst, "null"...)
	case len(r.Accepted) == 0:
		dst = append(dst, "[]"...)
	default:
		dst = append(dst, '[')
		for i := range r.Accepted {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendAcceptedEntry(dst, &r.Accepted[i])
		}
		dst = append(dst, "\n  ]"...)
	}
	dst = append(dst, ",\n  \"size\": "...)
	dst = strconv.AppendUint(dst, r.Size, 10)
	dst = append(dst, ",\n  \"head\": \""...)
	dst, _ = r.Head.AppendText(dst) // "sha256:" and hex digits: nothing to escape
	return append(dst, "\"\n}\n"...)
}

// appendAcceptedEntry appends one element of the accepted array, indented at its depth.
func appendAcceptedEntry(dst []byte, e *api.AcceptedEntry) []byte {
	dst = append(dst, "\n    {\n      \"seq\": "...)
	dst = strconv.AppendUint(dst, e.Seq, 10)
	dst = append(dst, ",\n      \"prev\": \""...)
	dst, _ = e.Prev.AppendText(dst)
	dst = append(dst, "\",\n      \"link\": \""...)
	dst, _ = e.Link.AppendText(dst)
	dst = append(dst, "\",\n      \"arrival\": "...)
	dst = appendJSONString(dst, e.Arrival)
	if e.Duplicate {
		dst = append(dst, ",\n      \"duplicate\": true"...)
	}
	return append(dst, "\n    }"...)
}

// appendJSONString appends s as a JSON string the way encoding/json writes it (HTML
// characters escaped). A string of printable ASCII needing no escape — every chain id
// evidentd accepts without '"', '<', '>' or '&', and every arrival time — is copied between
// quotes; any other is left to encoding/json.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always encodes
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
