package cop

import "github.com/evident-log/evident/ledger"

// Codes of COP 1.0 (docs/profiles/cop.md, docs/errors.md), beside the shared ones of ledger
// (a wrong copHash is ledger.CodeDigestMismatch). CodeTopicSeq refuses a record at ingest;
// the cop_parent_* codes are findings of the cop.parents check; the cop_ledger_* codes are
// the verdicts of the cop.ledger check (CheckBundle).
const (
	CodeTopicSeq       ledger.Code = "topic_seq_gap"        // topicSeq is not the previous + 1
	CodeParentCycle    ledger.Code = "parent_cycle"         // parentEventIds reach the event itself
	CodeParentAbsent   ledger.Code = "parent_not_in_bundle" // a parent event the evidence does not hold (not_evaluated)
	CodeLedgerAbsent   ledger.Code = "cop_ledger_absent"    // a cop/1.0 chain without its ledger, or no node key to check it
	CodeLedgerBroken   ledger.Code = "cop_ledger_broken"    // a ledger record fails index, prevHash, eventHash or signature
	CodeLedgerMismatch ledger.Code = "cop_ledger_mismatch"  // ledger and chain disagree (event, topic, time, count)
)

// CodeDocs documents COP's own codes (docs/errors.md).
func (Adapter) CodeDocs() []ledger.CodeDoc {
	return []ledger.CodeDoc{
		{Code: CodeTopicSeq, Kind: "refusal", HTTP: 422, Meaning: "COP: `topicSeq` is not the previous + 1 (or the first is not 0 or 1)"},
		{Code: CodeParentCycle, Kind: "refusal / critical finding", HTTP: 422, Meaning: "COP: an event names itself (refused), or names a parent that comes later in its Topic (finding)"},
		{Code: CodeParentAbsent, Kind: "notice", Meaning: "COP: a parent event the chain does not hold (another Topic): not evaluated"},
		{Code: CodeLedgerBroken, Kind: "verification", Meaning: "COP Ledger: index, prevHash chain, eventHash or node signature fails"},
		{Code: CodeLedgerMismatch, Kind: "verification", Meaning: "COP Ledger and chain disagree: record i is not for entry i (eventId, topicId, createdAt ≠ arrival), or the counts differ"},
		{Code: CodeLedgerAbsent, Kind: "verification (not evaluated)", Meaning: "a cop/1.0 chain exported without its ledger, or without a node key to check it"},
		{Code: CodeNotCOP, Kind: "problem", HTTP: 404, Meaning: "`GET …/cop-ledger` of a chain that is not a COP Topic"},
	}
}

// CheckDocs documents COP's own checks (docs/report.md).
func (Adapter) CheckDocs() []ledger.CheckDoc {
	return []ledger.CheckDoc{
		{Name: CheckLedger, Meaning: "COP: the node's ledger agrees record by record with the chain and its signatures verify"},
		{Name: CheckParents, Meaning: "COP: parentEventIds form no cycle and name events the evidence holds"},
	}
}
