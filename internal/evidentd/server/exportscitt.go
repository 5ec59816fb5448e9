package server

import (
	"net/http"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/echo"
	"github.com/evident-log/evident/internal/evidentd/export"
	"github.com/evident-log/evident/internal/evidentd/store"
)

// ErrNoRegistrations is returned by an export of registrations when the ledger store keeps
// no SCRAPI registrations.
var ErrNoRegistrations = export.ErrNoRegistrations

// handleExportRegistrations answers GET /v1/export?registrations=all|<iss>.
func (s *Server) handleExportRegistrations(w http.ResponseWriter, r *http.Request, sel string) {
	if _, ok := s.c.Store.(store.RegistrationLister); !ok {
		problem(w, http.StatusNotFound, api.CodeNotFound, ErrNoRegistrations.Error(), -1)
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", `attachment; filename="scitt-registrations.evident.zip"`)
	if err := s.ex.Registrations(r.Context(), w, sel); err != nil {
		s.streamFailed(r, "export of registrations failed", "selection", echo.String(sel), "err", err)
		return
	}
	s.m.exports.Add(1)
}
