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
package ledger
