package api

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"

	"github.com/evident-log/evident/internal/echo"
	"github.com/evident-log/evident/ledger"
)

// ParseEvidenceHead reads the body of POST /v1/chains/{chain}/evidence-head:
// {evidence_head, audit_count?}, or a JSON-RPC response whose result is one. Other members
// (the rest of a CHAP workspace.describe result) are ignored. Errors are *ledger.RecordError
// with code malformed_record.
func ParseEvidenceHead(body []byte) (EvidenceHeadRequest, error) {
	var req EvidenceHeadRequest
	var top struct {
		Result       json.RawMessage `json:"result"`
		EvidenceHead *string         `json:"evidence_head"`
		AuditCount   *json.Number    `json:"audit_count"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&top); err != nil {
		return req, ledger.Refuse(ledger.CodeMalformed, "evidence head: not a JSON object: %v", err)
	}
	if top.EvidenceHead == nil && len(top.Result) > 0 {
		return ParseEvidenceHead(top.Result)
	}
	if top.EvidenceHead == nil {
		return req, ledger.Refuse(ledger.CodeMalformed, "evidence head: no evidence_head member (the Coordinator's workspace.describe gives one once its evidence chain is on)")
	}
	l, err := ledger.ParseLink(*top.EvidenceHead)
	if err != nil {
		return req, ledger.Refuse(ledger.CodeMalformed, "evidence_head: %v", err)
	}
	req.EvidenceHead = l
	if top.AuditCount != nil {
		// A count of entries: at most 2^63-1, as every size evidentd keeps (a signed 64-bit
		// integer in its stores).
		n, err := strconv.ParseUint(top.AuditCount.String(), 10, 64)
		if err != nil || n > math.MaxInt64 {
			return req, ledger.Refuse(ledger.CodeMalformed, "audit_count must be an integer from 0 to %d, not %s", int64(math.MaxInt64), echo.String(top.AuditCount.String()))
		}
		req.AuditCount = n
	}
	return req, nil
}
