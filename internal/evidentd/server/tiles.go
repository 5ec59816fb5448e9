package server

import (
	"net/http"
	"strings"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/echo"
)

// tilesPrefix is where the log's C2SP tlog-tiles read API is mounted.
const tilesPrefix = "/log"

// handleTiles serves the log's tiles, entry bundles and checkpoint (log.Log.Handler)
// under /log/, with its refusals as problem details like every other route's: the tile
// handler answers them in plain text (http.NotFound, http.Error).
func (s *Server) handleTiles() http.Handler {
	return problemsOf(http.StripPrefix(tilesPrefix, s.c.Service.Log().Handler()), tileProblem)
}

// problemsOf serves h, a handler of another package that answers its refusals in plain text,
// with each refusal (a status of 400 or more) answered as a problem detail instead, whose code
// and detail classify gives; what h writes after it is dropped. Its successes (2xx, 3xx: a
// tile, 304 Not Modified) pass through as they are.
func problemsOf(h http.Handler, classify func(status int, method, path string) (api.ProblemCode, string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&problemWriter{ResponseWriter: w, method: r.Method, path: r.URL.Path, classify: classify}, r)
	})
}

// problemWriter is the writer problemsOf gives the handler it wraps.
type problemWriter struct {
	http.ResponseWriter
	method, path string // the request's, as it came (before a StripPrefix)
	classify     func(status int, method, path string) (api.ProblemCode, string)
	refused      bool // a problem was written: the handler's own body is dropped
}

func (p *problemWriter) WriteHeader(status int) {
	switch {
	case p.refused:
	case status < 400:
		p.ResponseWriter.WriteHeader(status)
	default:
		p.refused = true
		p.ResponseWriter.Header().Del("Content-Length") // the handler's, for its own body
		code, detail := p.classify(status, p.method, p.path)
		problem(p.ResponseWriter, status, code, detail, -1)
	}
}

func (p *problemWriter) Write(b []byte) (int, error) {
	if p.refused {
		return len(b), nil
	}
	return p.ResponseWriter.Write(b)
}

// Flush lets a streaming handler flush through the wrapper.
func (p *problemWriter) Flush() {
	if f, ok := p.ResponseWriter.(http.Flusher); ok && !p.refused {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (p *problemWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// tileProblem is the code and detail of a refusal of the tile handler (log.Log.Handler and
// the http.ServeContent it serves through).
func tileProblem(status int, method, path string) (api.ProblemCode, string) {
	p := echo.String(path)
	switch status {
	case http.StatusNotFound:
		if path == tilesPrefix+"/checkpoint" || strings.HasPrefix(path, tilesPrefix+"/tile/") {
			return api.CodeNotFound, "nothing published at " + p + ": a C2SP tlog-tiles path of a tile, entry bundle or checkpoint the log has not published (yet), or not such a path"
		}
		return api.CodeNoSuchRoute, "no route " + echo.String(method) + " " + p + "; the log serves /log/checkpoint and /log/tile/… (C2SP tlog-tiles), see GET /v1/openapi.json"
	case http.StatusMethodNotAllowed:
		return api.CodeMethodNotAllowed, echo.String(method) + " is not served on " + p + "; allowed: GET, HEAD"
	case http.StatusRequestedRangeNotSatisfiable:
		return api.CodeRangeNotSatisfiable, "the Range asked for is not within " + p
	case http.StatusPreconditionFailed:
		return api.CodePreconditionFailed, "a precondition of the request (If-Match, If-Unmodified-Since) does not hold for " + p
	case http.StatusBadGateway:
		return api.CodeLogUnavailable, "the log's object store did not answer for " + p + "; retry later"
	}
	return api.CodeInternal, "internal error; see the service log"
}
