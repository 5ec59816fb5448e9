package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/evident-log/evident/api"
)

// Bounds of GET /v1/chains pages.
const (
	defaultChainsPage = 100
	maxChainsPage     = 1000
)

// handleChains lists chains in id order, a page at a time: ?after= is the last id of the
// previous page (the page's next), ?limit= 1..1000 (default 100).
func (s *Server) handleChains(w http.ResponseWriter, r *http.Request) {
	limit, err := queryUint(r, "limit", defaultChainsPage)
	if err != nil || limit == 0 || limit > maxChainsPage {
		problem(w, http.StatusBadRequest, api.CodeBadQuery, fmt.Sprintf("limit must be 1..%d", maxChainsPage), -1)
		return
	}
	after := r.URL.Query().Get("after")
	if after != "" {
		if err := validChainID(after); err != nil {
			problem(w, http.StatusBadRequest, api.CodeBadQuery, "after: "+err.Error(), -1)
			return
		}
	}
	// One more than the page tells whether a next page exists.
	cs, err := s.c.Store.ListChains(r.Context(), after, int(limit)+1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page := api.ChainsPage{Chains: []api.ChainSummary{}}
	if len(cs) > int(limit) {
		cs = cs[:limit]
		page.Next = cs[len(cs)-1].ID
	}
	for _, c := range cs {
		page.Chains = append(page.Chains, api.ChainSummary{Chain: c.ID, Profile: c.Profile, Size: c.Size, Head: c.Head, Closed: c.Closed,
			LastSeal: c.LastSeal, SealedSize: c.SealedSize, Created: c.Created.UTC().Format(time.RFC3339Nano)})
	}
	writeJSON(w, http.StatusOK, page)
}
