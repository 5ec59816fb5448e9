package server

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/echo"
	"github.com/evident-log/evident/internal/evidentd/export"
)

func (s *Server) handleExport(w http.ResponseWriter, r *http.Request) {
	if sel := r.URL.Query().Get("registrations"); sel != "" && !r.URL.Query().Has("chain") {
		s.handleExportRegistrations(w, r, sel) // SCITT registrations (exportscitt.go)
		return
	}
	if q := r.URL.Query(); q.Has("task") || q.Has("logical_id") {
		if ids := q["chain"]; len(ids) != 1 || ids[0] == "" || q.Get("task")+q.Get("logical_id") == "" {
			problem(w, http.StatusBadRequest, api.CodeBadQuery, "a case slice needs one ?chain=<id> and a non-empty task= or logical_id=", -1)
			return
		}
		s.handleSliceExport(w, r, q.Get("chain"), export.Slice{Task: q.Get("task"), LogicalID: q.Get("logical_id")}) // slice.go
		return
	}
	ids := r.URL.Query()["chain"]
	if len(ids) == 0 || slices.Contains(ids, "") {
		problem(w, http.StatusBadRequest, api.CodeBadQuery, "export needs ?chain=<id> (repeat chain= for several chains in one bundle)", -1)
		return
	}
	chain := ids[0]
	reqs := make([]ExportChain, 0, len(ids))
	for _, id := range ids {
		if slices.ContainsFunc(reqs, func(q ExportChain) bool { return q.Chain == id }) {
			problem(w, http.StatusBadRequest, api.CodeBadQuery, fmt.Sprintf("chain %s is named twice", echo.Quote(id)), -1)
			return
		}
		h, err := s.c.Pipeline.Head(r.Context(), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		reqs = append(reqs, ExportChain{Chain: id, Size: h.Size})
	}
	var entries uint64
	for _, q := range reqs {
		entries += q.Size
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", bundle.ChainDir(chain)+".evident.zip"))
	w.Header().Set(api.HeaderEntries, strconv.FormatUint(entries, 10))
	if err := s.ex.Chains(r.Context(), w, reqs); err != nil {
		// Headers are gone; the truncated zip fails to open, which the client notices.
		s.streamFailed(r, "export failed", "chain", chain, "err", err)
		return
	}
	s.m.exports.Add(1)
}

// ExportChain names a chain to export and how many of its entries.
type ExportChain = export.Chain
