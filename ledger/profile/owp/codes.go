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
