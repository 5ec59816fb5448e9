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
