// Package api holds the HTTP wire types of evidentd's /v1 API: the JSON bodies the
// server writes and clients read, the RFC 9457 problem detail of every refusal (and its
// RFC 9290 concise CBOR form on the SCRAPI surface) with its stable ProblemCode, and the
// media types the API speaks.
//
// The types are the contract of the wire format: field names and shapes do not change.
// docs/errors.md documents every ProblemCode.
package api

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/evident-log/evident/ledger"
)

// Media types of the API.
const (
	MediaJSON           = "application/json"
	MediaJSONLines      = "application/jsonl"                        // one record per line (ingest)
	MediaNDJSON         = "application/x-ndjson"                     // an alias of MediaJSONLines the ingest accepts
	MediaProblem        = "application/problem+json"                 // RFC 9457 problem details
	MediaConciseProblem = "application/concise-problem-details+cbor" // RFC 9290, on the SCRAPI surface
	MediaZip            = "application/zip"                          // offline bundles
	MediaCOSE           = "application/cose"
	// MediaCOSESign1 is a COSE_Sign1 object: seal statements and entry receipts.
	MediaCOSESign1 = `application/cose; cose-type="cose-sign1"`
)

// HeaderEntries is the response header of GET /v1/export that says, before the first byte
// of the bundle, how many chain entries it holds (the sum over its chains), so that a client
// can show a download's progress against a known total. Absent for case slices and
// registration bundles.
const HeaderEntries = "Evident-Entries"

// AcceptedEntry is one record an ingest request added to the chain, or found already
// stored at its position (Duplicate: a retried submission, nothing written).
type AcceptedEntry struct {
	Seq     uint64      `json:"seq"`
	Prev    ledger.Link `json:"prev"`
	Link    ledger.Link `json:"link"`
	Arrival string      `json:"arrival"` // RFC 3339 UTC, millisecond precision; a duplicate's first arrival
	// Duplicate is true for a record that was already in the chain at Seq; omitted otherwise.
	Duplicate bool `json:"duplicate,omitempty"`
}

// IngestResponse answers an accepted POST /v1/chains/{chain}/entries: 201 when the batch
// added at least one record, 200 when every record was already in the chain (a retry).
type IngestResponse struct {
	Chain    string          `json:"chain"`
	Accepted []AcceptedEntry `json:"accepted"`
	Size     uint64          `json:"size"` // entries in the chain after the batch
	Head     ledger.Link     `json:"head"`
}

// EvidenceHeadRequest is the body of POST /v1/chains/{chain}/evidence-head: the head a
// chain's sender reported for its own evidence chain. A CHAP Coordinator's workspace.describe
// result (or the JSON-RPC response carrying it in result) is such a body as it stands.
type EvidenceHeadRequest struct {
	EvidenceHead ledger.Link `json:"evidence_head"`
	// AuditCount is the number of entries the sender had recorded; absent or 0: the head is
	// found in the chain and the count taken from where it is.
	AuditCount uint64 `json:"audit_count,omitempty"`
}

// EvidenceHeadResponse answers an accepted POST /v1/chains/{chain}/evidence-head (201): the
// head kept, and how it compares with the chain.
type EvidenceHeadResponse struct {
	Chain        string      `json:"chain"`
	EvidenceHead ledger.Link `json:"evidence_head"`
	AuditCount   uint64      `json:"audit_count"`
	Size         uint64      `json:"size"` // the chain's entries when it was reported
	// Status is "matches" (the chain's head after audit_count entries is evidence_head),
	// "ahead" (the sender has recorded entries the chain does not hold yet: the offline
	// verifier says so until they arrive) or "unchecked" (an earlier head of a sender chain
	// that began after an unchained prefix: the offline verifier checks it).
	Status     string `json:"status"`
	ReportedAt string `json:"reported_at"`
}

// SealResponse answers POST /v1/chains/{chain}/seal (201) asked for JSON.
type SealResponse struct {
	Seal        ledger.Seal `json:"seal"`
	N           uint64      `json:"n"` // the seal's ordinal in the chain, from 0
	LogIndex    uint64      `json:"log_index"`
	Checkpoint  string      `json:"checkpoint"`
	Receipt     string      `json:"receipt"`               // base64 RFC 9942 receipt
	Transparent string      `json:"transparent_statement"` // base64 COSE statement with receipt (header 394)
}

