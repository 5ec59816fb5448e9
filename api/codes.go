package api

import (
	"slices"

	"github.com/evident-log/evident/ledger"
)

// ProblemCode is the stable code of a problem detail: the "code" member of an RFC 9457
// problem and the last segment of its type URI. Codes never change meaning.
type ProblemCode string

// Type returns the problem type URI of the code, urn:evident:problem:<code>.
func (c ProblemCode) Type() string { return ProblemTypePrefix + string(c) }

// Problems of the API itself (docs/errors.md, "Other problems").
const (
	CodeBadQuery         ProblemCode = "bad_query"          // a query or path parameter the request cannot have
	CodeBadBody          ProblemCode = "bad_body"           // a request body that cannot be read to its end: cut short, badly chunked, too slow
	CodeInvalidChainID   ProblemCode = "invalid_chain_id"   // a chain id that is not 1–256 printable ASCII without '/', '\', '%'
	CodeUnauthorized     ProblemCode = "unauthorized"       // no bearer token (or client certificate) scoped to the chain
	CodeForbidden        ProblemCode = "forbidden"          // no token configured and a client that is not on loopback
	CodeNoSuchChain      ProblemCode = "no_such_chain"      // the chain does not exist
	CodeNoSuchEntry      ProblemCode = "no_such_entry"      // a seq at or beyond the chain's size
	CodeNotSealed        ProblemCode = "not_sealed"         // the entries are not covered by a registered seal yet
	CodeUnknownProfile   ProblemCode = "unknown_profile"    // ?profile= names no profile evidentd knows
	CodeNotFound         ProblemCode = "not_found"          // no SCITT registration or service key with this id, or no post-quantum log key
	CodePushback         ProblemCode = "pushback"           // the log is busy: retry after Retry-After
	CodeConcurrentWriter ProblemCode = "concurrent_writer"  // other writers kept the chain busy: retry after Retry-After
	CodeOverloaded       ProblemCode = "overloaded"         // request bodies in flight at --max-inflight-bytes: retry after Retry-After
	CodeTimeout          ProblemCode = "timeout"            // the operation did not finish in time; it completes in the background
	CodeCanceled         ProblemCode = "canceled"           // the client went away (status 499)
	CodeInternal         ProblemCode = "internal"           // an internal error, logged by the service
	CodeNotReady         ProblemCode = "not_ready"          // GET /readyz before the first checkpoint, or with a store that takes no commits
	CodeNoSuchRoute      ProblemCode = "no_such_route"      // a path evidentd does not serve
	CodeMethodNotAllowed ProblemCode = "method_not_allowed" // a path evidentd serves, but not with this method (Allow lists those it does)
	// CodeUnsupportedMediaType (below, shared with SCRAPI): a body whose Content-Type the route does not take.
	CodeRangeNotSatisfiable ProblemCode = "range_not_satisfiable" // a Range outside the tile or checkpoint asked for
	CodePreconditionFailed  ProblemCode = "precondition_failed"   // an If-Match or If-Unmodified-Since that does not hold for the tile
	CodeLogUnavailable      ProblemCode = "log_unavailable"       // the log's object store did not answer (502)
)

// Problems of the SCRAPI surface (RFC 9290 concise problem details).
const (
	CodeBeyondPublished      ProblemCode = "beyond_published"       // a tree size beyond the latest published checkpoint
	CodeUnsupportedMediaType ProblemCode = "unsupported_media_type" // a body whose Content-Type the route does not take (a statement that is not application/cose)
	CodeBadID                ProblemCode = "bad_id"                 // a registration id that is not 64 hex digits
	CodeBadKid               ProblemCode = "bad_kid"                // a kid that is not a 32-byte thumbprint
	CodeEmptyProof           ProblemCode = "empty_proof"            // a receipt whose RFC 9942 proof path would be empty (consistency from = to)
)

// Refusals of a signed statement by the registration policy (regpolicy), on the SCRAPI
// surface. unknown_key and bad_signature are shared with the record refusals.
const (
	CodeMalformedStatement    ProblemCode = "malformed_statement"
	CodeStatementTooLarge     ProblemCode = "statement_too_large"
	CodeUnknownIssuer         ProblemCode = "unknown_issuer"
	CodeAlgorithmNotAllowed   ProblemCode = "algorithm_not_allowed"
	CodeContentTypeNotAllowed ProblemCode = "content_type_not_allowed"
	CodeMissingClaim          ProblemCode = "missing_claim"
	CodeNoRegistrationPolicy  ProblemCode = "no_registration_policy"
	CodeDetachedPayload       ProblemCode = "detached_payload"
	CodeBadX5Chain            ProblemCode = "bad_x5chain"
)

