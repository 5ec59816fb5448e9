package server

import (
	"net/http"
	"strings"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/echo"
)

// tilesPrefix is where the log's C2SP tlog-tiles read API is mounted.
const tilesPrefix = "/log"

// handleTiles serves the log's tiles, entry bundles and checkpoint (tilelog.Log.Handler)
// under /log/, with its refusals as problem details like every other route's: the tile
// handler answers them in plain text (http.NotFound, http.Error), which tileProblems turns
// into the documented problem before anything of it is written.
func (s *Server) handleTiles() http.Handler {
	tiles := http.StripPrefix(tilesPrefix, s.c.Service.Log().Handler())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tiles.ServeHTTP(&tileProblems{ResponseWriter: w, path: r.URL.Path, method: r.Method}, r)
	})
}

// tileProblems passes the tile handler's successful answers (2xx, 3xx: a tile, 304 Not
// Modified) through, and answers its refusals as problem details in its place, dropping the
// plain-text body the handler writes after them.
type tileProblems struct {
	http.ResponseWriter
	path, method string // the request's, as it came (before StripPrefix)
	refused      bool   // a problem was written: the handler's own body is dropped
}

func (t *tileProblems) WriteHeader(status int) {
	if status < 400 || t.refused {
		if !t.refused {
			t.ResponseWriter.WriteHeader(status)
		}
		return
	}
	t.refused = true
	h := t.ResponseWriter.Header()
	h.Del("Content-Length") // the handler's, for its own body
	code, detail := tileProblem(status, t.method, t.path)
	problem(t.ResponseWriter, status, code, detail, -1)
}

func (t *tileProblems) Write(b []byte) (int, error) {
	if t.refused {
		return len(b), nil
	}
	return t.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the underlying writer.
func (t *tileProblems) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// tileProblem is the code and detail of a refusal of the tile handler (tilelog.Log.Handler and
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
