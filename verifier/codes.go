package verifier

import "github.com/evident-log/evident/ledger"

// Code is the stable, machine-readable reason a Check gives for a broken or not evaluated
// verdict. It is ledger.Code, so that Check.Code carries a verifier code (the Code* constants
// below), a ledger refusal code (e.g. ledger.CodePrevMismatch) or a profile's finding code
// (docs/errors.md) alike, with no conversion. Codes never change meaning; docs/report.md lists
// the verifier's own.
type Code = ledger.Code

// Codes of the manifest and file checks (bundle.*).
const (
	CodeManifest       Code = "manifest_invalid"     // the manifest does not parse as this format's, or contradicts itself
	CodeDigest         Code = "digest_mismatch"      // a file differs from its manifest digest
	CodeMissing        Code = ledger.CodeFileMissing // a file the manifest lists or the format needs is absent
	CodeRead           Code = "read_error"           // a file cannot be read
	CodeNotInterpreted Code = "not_interpreted"      // a listed file no check reads
	CodeAmbiguous      Code = "bundle_ambiguous"     // two readers could see different bytes: the bundle is refused (bundle.ErrAmbiguous)
	CodeLimit          Code = "bundle_limit"         // the bundle exceeds one of the verifier's limits, so it was not read in full
)

// Codes of the trust material (trust.*).
const (
	CodeTrust          Code = ledger.CodeTrustInvalid // a trust file (trust/log.vkey, trust/issuers.cbor, trust/key-history.json, trust/cop-nodes.json) unusable
	CodeTrustNotPinned Code = "trust_not_pinned"      // nothing pinned: the bundle's own key or policy was used, so who made it is not established (not evaluated)
	CodeTrustMismatch  Code = "trust_mismatch"        // the bundle's key or keys are not among the pinned ones (broken; log.pq_signature is then not evaluated), or a checkpoint carries an ML-DSA-44 signature under the log's name by none of the log's known keys (log.pq_signature broken)
	CodeKeyWindow      Code = "key_outside_window"    // a signature by a service key outside the key's validity window in trust/key-history.json
	CodePQKeyMissing   Code = "pq_key_missing"        // --require-pq, but the bundle names no ML-DSA-44 log key
)

// Codes of a chain's replay (chain.entries, chain.signatures, chain.state, …).
const (
	CodeEntryMalformed Code = "entry_malformed"      // an entries.jsonl line that is not an entry
	CodeEntryTooLong   Code = "entry_too_long"       // an entries.jsonl line over MaxLineSize
	CodeEntrySeq       Code = "entry_seq"            // seq is not the line's position (gap, reorder, duplicate)
	CodeEntryPrev      Code = "entry_prev_mismatch"  // the line's prev is not the recomputed chain head
	CodeEntryLink      Code = "entry_link_mismatch"  // the line's link is not the recomputed link
	CodeStateMismatch  Code = "state_mismatch"       // a recomputed size/head/root differs from a claimed one
	CodeUnknownProfile Code = "unknown_profile"      // no adapter for the chain's profile
	CodeUnsigned       Code = "unsigned"             // records without a signature
	CodeNotReplayed    Code = ledger.CodeNotReplayed // a comparison needing a replay that did not reach that far
)

// Codes of the linkage and timeline checks (docs/profiles/chap.md, "Verification").
const (
	CodeUnchainedPrefix   Code = "unchained_prefix"              // the chain's first records name no predecessor
	CodeTSRegression      Code = "ts_not_monotonic"              // a sender's ts earlier than its previous record's (a warning)
	CodeEvidenceHead      Code = ledger.CodeEvidenceHeadMismatch // the Coordinator's evidence_head is not the replayed head
	CodeEvidenceHeadAhead Code = "evidence_head_ahead"           // the Coordinator reported more entries than the bundle holds
)

// Codes of the seal, anchoring and chain consistency checks.
const (
	CodeSealFormat    Code = "seal_malformed"            // a seal file that is not a transparent seal statement
	CodeSealSignature Code = "seal_bad_signature"        // a seal statement not signed by an issuer key
	CodeSealPayload   Code = "seal_payload"              // a seal payload that is not this chain's seal
	CodeSealLineage   Code = "seal_lineage"              // prev_seal does not name the previous seal statement
	CodeSealNumbering Code = "seal_numbering"            // seal files not numbered 0..n-1
	CodeReceipt       Code = "receipt_invalid"           // a receipt that does not verify
	CodeNotAnchored   Code = "not_anchored"              // entries after the last verified seal
	CodeChainFork     Code = "chain_fork"                // two seals of one chain that are not one history
	CodeChainProof    Code = "chain_consistency_invalid" // a chain consistency receipt that is malformed or does not link its seals
)

