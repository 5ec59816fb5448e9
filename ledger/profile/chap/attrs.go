package chap

import (
	"slices"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
)

// Outcomes of a record, as the read API's outcome filter names them.
const (
	OutcomeAccepted = "accepted" // an envelope the Coordinator accepted (request, notification or response)
	OutcomeRefused  = "refused"  // a recorded refusal {outcome, request}
)

// Attrs returns the attributes audit.read filters on (ledger.Admission.Attrs): the
// task (params.task_id), the logical artefact (params.logical_id, else
// params.artefact.logical_id), the tags (params.tags and params.artefact.tags, strings
// only) and the outcome (accepted, or refused for a recorded refusal). For a refusal the
// refused request's params are read. Only what the record states is returned: nothing is
// inferred from earlier records (an approval naming only an artefact_id has no
// logical_id attribute).
func (r *Record) Attrs() map[string][]string {
	out := map[string][]string{ledger.AttrOutcome: {OutcomeAccepted}}
	if r.Refusal {
		out[ledger.AttrOutcome] = []string{OutcomeRefused}
	}
	params := r.attrParams()
	if params == nil {
		return out
	}
	art, _ := params.Object("artefact")
	if s, ok := params.String("task_id"); ok && s != "" {
		out[ledger.AttrTask] = []string{s}
	}
	for _, o := range []*canonical.Object{params, art} {
		if s, ok := o.String("logical_id"); ok && s != "" {
			out[ledger.AttrLogicalID] = []string{s}
			break
		}
	}
	var tags []string
	for _, o := range []*canonical.Object{params, art} {
		v, _ := o.Get("tags")
		arr, _ := v.([]canonical.Value)
		for _, t := range arr {
			if s, ok := t.(string); ok && s != "" && !slices.Contains(tags, s) {
				tags = append(tags, s)
			}
		}
	}
	if len(tags) > 0 {
		out[ledger.AttrTag] = tags
	}
	return out
}

// attrParams is the params object the attributes are read from: the envelope's, or the
// refused request's.
func (r *Record) attrParams() *canonical.Object {
	if !r.Refusal {
		return r.Params()
	}
	req, _ := r.Object.Object("request")
	p, _ := req.Object("params")
	return p
}