// ReceiptBytes decodes Receipt.
func (r *SealResponse) ReceiptBytes() ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(r.Receipt)
	if err != nil {
		return nil, fmt.Errorf("api: seal receipt: %w", err)
	}
	return b, nil
}

// TransparentStatement decodes Transparent: the seal statement with its receipt.
func (r *SealResponse) TransparentStatement() ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(r.Transparent)
	if err != nil {
		return nil, fmt.Errorf("api: transparent statement: %w", err)
	}
	return b, nil
}

// ChainHead answers GET /v1/chains/{chain}: the chain's current state.
type ChainHead struct {
	Chain      string      `json:"chain"`
	Profile    string      `json:"profile"`
	Size       uint64      `json:"size"`
	Head       ledger.Link `json:"head"`
	Root       string      `json:"root"` // "sha256:<hex>" of the chain tree root at Size
	Closed     bool        `json:"closed"`
	LastSeal   string      `json:"last_seal,omitempty"`
	SealedSize uint64      `json:"sealed_size"`
}

// EntryView is one entry as GET /v1/chains/{chain}/entries shows it.
type EntryView struct {
	Seq     uint64      `json:"seq"`
	Prev    ledger.Link `json:"prev"`
	Link    ledger.Link `json:"link"`
	Arrival string      `json:"arrival"`
	Method  string      `json:"method,omitempty"`
	Sender  string      `json:"sender,omitempty"`
	Signed  bool        `json:"signed"`
	// Attrs are the profile's attributes of the record the attribute filters match
	// (CHAP: task_id, logical_id, tag, outcome).
	Attrs  map[string][]string `json:"attrs,omitempty"`
	Record json.RawMessage     `json:"record"`
	// Meta is what the submitter sent beside the record, unhashed (a CHAP Coordinator's
	// audit-entry seq, arrived and prev_hash); absent when nothing was.
	Meta json.RawMessage `json:"meta,omitempty"`
}

// EntriesPage answers GET /v1/chains/{chain}/entries: one page of entries.
type EntriesPage struct {
	Chain   string      `json:"chain"`
	Entries []EntryView `json:"entries"`
	// Next is the from= of the following page; nil when this page is the last.
	Next *uint64 `json:"next,omitempty"`
}

// SealView is one seal of a chain as GET /v1/chains/{chain}/seals shows it.
type SealView struct {
	N          uint64 `json:"n"`
	Size       uint64 `json:"size"`
	Closed     bool   `json:"closed"`
	SealedAt   string `json:"sealed_at"`
	Registered bool   `json:"registered"` // the seal statement is in the log
	LogIndex   uint64 `json:"log_index,omitempty"`
	Entry      string `json:"entry"` // "sha256:<hex>" of the seal statement's log entry
}

// SealsPage answers GET /v1/chains/{chain}/seals: every seal of the chain, oldest first.
type SealsPage struct {
	Chain string     `json:"chain"`
	Seals []SealView `json:"seals"`
}

// ProblemTypePrefix starts the type URI of every problem detail: the code follows it.
const ProblemTypePrefix = "urn:evident:problem:"

// Problem is an RFC 9457 problem detail with Evident's extensions: the stable Code and,
// for a refused record, its Index in the submitted batch and, when it went past one of the
// service's limits, that Limit.
type Problem struct {
	Type   string        `json:"type"`
	Title  string        `json:"title"`
	Status int           `json:"status"`
	Detail string        `json:"detail,omitempty"`
	Code   ProblemCode   `json:"code"`
	Index  *int          `json:"index,omitempty"` // the refused record's position in the batch
	Limit  *ProblemLimit `json:"limit,omitempty"`
}

// ProblemLimit names the limit of evidentd a refused request went past and how the operator
// raises it: {"name":"max_depth","value":64,"flag":"--max-depth","env":"EVIDENT_MAX_DEPTH"}.
type ProblemLimit struct {
	Name  string `json:"name"`  // LimitMaxDepth, LimitMaxRecordBytes or LimitMaxBody
	Value int64  `json:"value"` // the limit in force: nesting levels or bytes
	Flag  string `json:"flag"`  // evidentd's flag that sets it
	Env   string `json:"env"`   // the environment variable (or config file key) that sets it
}

// The limits a ProblemLimit names.
const (
	LimitMaxDepth       = "max_depth"        // nesting of arrays and objects in one record
	LimitMaxRecordBytes = "max_record_bytes" // bytes of one record
	LimitMaxBody        = "max_body"         // bytes of one ingest request
)
