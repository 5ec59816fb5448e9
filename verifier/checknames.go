package verifier

import (
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile"
)

// CheckName names a Check: a dotted "area.property" such as "chain.entries". Names are
// stable; a report may hold several checks of one name (one per chain, seal or file).
// It is ledger.CheckName, so that profiles can name the checks they run (ledger.Auditor,
// ledger.CrossChain, ledger.BundleChecker) without importing the verifier, and a name is
// never confused with another string.
type CheckName = ledger.CheckName

// Checks of the manifest and the files.
const (
	CheckBundleManifest    CheckName = "bundle.manifest"    // the manifest parses, names its format and agrees with itself
	CheckBundleChains      CheckName = "bundle.chains"      // the bundle holds at least one chain
	CheckBundleDigest      CheckName = "bundle.digest"      // every listed file matches its SHA-256 digest in the manifest
	CheckBundleExtra       CheckName = "bundle.extra"       // listed files that no check interprets (reported, not trusted)
	CheckBundleUnambiguous CheckName = "bundle.unambiguous" // every reader sees the same files with the same bytes (no duplicate, colliding, unsafe or unlisted entry)
	CheckBundleLimits      CheckName = "bundle.limits"      // the bundle is within the verifier's size and count limits
)

// Checks of the trust material the bundle carries.
const (
	CheckTrustLogKey        CheckName = "trust.log_key"        // trust/log.vkey is a usable signed-note verifier key and a pinned one
	CheckTrustLogPQKey      CheckName = "trust.log_pq_key"     // the log's ML-DSA-44 checkpoint key, when the bundle names one, one is pinned, or --require-pq asks for it
	CheckTrustIssuers       CheckName = "trust.issuers"        // trust/issuers.cbor is a CBOR array of COSE_Key, matched by RFC 9679 thumbprint (and the pinned keys, when pinned)
	CheckTrustKeyHistory    CheckName = "trust.key_history"    // trust/key-history.json: every service key well formed, its kid its thumbprint, held by trust/issuers.cbor
	CheckTrustWitnessPolicy CheckName = "trust.witness_policy" // the witness policy judging the quorum: the pinned one, else the bundle's
)

// Checks of each chain, replayed from genesis.
const (
	CheckChainProfile        CheckName = "chain.profile"        // the verifier has an adapter for the chain's profile
	CheckChainEntries        CheckName = "chain.entries"        // entries.jsonl replayed from genesis: seq in order, every record admitted by the profile, prev and link recomputed, no reused record id
	CheckChainSignatures     CheckName = "chain.signatures"     // record signatures verify with the signer's key valid at the record's time
	CheckChainAuthentication CheckName = "chain.authentication" // for a profile whose records carry no sender signature by design: what vouches for them instead
	CheckChainUnsigned       CheckName = "chain.unsigned"       // records that carry no signature (who wrote them is not evaluated)
	CheckChainState          CheckName = "chain.state"          // the recomputed size, head and root equal the manifest's
	CheckChainLinkage        CheckName = "chain.linkage"        // how much of the chain the records' own predecessor links cover (profiles whose records name their predecessor)
	CheckChainTimestamps     CheckName = "chain.timestamps"     // every sender's timestamps are non-decreasing (a regression is a warning)
	CheckChainEvidenceHead   CheckName = "chain.evidence_head"  // the manifest's evidence_head is the replayed head
	CheckChainClosure        CheckName = "chain.closure"        // no entry follows a closing seal or the record that closed the chain
	CheckChainConsistency    CheckName = "chain.consistency"    // every two successive seals are one history (chain consistency receipt, equal roots, or the replay)
)

// Checks of each chain's seals and of what they anchor.
const (
	CheckSealNumbering  CheckName = "seal.numbering"  // seal files are numbered 0..n-1
	CheckSealFormat     CheckName = "seal.format"     // a seal file is a transparent seal statement
	CheckSealSignature  CheckName = "seal.signature"  // the seal statement is signed by an issuer key (within its key-history window)
	CheckSealPayload    CheckName = "seal.payload"    // the seal payload names this chain and its profile
	CheckSealLineage    CheckName = "seal.lineage"    // prev_seal names the previous seal statement's log entry
	CheckSealReceipt    CheckName = "seal.receipt"    // the RFC 9942 inclusion receipt verifies and is signed by an issuer key
	CheckSealCheckpoint CheckName = "seal.checkpoint" // the checkpoint the receipt leads to is signed by the log key, with the right origin, size and root
	CheckSealState      CheckName = "seal.state"      // the sealed head and root equal the replayed ones at the sealed size
	CheckSeals          CheckName = "seals"           // summary of a chain's seals: how many verified
	CheckAnchoring      CheckName = "anchoring"       // how many entries a verified seal anchors in the log (entries after the last one are not anchored)
)

