package ledger

import (
	"errors"
	"fmt"
)

// Code is a stable, documented error code carried by every refusal of a record.
// Codes appear in RFC 9457 problem details and in verifier reports; they never change meaning.
type Code string

// Refusal codes shared by every profile (docs/errors.md lists them with their meaning).
const (
	CodeMalformed         Code = "malformed_record"        // not strict JSON, or JSON that is not a record of the profile
	CodeNumber            Code = "number_out_of_range"     // a number outside the profile's canonical number rule
	CodeTooLarge          Code = "record_too_large"        // over the record size limit
	CodeBadTimestamp      Code = "bad_timestamp"           // a timestamp that is not RFC 3339
	CodeWrongChain        Code = "chain_mismatch"          // the record names another chain (CHAP workspace)
	CodeBadSignature      Code = "bad_signature"           // the signature does not verify
	CodeSignatureFormat   Code = "bad_signature_format"    // a signature field that cannot be parsed
	CodeSignatureRequired Code = "signature_required"      // unsigned record from a sender with a registered key
	CodeUnknownKey        Code = "unknown_key"             // no key of the sender with that kid
	CodeKeyNotValid       Code = "key_not_valid"           // the key was rotated away or revoked before the record's time
	CodeBadKey            Code = "bad_key"                 // an unusable key (JWK) in a join or rotation
	CodeUnauthorized      Code = "unauthorized_key_change" // a rotation or revocation not signed as the rules demand
	CodeRoleDenied        Code = "role_not_permitted"      // a join declaring a role it may not (admin not granted, a role change)
	CodePrevMismatch      Code = "prev_hash_mismatch"      // the record's prev_hash is not the chain head
	CodeFork              Code = "fork"                    // the record's predecessor already has a successor
	CodeIDReused          Code = "id_reused"               // an envelope id seen before in the chain
	CodeClosed            Code = "chain_closed"            // the chain was sealed closed
	CodeProfileMismatch   Code = "profile_mismatch"        // the chain exists under another profile
)

// Codes of the OWP-2, COP 1.0, CHEQ and ChiefLab profiles (docs/profiles/, docs/errors.md).
// Refusal codes stop a record at ingest; finding codes (ChiefLab's, cop_parent_*) are reported
// by the replay on records that were accepted as evidence.
const (
	CodeEventType           Code = "unknown_event_type"             // OWP: not a §9.1 event type
	CodeWorkerID            Code = "bad_worker_id"                  // OWP: actor is not worker:<authority>:<workforce>:<local>
	CodeWorkerRebound       Code = "worker_rebound"                 // OWP: a Worker ID bound to another key (§3.1.2)
	CodeLifecycle           Code = "lifecycle_violation"            // OWP: an Intent transition the lifecycle does not permit (§3.4.2)
	CodeKnowledgeRef        Code = "knowledge_reference_incomplete" // OWP: a retrieval without (knowledge_base_id, version, content_hash)
	CodeDigestMismatch      Code = "digest_mismatch"                // a named hash (copHash, cheq_hash) is not the recomputed one
	CodeTopicSeq            Code = "topic_seq_gap"                  // COP: topicSeq is not the previous + 1
	CodeParentCycle         Code = "parent_cycle"                   // COP: parentEventIds reach the event itself
	CodeParentAbsent        Code = "parent_not_in_bundle"           // COP: a parent event the evidence does not hold (not_evaluated)
	CodeCOPLedger           Code = "cop_ledger_broken"              // COP: a ledger record whose hash chain, eventHash or signature fails
	CodeConfirmationReused  Code = "confirmation_reused"            // CHEQ: one confirmation presented for two CHEQs
	CodeNoOperator          Code = "operator_not_authenticated"     // ChiefLab: records submitted without an operator identity (not_evaluated)
	CodeOperatorMismatch    Code = "operator_mismatch"              // ChiefLab: a record naming an operator other than the authenticated one
	CodeUnapprovedExecution Code = "executed_without_approval"      // ChiefLab: executed with no preceding approved (critical)
	CodeExecutedAfterReject Code = "executed_after_rejection"       // ChiefLab: executed after rejected (critical)
	CodeDuplicateExecution  Code = "duplicate_execution"            // ChiefLab: two executions under one idempotency key (critical)
	CodeCrossWorkspace      Code = "cross_workspace_access"         // ChiefLab: an action of another workspace in the run (critical)
	CodeAfterClosure        Code = "events_after_closure"           // entries beyond a closing seal or closing record
)

// ErrRefused is matched (errors.Is) by every *RecordError.
var ErrRefused = errors.New("record refused")

// RecordError is a typed refusal of one record: its position in the submission, a stable code and a detail.
type RecordError struct {
	Index  int    // position of the record in the submitted batch (0 for a single record)
	Code   Code   // stable error code
	Detail string // what exactly is wrong, for a person
	Err    error  // underlying cause, if any
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("record %d refused (%s): %s", e.Index, e.Code, e.Detail)
}

// Unwrap lets errors.Is match ErrRefused and the underlying cause.
func (e *RecordError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrRefused, e.Err}
	}
	return []error{ErrRefused}
}

// Refuse builds a *RecordError.
func Refuse(code Code, format string, args ...any) *RecordError {
	return &RecordError{Code: code, Detail: fmt.Sprintf(format, args...)}
}
