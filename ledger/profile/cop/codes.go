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
