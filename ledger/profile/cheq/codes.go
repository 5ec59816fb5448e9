package cheq

import "github.com/evident-log/evident/ledger"

// Refusal codes of CHEQ (docs/profiles/cheq.md, docs/errors.md), beside the shared ones of
// ledger (a wrong cheq_hash is ledger.CodeDigestMismatch).
const (
	CodeConfirmationReused ledger.Code = "confirmation_reused" // one confirmation presented for two CHEQs
)

// CodeDocs documents CHEQ's own codes (docs/errors.md).
func (Adapter) CodeDocs() []ledger.CodeDoc {
	return []ledger.CodeDoc{
		{Code: CodeConfirmationReused, Kind: "refusal", HTTP: 422, Meaning: "CHEQ: a confirmation id already used for another CHEQ"},
	}
}

// CheckDocs documents CHEQ's own checks: it runs none beyond the verifier's.
func (Adapter) CheckDocs() []ledger.CheckDoc { return nil }
