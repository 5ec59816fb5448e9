package ledger

import (
	"errors"
	"fmt"

	"github.com/evident-log/evident/ledger/canonical"
)

// Code is a stable, documented error code carried by every refusal of a record and every
// finding. Codes appear in RFC 9457 problem details and in verifier reports; they never change
// meaning. docs/errors.md lists them all.
type Code string

// Refusal codes shared by every profile (docs/errors.md lists them with their meaning).
const (
	CodeMalformed         Code = "malformed_record"        // not strict JSON, or JSON that is not a record of the profile
	CodeNumber            Code = "number_out_of_range"     // a number outside the profile's canonical number rule
	CodeTooLarge          Code = "record_too_large"        // over the record size or nesting limit
	CodeBadTimestamp      Code = "bad_timestamp"           // a timestamp that is not RFC 3339
	CodeWrongChain        Code = "chain_mismatch"          // the record does not continue this chain: it names another (CHAP workspace), or its audit-entry seq or prev_hash is not the chain's
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

// Codes more than one profile reports (docs/errors.md). A profile's own codes live in its
// package (ledger/profile/owp, cop, cheq, chieflab).
const (
	CodeDigestMismatch Code = "digest_mismatch"      // a named hash (COP copHash, CHEQ cheq_hash) is not the recomputed one
	CodeAfterClosure   Code = "events_after_closure" // entries beyond a closing seal or closing record
	// CodeEvidenceHeadMismatch: the head a sender reported for its own evidence chain (CHAP
	// evidence_head) is not the chain's, at evidentd when reported and offline in a bundle.
	CodeEvidenceHeadMismatch Code = "evidence_head_mismatch"
)

// Codes of the offline verifier that a profile's bundle check (BundleChecker) reports too.
const (
	CodeFileMissing  Code = "file_missing"  // a file the check needs is absent or cannot be opened
	CodeTrustInvalid Code = "trust_invalid" // a trust file the check needs is unusable
	CodeNotReplayed  Code = "not_replayed"  // a comparison needing entries that could not be read that far
)

// CanonicalRefusal turns an error of the strict JSON parser or encoder (ledger/canonical) into
// the refusal of a record: record_too_large (over the size or the nesting limit; the
// *canonical.Error it wraps carries the limit), number_out_of_range, or else malformed_record.
func CanonicalRefusal(err error) error {
	code := CodeMalformed
	switch {
	case errors.Is(err, canonical.ErrNumber):
		code = CodeNumber
	case errors.Is(err, canonical.ErrTooLarge), errors.Is(err, canonical.ErrTooDeep):
		code = CodeTooLarge
	}
	return &RecordError{Code: code, Detail: err.Error(), Err: err}
}

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