// Refusals of a record at ingest: the ledger's codes (ledger.Code), passed through.
const (
	CodeMalformedRecord       = ProblemCode(ledger.CodeMalformed)
	CodeNumberOutOfRange      = ProblemCode(ledger.CodeNumber)
	CodeRecordTooLarge        = ProblemCode(ledger.CodeTooLarge)
	CodeBadTimestamp          = ProblemCode(ledger.CodeBadTimestamp)
	CodeChainMismatch         = ProblemCode(ledger.CodeWrongChain)
	CodeBadSignature          = ProblemCode(ledger.CodeBadSignature)
	CodeBadSignatureFormat    = ProblemCode(ledger.CodeSignatureFormat)
	CodeSignatureRequired     = ProblemCode(ledger.CodeSignatureRequired)
	CodeUnknownKey            = ProblemCode(ledger.CodeUnknownKey)
	CodeKeyNotValid           = ProblemCode(ledger.CodeKeyNotValid)
	CodeBadKey                = ProblemCode(ledger.CodeBadKey)
	CodeUnauthorizedKeyChange = ProblemCode(ledger.CodeUnauthorized)
	CodeRoleNotPermitted      = ProblemCode(ledger.CodeRoleDenied)
	CodePrevHashMismatch      = ProblemCode(ledger.CodePrevMismatch)
	CodeFork                  = ProblemCode(ledger.CodeFork)
	CodeIDReused              = ProblemCode(ledger.CodeIDReused)
	CodeChainClosed           = ProblemCode(ledger.CodeClosed)
	CodeProfileMismatch       = ProblemCode(ledger.CodeProfileMismatch)
	CodeDigestMismatch        = ProblemCode(ledger.CodeDigestMismatch)
	CodeEvidenceHeadMismatch  = ProblemCode(ledger.CodeEvidenceHeadMismatch)
)

// A profile's own codes (its refusals, and the problems of the routes it adds) are not
// listed here: the profile declares them (ledger.Documented) and the registry in
// ledger/profile gathers them, so this package names no profile. evidentd answers them as
// problems all the same; LedgerCode maps a refusal's code.

var problemCodes = []ProblemCode{
	CodeBadQuery, CodeBadBody, CodeInvalidChainID, CodeUnauthorized, CodeForbidden, CodeNoSuchChain, CodeNoSuchEntry,
	CodeNotSealed, CodeUnknownProfile, CodeNotFound, CodePushback,
	CodeConcurrentWriter, CodeOverloaded, CodeTimeout, CodeCanceled, CodeInternal, CodeNotReady,
	CodeNoSuchRoute, CodeMethodNotAllowed, CodeRangeNotSatisfiable, CodePreconditionFailed, CodeLogUnavailable,

	CodeBeyondPublished, CodeUnsupportedMediaType, CodeBadID, CodeBadKid, CodeEmptyProof,

	CodeMalformedStatement, CodeStatementTooLarge, CodeUnknownIssuer, CodeAlgorithmNotAllowed,
	CodeContentTypeNotAllowed, CodeMissingClaim, CodeNoRegistrationPolicy, CodeDetachedPayload, CodeBadX5Chain,

	CodeMalformedRecord, CodeNumberOutOfRange, CodeRecordTooLarge, CodeBadTimestamp, CodeChainMismatch,
	CodeBadSignature, CodeBadSignatureFormat, CodeSignatureRequired, CodeUnknownKey, CodeKeyNotValid,
	CodeBadKey, CodeUnauthorizedKeyChange, CodeRoleNotPermitted, CodePrevHashMismatch, CodeFork,
	CodeIDReused, CodeChainClosed, CodeProfileMismatch, CodeEvidenceHeadMismatch, CodeDigestMismatch,
}

// ProblemCodes returns every code of the API and the ledger, each once: with the codes the
// served profiles declare (profile.Registry.Codes), every code evidentd answers with.
func ProblemCodes() []ProblemCode { return slices.Clone(problemCodes) }

// Known reports whether c is one of ProblemCodes (a profile's own codes are not).
func (c ProblemCode) Known() bool { return slices.Contains(problemCodes, c) }

// LedgerCode returns the problem code under which the API reports a record refused with c.
func LedgerCode(c ledger.Code) ProblemCode { return ProblemCode(c) }
