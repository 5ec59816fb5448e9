// Package verifier checks an Evident offline bundle (bundle, "evident-bundle/v1")
// with no network and no service: everything it needs is in the bundle, and it opens no
// connection of any kind (it imports no networking, database or log-storage package; a test
// keeps it so).
//
// What it verifies, each as a named check with a verdict (verified, not_evaluated, broken):
//
//   - the bundle: the manifest parses and agrees with itself; every listed file matches its
//     SHA-256 digest; files the manifest does not list are reported and ignored;
//   - the trust material: trust/log.vkey is a signed-note verifier key and trust/issuers.cbor
//     a CBOR array of COSE_Key (the service's statement and receipt keys, matched by their
//     RFC 9679 thumbprint);
//   - each chain, replayed from genesis by streaming entries.jsonl (memory stays bounded
//     whatever the chain's length): seq 0, 1, 2, …; every record re-canonicalised and admitted
//     by its profile (CHAP, OWP, COP, CHEQ, ChiefLab) under the ledger's chain rules (named
//     predecessor, key history, no reused record id); prev and link recomputed; record signatures verified in
//     parallel with the signer's key valid at the record's time; the chain tree rebuilt; the
//     final size, head and root compared with the manifest;
//   - each seal: the statement's signature by an issuer key, the payload (chain, profile),
//     the head and root at the sealed size against the replay, the lineage (prev_seal names
//     the previous seal statement's log entry), the RFC 9942 inclusion receipt, and the
//     C2SP checkpoint the receipt leads to (signed by the log key, right origin, size and root);
//   - the log: every checkpoint signed by the log key; two checkpoints of one size with
//     different roots are reported as a fork;
//   - witnesses (witnesses.go): with trust/witness.policy, the quorum of cosignatures on every
//     checkpoint (optionally only cosignatures younger than Options.WitnessMaxAge; an unmet
//     quorum is not_evaluated); extra checkpoints from Options.Checkpoints join the fork check,
//     and an add-checkpoint body's consistency proof is used to show a later checkpoint
//     consistent with the bundle's, or to prove a split view (broken, both checkpoints as
//     evidence).
//
// What it cannot verify, and says so (not_evaluated) rather than pass over in silence:
//
//   - completeness: that the bundle holds the whole chain. Entries after the last verified
//     seal are not anchored in the log, and nothing in a bundle shows that no entry was
//     appended after it;
//   - consistency between checkpoints of different tree sizes that no consistency proof in
//     the bundle (log/consistency/) or in an add-checkpoint body links: that the later tree
//     extends the earlier one is then not evaluated (log.consistency);
//   - who wrote unsigned records (refusals, senders without a key);
//   - profiles it has no adapter for.
//
// Profiles: the verifier replays a chain with the adapter the registry (ledger/profile)
// serves for its profile, and reaches every profile-specific rule through the optional
// capabilities package ledger defines, never by a profile's name: a key history
// (ledger.KeyHolder) for the report's participants, the records' own links (ledger.Linked)
// for chain.linkage, case slices (ledger.Sliceable), references to other chains
// (ledger.Referrer, ledger.CrossChain) for owp.provenance, files of the profile's own in the
// bundle (ledger.BundleChecker) for cop.ledger, and findings (ledger.Auditor) and service
// attestation (ledger.ServiceAttested). A new profile that implements them is verified with
// no change here.
//
// The report: Verify returns a Report (JSON format ReportFormat, docs/report.md) whose
// checks are named by the CheckName constants (CheckNames lists them all) and carry, when
// not verified, a Code (Codes lists the verifier's own). Verify returns an error only when it
// cannot run; everything wrong with the bundle is a broken check.
//
// The trust material travels inside the bundle: a verified report says the bundle is
// consistent with the keys it names. Whoever relies on it compares those keys (listed in the
// report) with the ones the service publishes. Arrival times in entries.jsonl are the
// service's word: no link, signature or seal covers them.
package verifier
