package tilelog

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/transparency-dev/tessera/api/layout"
)

// Cache-Control values used by Handler.
const (
	// cacheImmutable is for full tiles and full entry bundles, which never change.
	cacheImmutable = "public, max-age=31536000, immutable"
	// cachePartial is for partial tiles/bundles: their bytes never change for a
	// given width, but they are garbage-collected once the tile fills up.
	cachePartial = "public, max-age=60"
	// cacheCheckpoint: the checkpoint changes every CheckpointInterval.
	cacheCheckpoint = "no-cache"
	// cacheMissing: a tile that does not exist yet may appear soon.
	cacheMissing = "no-store"
)

// Handler returns a read-only http.Handler for the C2SP tlog-tiles read API,
// served from the log directory:
//
//	GET /checkpoint                     text/plain; charset=utf-8, no-cache
//	GET /tile/<L>/<N>[.p/<W>]           application/octet-stream
//	GET /tile/entries/<N>[.p/<W>]       application/octet-stream
//
// Full tiles/bundles are served as immutable; partial ones with a short
// max-age. HEAD is supported; other methods get 405. Request paths are parsed
// into integers and re-encoded with Tessera's layout package, and only a path
// that round-trips exactly is opened, so nothing else in the directory (the
// .state dir, keys, "..", encoded or doubled slashes) can be reached.
//
// Mount it with http.StripPrefix, e.g.
// mux.Handle("/log/", http.StripPrefix("/log", l.Handler())).
//
// On the AWS driver the same paths are proxied from the bucket (which any tlog-tiles
// client may also read directly).
func (l *Log) Handler() http.Handler {
	if l.obj != nil {
		return &bucketHandler{obj: l.obj}
	}
	return &tilesHandler{dir: l.dir}
}

type tilesHandler struct {
	dir string
}

func (h *tilesHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	rel, contentType, cacheControl, ok := resolveTilesPath(r.URL.Path)
	if !ok {
		w.Header().Set("Cache-Control", cacheMissing)
		http.NotFound(w, r)
		return
	}
	f, err := os.Open(filepath.Join(h.dir, filepath.FromSlash(rel)))
	if err != nil {
		w.Header().Set("Cache-Control", cacheMissing)
		if errors.Is(err, fs.ErrNotExist) {
			http.NotFound(w, r)
			return
		}
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		w.Header().Set("Cache-Control", cacheMissing)
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", cacheControl)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

// resolveTilesPath maps a request path to the canonical relative file path,
// or reports !ok. Only paths that equal their own canonical re-encoding are
// accepted.
func resolveTilesPath(p string) (rel, contentType, cacheControl string, ok bool) {
	p = strings.TrimPrefix(p, "/")
	if p == layout.CheckpointPath {
		return layout.CheckpointPath, "text/plain; charset=utf-8", cacheCheckpoint, true
	}
	rest, found := strings.CutPrefix(p, "tile/")
	if !found {
		return "", "", "", false
	}
	level, index, isEntries := "", "", false
	if idx, found := strings.CutPrefix(rest, "entries/"); found {
		index, isEntries = idx, true
	} else {
		var cut bool
		level, index, cut = strings.Cut(rest, "/")
		if !cut {
			return "", "", "", false
		}
	}
	if strings.ContainsAny(index, "\\\x00") {
		return "", "", "", false
	}
	n, w, err := layout.ParseTileIndexPartial(index)
	if err != nil {
		return "", "", "", false
	}
	var canonical string
	if isEntries {
		canonical = layout.EntriesPath(n, w)
	} else {
		lvl, err := layout.ParseTileLevel(level)
		if err != nil {
			return "", "", "", false
		}
		canonical = layout.TilePath(lvl, n, w)
	}
	if canonical != p {
		return "", "", "", false
	}
	cc := cacheImmutable
	if w > 0 {
		cc = cachePartial
	}
	return canonical, "application/octet-stream", cc, true
}
