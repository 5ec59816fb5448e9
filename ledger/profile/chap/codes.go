package chap

import "github.com/evident-log/evident/ledger"

// Codes and checks only CHAP uses (docs/profiles/chap.md, docs/errors.md). CHAP's refusal
// codes are the shared ones of ledger (unknown_key, bad_signature, …); the replay's findings
// of `evident replay` are in package replay.
const (
	// CodeBootstrapUnverified: a workspace.create signed with a key that no participant.join of
	// its sender ever introduced, so its signature could not be checked (critical finding).
	CodeBootstrapUnverified ledger.Code = "bootstrap_unverified"
)

// CheckBootstrap is the verifier check of the bootstrap rule: every signed workspace.create
// was verified with the key its sender's join introduced.
const CheckBootstrap ledger.CheckName = "chap.bootstrap"

// CodeDocs documents CHAP's own codes (docs/errors.md).
func (Adapter) CodeDocs() []ledger.CodeDoc {
	return []ledger.CodeDoc{
		{Code: CodeBootstrapUnverified, Kind: "critical finding", Meaning: "CHAP: a `workspace.create` signed with a key no `participant.join` of its sender introduced by the end of the chain: its signature was never verified"},
	}
}

// CheckDocs documents CHAP's own checks (docs/report.md).
func (Adapter) CheckDocs() []ledger.CheckDoc {
	return []ledger.CheckDoc{
		{Name: CheckBootstrap, Meaning: "CHAP: every signed workspace.create verified with the key its sender's join introduced"},
	}
}
