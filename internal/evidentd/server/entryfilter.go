package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/evident-log/evident/internal/echo"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// Outcome values the read API's outcome filter takes (ledger.AttrOutcome).
var outcomes = map[string]bool{"accepted": true, "refused": true}

// attrParams maps query parameters to the entry attributes they filter on (audit.read):
// task_id (or task), logical_id, tag (repeatable: every tag must be present) and outcome.
// attr.<name>=<value> filters on any attribute a profile fills.
var attrParams = map[string]string{
	"task_id":    ledger.AttrTask,
	"task":       ledger.AttrTask,
	"logical_id": ledger.AttrLogicalID,
	"tag":        ledger.AttrTag,
	"outcome":    ledger.AttrOutcome,
}

// maxAttrFilters bounds the attribute conditions of one read.
const maxAttrFilters = 16

// entryFilter reads GET /v1/chains/{chain}/entries' query into a store filter (without
// From and Limit): method, sender, since, until and the attribute parameters.
func entryFilter(r *http.Request) (store.Filter, error) {
	q := r.URL.Query()
	f := store.Filter{Method: q.Get("method"), Sender: q.Get("sender")}
	var err error
	if f.Since, err = queryTime(r, "since"); err != nil {
		return f, err
	}
	if f.Until, err = queryTime(r, "until"); err != nil {
		return f, err
	}
	n := 0
	for key, vals := range q {
		name, ok := attrParams[key]
		if !ok {
			if name, ok = strings.CutPrefix(key, "attr."); !ok || name == "" {
				continue
			}
		}
		for _, v := range vals {
			if v == "" {
				return f, fmt.Errorf("query parameter %s is empty", echo.String(key))
			}
			if name == ledger.AttrOutcome && !outcomes[v] {
				return f, fmt.Errorf("query parameter outcome: %s is not accepted or refused", echo.Quote(v))
			}
			if f.Attrs == nil {
				f.Attrs = map[string][]string{}
			}
			f.Attrs[name] = append(f.Attrs[name], v)
			if n++; n > maxAttrFilters {
				return f, fmt.Errorf("more than %d attribute filters", maxAttrFilters)
			}
		}
	}
	return f, nil
}
