package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/evidentd/export"
)

// Errors of export.Exporter.Slice the slice handler answers with 4xx.
var (
	ErrSliceProfile  = export.ErrSliceProfile  // not a chap/0.3 chain
	ErrSliceUnsealed = export.ErrSliceUnsealed // no registered seal to prove inclusion against
	ErrSliceEmpty    = export.ErrSliceEmpty    // no sealed entry matches
)

func (s *Server) handleSliceExport(w http.ResponseWriter, r *http.Request, chain string, sl export.Slice) {
	// The bundle streams through a pipe, so that an error found before its first byte
	// (wrong profile, no seal, nothing matches) is still answered with a problem.
	pr, pw := io.Pipe()
	defer pr.Close()
	go func() { pw.CloseWithError(s.ex.Slice(r.Context(), pw, chain, sl)) }()
	first := make([]byte, 1)
	n, err := io.ReadFull(pr, first)
	if err != nil {
		switch {
		case errors.Is(err, ErrSliceProfile), errors.Is(err, ErrSliceEmpty):
			problem(w, http.StatusBadRequest, api.CodeBadQuery, err.Error(), -1)
		case errors.Is(err, ErrSliceUnsealed):
			problem(w, http.StatusConflict, api.CodeNotSealed, err.Error(), -1)
		default:
			s.fail(w, r, err)
		}
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", bundle.ChainDir(chain)+".slice.evident.zip"))
	w.Write(first[:n])
	if _, err := io.Copy(w, pr); err != nil {
		// Headers are gone; the truncated zip fails to open, which the client notices.
		s.streamFailed(r, "slice export failed", "chain", chain, "err", err)
		return
	}
	s.m.exports.Add(1)
}