// Codes of the log checks: checkpoints, forks, consistency, post-quantum signatures.
const (
	CodeCheckpoint      Code = "checkpoint_invalid"            // a checkpoint that does not verify or does not match
	CodeNoCheckpoint    Code = "checkpoint_missing"            // no checkpoint for a receipt's tree size
	CodeFork            Code = "log_fork"                      // two checkpoints of one size with different roots
	CodeNoConsistency   Code = "no_consistency_proof"          // two tree sizes (of the log, or of a chain's seals) that no proof links
	CodeLogProof        Code = "log_consistency_proof_invalid" // a log consistency proof the bundle carries that is malformed or does not verify
	CodeInconsistent    Code = "log_inconsistent"              // a consistency proof shows two checkpoints are not one log
	CodeExtraCheckpoint Code = "extra_checkpoint_invalid"      // a --checkpoint file that is not a log-signed checkpoint, or holds none
	CodePQSigMissing    Code = "pq_signature_missing"          // --require-pq, and a checkpoint carries no ML-DSA-44 log signature; or no checkpoint carries a valid one by the log's post-quantum key
	CodePQSigInvalid    Code = "pq_signature_invalid"          // a signature line of the log's ML-DSA-44 key that does not verify
)

// Codes of the witness checks (trust/witness.policy).
const (
	CodeWitnessPolicy      Code = "witness_policy_invalid"      // trust/witness.policy unusable
	CodeCosignatureInvalid Code = "witness_cosignature_invalid" // a policy witness's cosignature line does not verify
	CodeQuorumUnmet        Code = "witness_quorum_unmet"        // a checkpoint without the policy's quorum of cosignatures
	CodePQWitnessUnmet     Code = "witness_pq_quorum_unmet"     // --require-pq, and ML-DSA-44 cosignatures alone do not meet the quorum
)

// Codes of the case-slice checks (docs/bundle.md, "Case slices").
const (
	CodeSliceProof      Code = "slice_proof_invalid" // an entry's chain receipt is missing or does not prove it in the sealed chain
	CodeSliceOrder      Code = "slice_order"         // slice entries not in strictly increasing seq order, or beyond the sealed size
	CodeSliceIncomplete Code = "slice_incomplete"    // entries of the chain the slice omits (never verified)
)

// Codes of the SCITT registration checks (docs/scitt.md).
const (
	CodeSCITTIndex          Code = "scitt_index_invalid"       // scitt/registrations.json unusable or contradicted by a file
	CodeSCITTPolicy         Code = "scitt_policy_invalid"      // a policy statement not signed by the service, or not a policy
	CodeSCITTStatement      Code = "scitt_statement_malformed" // a registered statement file that is not a transparent statement
	CodeRegistrationRefused Code = "registration_refused"      // the policy a registration names refuses the statement
	CodePolicyNotInForce    Code = "policy_not_in_force"       // a registration whose policy was not in force where it sits in the log
)

// Codes of the cross-chain reference check (owp.provenance, docs/profiles/owp.md, "Provenance").
const (
	CodeProvenanceAbsent Code = "provenance_target_absent" // the referenced envelope is not in the bundle
	CodeProvenanceBroken Code = "provenance_broken"        // the referenced envelope, event or root does not exist there
)

// Codes returns every code the verifier itself reports, in the order docs/report.md lists
// them. A report may carry ledger codes and the codes the profiles declare besides
// (docs/errors.md; profile.Registry.Codes).
func Codes() []Code {
	return []Code{
		CodeManifest, CodeDigest, CodeMissing, CodeRead, CodeAmbiguous, CodeLimit, CodeNotInterpreted,
		CodeTrust, CodeTrustNotPinned, CodeTrustMismatch, CodeKeyWindow, CodePQKeyMissing,
		CodeEntryMalformed, CodeEntryTooLong, CodeEntrySeq, CodeEntryPrev, CodeEntryLink, CodeStateMismatch, CodeUnknownProfile, CodeUnsigned, CodeNotReplayed,
		CodeUnchainedPrefix, CodeTSRegression, CodeEvidenceHead, CodeEvidenceHeadAhead,
		CodeSealFormat, CodeSealSignature, CodeSealPayload, CodeSealLineage, CodeSealNumbering, CodeReceipt, CodeNotAnchored, CodeChainFork, CodeChainProof,
		CodeCheckpoint, CodeNoCheckpoint, CodeFork, CodeNoConsistency, CodeLogProof, CodeInconsistent, CodeExtraCheckpoint, CodePQSigMissing, CodePQSigInvalid,
		CodeWitnessPolicy, CodeCosignatureInvalid, CodeQuorumUnmet, CodePQWitnessUnmet,
		CodeSliceProof, CodeSliceOrder, CodeSliceIncomplete,
		CodeSCITTIndex, CodeSCITTPolicy, CodeSCITTStatement, CodeRegistrationRefused, CodePolicyNotInForce,
		CodeProvenanceAbsent, CodeProvenanceBroken,
	}
}
