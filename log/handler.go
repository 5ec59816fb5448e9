package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

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

// Handler returns a read-only http.Handler for the C2SP tlog-tiles read API of the log,
// the same on both drivers:
//
//	GET /checkpoint                     text/plain; charset=utf-8, no-cache
//	GET /tile/<L>/<N>[.p/<W>]           application/octet-stream
//	GET /tile/entries/<N>[.p/<W>]       application/octet-stream
//
// Full tiles/bundles are served as immutable; partial ones with a short max-age; a
// missing one is a 404 with no-store. HEAD, conditional and range requests are
// supported; other methods get 405. Request paths are parsed into integers and
// re-encoded with Tessera's layout package, and only a path that round-trips exactly is
// read, so nothing else in the log directory or bucket (the .state dir, keys, "..",
// encoded or doubled slashes) can be reached.
//
// On POSIX the files come from the log directory; on the AWS driver from the bucket
// (which any tlog-tiles client may also read directly), and an object store that does
// not answer is a 502.
//
// Mount it with http.StripPrefix, e.g.
// mux.Handle("/log/", http.StripPrefix("/log", l.Handler())).
func (l *Log) Handler() http.Handler {
	return tilesHandler{tiles: l.tiles}
}

// tileStore is where a driver keeps the log under its C2SP tlog-tiles names: the log
// directory (POSIX) or the bucket (AWS). Handler serves either, and Open reads the
// published checkpoint through it.
type tileStore interface {
	// read returns the object at rel, a canonical tlog-tiles path (resolveTilesPath),
	// and when it last changed (zero when unknown). A missing object is an error wrapping
	// fs.ErrNotExist; a store that did not answer, one wrapping errUnavailable.
	read(ctx context.Context, rel string) ([]byte, time.Time, error)
}

// errUnavailable marks a tileStore that did not answer (the object store is down or
// refused), as opposed to a missing object.
var errUnavailable = errors.New("tile store unavailable")

// dirStore is the log directory of Tessera's POSIX driver.
type dirStore string

func (d dirStore) read(_ context.Context, rel string) ([]byte, time.Time, error) {
	f, err := os.Open(filepath.Join(string(d), filepath.FromSlash(rel)))
	if err != nil {
		return nil, time.Time{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file: %w", rel, fs.ErrNotExist)
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, time.Time{}, err
	}
	return b, fi.ModTime(), nil
}

// tilesHandler serves the tlog-tiles read API from a tileStore.
type tilesHandler struct {
	tiles tileStore
}

func (h tilesHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	b, modTime, err := h.tiles.read(r.Context(), rel)
	if err != nil {
		w.Header().Set("Cache-Control", cacheMissing)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			http.NotFound(w, r)
		case errors.Is(err, errUnavailable):
			http.Error(w, "object store unavailable", http.StatusBadGateway)
		default:
			http.Error(w, "internal error", http.StatusInternalServerError)
		}
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", cacheControl)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", modTime, bytes.NewReader(b))
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