// Checks of the log's checkpoints and of its witnesses.
const (
	CheckLogCheckpoint      CheckName = "log.checkpoint"       // every checkpoint file is signed by the log key
	CheckLogExtraCheckpoint CheckName = "log.extra_checkpoint" // a checkpoint given with --checkpoint is signed by the log key
	CheckLogFork            CheckName = "log.fork"             // no two checkpoints of one tree size have different roots
	CheckLogConsistency     CheckName = "log.consistency"      // checkpoints of different sizes are shown consistent by a consistency proof
	CheckLogPQSignature     CheckName = "log.pq_signature"     // checkpoints carry a valid ML-DSA-44 log signature under the pinned key
	CheckWitnessCosignature CheckName = "witness.cosignature"  // each policy witness's cosignature line verifies
	CheckWitnessQuorum      CheckName = "witness.quorum"       // every checkpoint carries the policy's quorum of cosignatures
	CheckWitnessPQQuorum    CheckName = "witness.pq_quorum"    // --require-pq: ML-DSA-44 cosignatures alone meet the quorum
)

// Checks of a case slice (docs/bundle.md, "Case slices").
const (
	CheckSliceSeal         CheckName = "slice.seal"         // the seal the slice's receipts are cut against verified and is the manifest's chain state
	CheckSliceEntries      CheckName = "slice.entries"      // each included entry's link recomputed and proven at its seq in the sealed chain
	CheckSliceSignatures   CheckName = "slice.signatures"   // included signatures verify with the key history the included key records build
	CheckSliceUnsigned     CheckName = "slice.unsigned"     // included records that carry no signature
	CheckSliceCompleteness CheckName = "slice.completeness" // always not_evaluated: the entries a slice omits
)

// Checks of SCITT registrations (docs/scitt.md).
const (
	CheckSCITTIndex         CheckName = "scitt.index"         // scitt/registrations.json is usable and agrees with the files
	CheckSCITTPolicies      CheckName = "scitt.policies"      // registration policy statements are signed by the service and are policies
	CheckSCITTRegistrations CheckName = "scitt.registrations" // each registered statement is well formed, allowed by its policy, and the policy was in force
)

// CheckNames returns the name of every check a report can hold, in the order docs/report.md
// lists them: the verifier's own, then those the profiles Evident serves run, as the
// registry (ledger/profile) gathers them from the profiles.
func CheckNames() []CheckName {
	out := OwnCheckNames()
	for _, c := range profile.Default().Checks() {
		out = append(out, c.Name)
	}
	return out
}

// OwnCheckNames returns the name of every check the verifier itself makes, whatever the
// chains' profiles.
func OwnCheckNames() []CheckName {
	return []CheckName{
		CheckBundleManifest, CheckBundleChains, CheckBundleDigest, CheckBundleExtra, CheckBundleUnambiguous, CheckBundleLimits,
		CheckTrustLogKey, CheckTrustLogPQKey, CheckTrustIssuers, CheckTrustKeyHistory, CheckTrustWitnessPolicy,
		CheckChainProfile, CheckChainEntries, CheckChainSignatures, CheckChainAuthentication, CheckChainUnsigned, CheckChainState, CheckChainLinkage, CheckChainTimestamps, CheckChainEvidenceHead, CheckChainClosure, CheckChainConsistency,
		CheckSealNumbering, CheckSealFormat, CheckSealSignature, CheckSealPayload, CheckSealLineage, CheckSealReceipt, CheckSealCheckpoint, CheckSealState, CheckSeals, CheckAnchoring,
		CheckLogCheckpoint, CheckLogExtraCheckpoint, CheckLogFork, CheckLogConsistency, CheckLogPQSignature, CheckWitnessCosignature, CheckWitnessQuorum, CheckWitnessPQQuorum,
		CheckSliceSeal, CheckSliceEntries, CheckSliceSignatures, CheckSliceUnsigned, CheckSliceCompleteness,
		CheckSCITTIndex, CheckSCITTPolicies, CheckSCITTRegistrations,
	}
}
