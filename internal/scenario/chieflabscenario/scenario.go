// Package chieflabscenario builds a realistic ChiefLab run for tests and the demo: a product launch
// staging a LinkedIn post and an email send; the post is approved and executed (once, with a
// retry under the same idempotency key answered from the prior result), the email is edited,
// then rejected. Violating variants break exactly one rule of the contract.
package chieflabscenario

import (
	"encoding/json"
	"time"
)

// Step is one status change of one action.
type Step struct {
	Action, Status, Key, Workspace string
}

// Launch is the fixture's steps (8 status changes).
var Launch = []Step{
	{"act-linkedin-01", "awaiting_approval", "", ""},
	{"act-email-01", "awaiting_approval", "", ""},
	{"act-email-01", "edited", "", ""},
	{"act-email-01", "awaiting_approval", "", ""},
	{"act-linkedin-01", "approved", "", ""},
	{"act-linkedin-01", "executed", "idem-linkedin-launch-1", ""},
	{"act-email-01", "rejected", "", ""},
	{"act-linkedin-01", "failed", "", ""},
}

// Violations are rule-breaking variants of Launch, by the finding each must raise.
var Violations = map[string][]Step{
	"executed_without_approval": {{"act-email-01", "awaiting_approval", "", ""}, {"act-email-01", "executed", "idem-e1", ""}},
	"executed_after_rejection":  {{"act-email-01", "awaiting_approval", "", ""}, {"act-email-01", "rejected", "", ""}, {"act-email-01", "approved", "", ""}, {"act-email-01", "executed", "idem-e1", ""}},
	"duplicate_execution": {{"act-linkedin-01", "awaiting_approval", "", ""}, {"act-linkedin-01", "approved", "", ""}, {"act-linkedin-01", "executed", "idem-1", ""},
		{"act-linkedin-02", "awaiting_approval", "", ""}, {"act-linkedin-02", "approved", "", ""}, {"act-linkedin-02", "executed", "idem-1", ""}},
	"cross_workspace_access": {{"act-linkedin-01", "awaiting_approval", "", ""}, {"act-linkedin-01", "approved", "", "ws-globex"}},
	"edit_voids_approval":    {{"act-email-01", "awaiting_approval", "", ""}, {"act-email-01", "approved", "", ""}, {"act-email-01", "edited", "", ""}, {"act-email-01", "executed", "idem-e1", ""}},
}

// Records renders steps as §5 action records of run in workspace ws.
func Records(run, ws string, start time.Time, steps []Step) [][]byte {
	var out [][]byte
	for i, s := range steps {
		t := start.Add(time.Duration(i) * 4 * time.Minute)
		w := ws
		if s.Workspace != "" {
			w = s.Workspace
		}
		channel, connector, tool := "linkedin", "zernio", "chieflab_post_execute"
		if s.Action[:9] == "act-email" {
			channel, connector, tool = "email", "resend", "chieflab_send_execute"
		}
		rec := map[string]any{"id": s.Action, "runId": run, "workspaceId": w, "tenantId": "tenant-acme-emea",
			"type": channel + "_" + map[bool]string{true: "post", false: "send"}[channel == "linkedin"], "channel": channel,
			"connector": connector, "assetId": "asset-" + s.Action, "executorTool": tool, "status": s.Status,
			"preflight": map[string]any{"severity": "low", "warnings": []any{}, "recommendations": []any{}, "gates": []any{},
				"connectorReady": true, "connectorBlocker": nil, "connectorFixHint": nil, "estimatedCostCredits": 1.5},
			"approvedBy": nil, "approvedAt": nil, "executedAt": nil, "externalId": nil, "metadata": map[string]any{}}
		switch s.Status {
		case "approved":
			rec["approvedBy"], rec["approvedAt"] = "user:maria@acme.example", t.Format(time.RFC3339)
		case "executed":
			rec["executedAt"], rec["externalId"] = t.Format(time.RFC3339), "urn:li:share:71"+s.Action[len(s.Action)-2:]
		}
		if s.Key != "" {
			rec["metadata"] = map[string]any{"idempotencyKey": s.Key}
		}
		b, _ := json.Marshal(rec)
		out = append(out, b)
	}
	return out
}
