// Package ledger holds the protocol-neutral core of Evident's evidence chains:
// links, the chain Merkle tree (RFC 6962 hashing over
// compact ranges), chain state and seals, as docs/chains.md describes them.
//
// The link rule is the one CHAP 0.3 uses for its evidence chain and that every
// profile shares:
//
//	link(-1) = "sha256:" + 64 × "0"
//	link(i)  = "sha256:" + hex(SHA-256(canonical(record_i) || utf8(link(i-1))))
//
// Profile adapters (ledger/profile/chap, …) turn a protocol's records into canonical
// bytes; this package turns canonical bytes into links, roots and seals. It has
// no storage, no network and no clock of its own, so the offline verifier uses
// it unchanged.
//
// The contract with a profile: a Profile names itself and makes ProfileStates; a
// ProfileState admits one record at a Position or refuses it with a *RecordError
// (errors.Is ErrRefused) carrying a stable Code, and is left unchanged when it refuses. A
// Chain applies the link rule around it. Beyond that, a profile may implement optional
// capabilities the offline verifier type-asserts, so that the verifier never names a
// profile: Auditor and ServiceAttested (findings, attested records), KeyHolder (a key
// history), Linked (records that name their predecessor), Sliceable (case slices), Referrer
// and CrossChain (references to other chains) and BundleChecker (files of its own in a
// bundle, read through a BundleChain).
//
// Codes: the ones every profile shares, and the verifier codes a BundleChecker reports too,
// are declared here; a profile's own codes live in its package. docs/errors.md lists them
// all.
package ledger
