package cheq

import "github.com/evident-log/evident/ledger"

// Refusal codes of CHEQ (docs/profiles/cheq.md, docs/errors.md), beside the shared ones of
// ledger (a wrong cheq_hash is ledger.CodeDigestMismatch).
const (
	CodeConfirmationReused ledger.Code = "confirmation_reused" // one confirmation presented for two CHEQs
)
