package owp

import "github.com/evident-log/evident/ledger"

// Refusal codes of OWP-2 (docs/profiles/owp.md, docs/errors.md), beside the shared ones of ledger.
const (
	CodeEventType     ledger.Code = "unknown_event_type"             // not a §9.1 event type
	CodeWorkerID      ledger.Code = "bad_worker_id"                  // actor is not worker:<authority>:<workforce>:<local>
	CodeWorkerRebound ledger.Code = "worker_rebound"                 // a Worker ID bound to another key (§3.1.2)
	CodeLifecycle     ledger.Code = "lifecycle_violation"            // an Intent transition the lifecycle does not permit (§3.4.2)
	CodeKnowledgeRef  ledger.Code = "knowledge_reference_incomplete" // a retrieval without (knowledge_base_id, version, content_hash)
)

// CodeDocs documents OWP's own codes (docs/errors.md).
func (Adapter) CodeDocs() []ledger.CodeDoc {
	return []ledger.CodeDoc{
		{Code: CodeEventType, Kind: "refusal", HTTP: 422, Meaning: "OWP: not one of the §9.1 event types of the binding"},
		{Code: CodeWorkerID, Kind: "refusal", HTTP: 422, Meaning: "OWP: the actor is not `worker:<authority>:<workforce-id>:<local-id>`"},
		{Code: CodeWorkerRebound, Kind: "refusal", HTTP: 422, Meaning: "OWP: a Worker's kid bound again to another key (§3.1.2)"},
		{Code: CodeLifecycle, Kind: "refusal", HTTP: 422, Meaning: "OWP: an Intent transition §3.4.2 does not permit, a second top-level Intent, a sub-Intent of a foreign parent"},
		{Code: CodeKnowledgeRef, Kind: "refusal", HTTP: 422, Meaning: "OWP: a retrieval without (knowledge_base_id, knowledge_base_version, retrieved_content_hash with its algorithm)"},
	}
}

// CheckDocs documents OWP's own checks (docs/report.md).
func (Adapter) CheckDocs() []ledger.CheckDoc {
	return []ledger.CheckDoc{
		{Name: CheckProvenance, Meaning: "OWP: provenance references to other envelopes resolve in the bundle"},
	}
}
