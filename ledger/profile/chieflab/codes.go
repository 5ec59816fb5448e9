package chieflab

import "github.com/evident-log/evident/ledger"

// Codes of ChiefLab (docs/profiles/chieflab.md, docs/errors.md). CodeOperatorMismatch refuses
// a record at ingest; the others are findings the replay reports on accepted records.
const (
	CodeNoOperator          ledger.Code = "operator_not_authenticated" // records submitted without an operator identity (not_evaluated)
	CodeOperatorMismatch    ledger.Code = "operator_mismatch"          // a record naming an operator other than the authenticated one
	CodeUnapprovedExecution ledger.Code = "executed_without_approval"  // executed with no preceding approved (critical)
	CodeExecutedAfterReject ledger.Code = "executed_after_rejection"   // executed after rejected (critical)
	CodeDuplicateExecution  ledger.Code = "duplicate_execution"        // two executions under one idempotency key (critical)
	CodeCrossWorkspace      ledger.Code = "cross_workspace_access"     // an action of another workspace in the run (critical)
)

// CodeDocs documents ChiefLab's own codes (docs/errors.md).
func (Adapter) CodeDocs() []ledger.CodeDoc {
	return []ledger.CodeDoc{
		{Code: CodeOperatorMismatch, Kind: "refusal", HTTP: 422, Meaning: "ChiefLab: the record names an operator other than the one evidentd authenticated"},
		{Code: CodeNoOperator, Kind: "notice", Meaning: "ChiefLab: records submitted without an operator identity"},
		{Code: CodeUnapprovedExecution, Kind: "critical finding", Meaning: "ChiefLab: `executed` with no standing `approved` (an edit voids an approval)"},
		{Code: CodeExecutedAfterReject, Kind: "critical finding", Meaning: "ChiefLab: `executed` after `rejected`"},
		{Code: CodeDuplicateExecution, Kind: "critical finding", Meaning: "ChiefLab: two executions under one idempotency key (or of one action)"},
		{Code: CodeCrossWorkspace, Kind: "critical finding", Meaning: "ChiefLab: an action of another workspace in the run"},
	}
}

// CheckDocs documents ChiefLab's own checks (docs/report.md).
func (Adapter) CheckDocs() []ledger.CheckDoc {
	return []ledger.CheckDoc{
		{Name: CheckApproval, Meaning: "ChiefLab: every execution follows an approval, none follows a rejection"},
		{Name: CheckIdempotency, Meaning: "ChiefLab: no two executions under one idempotency key"},
		{Name: CheckWorkspace, Meaning: "ChiefLab: no action of another workspace in the run"},
		{Name: CheckOperator, Meaning: "ChiefLab: records were submitted under an authenticated operator identity"},
	}
}
