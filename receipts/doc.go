// Package receipts implements the COSE objects Evident exchanges with its
// clients: signed statements, log receipts and transparent statements.
//
// What it implements:
//
//   - Signed statements: tagged COSE_Sign1 messages (RFC 9052, CBOR tag 18)
//     whose protected header carries alg (1), kid (4), content type (3) and a
//     CWT claims map (15, RFC 9597) with iss (1), sub (2) and iat (6). The kid
//     Evident writes is the RFC 9679 COSE Key Thumbprint (SHA-256) of the
//     signing key. Callers may add protected header parameters; the private
//     labels HeaderSeq and HeaderPrev are reserved for a record's position.
//   - Log entries: the entry for a registered statement is the SHA-256 of the
//     statement re-encoded with an empty unprotected header (EntryHash); its
//     Merkle leaf hash is SHA-256(0x00 || entry) (LeafHash), as in RFC 9162.
//   - Receipts (RFC 9942) for the verifiable data structure RFC9162_SHA256
//     (vds 1): receipts of inclusion (vdp -1) and of consistency (vdp -2),
//     with a detached payload equal to the Merkle root the proof leads to.
//     Because the signed content (protected header and root) does not depend
//     on the leaf, one signature per tree head (SignRoot) serves every
//     receipt cut from that tree (NewInclusionReceipt, NewConsistencyReceipt).
//     A witnessed checkpoint note may ride along in the unprotected header
//     under the private label HeaderCheckpoint.
//   - Empty proof paths: RFC 9942's CDDL requires a non-empty path
//     ([ + bstr ]), but RFC 9162 gives an empty one for a leaf in a one-leaf
//     tree and between two equal sizes. NewConsistencyReceipt refuses equal
//     sizes (ErrEmptyPath); evidentd's log never holds fewer than two leaves
//     when it cuts a receipt (its first leaf is a genesis entry). A one-leaf
//     inclusion receipt is still built, for a chain tree of one entry, and
//     ParseReceipt accepts an empty path exactly where RFC 9162 prescribes
//     one, so that receipts issued before stay verifiable.
//   - Transparent statements (IETF SCITT architecture): a signed statement
//     with receipts in its unprotected header under label 394
//     (AttachReceipts, SplitTransparent).
//   - Signing with Ed25519 (EdDSA, -8) and P-256 (ES256, -7); verification of
//     EdDSA, ES256, ES384 (-35) and PS256 (-37). COSE_Key encoding and parsing
//     of the corresponding public keys.
//
// Everything Evident produces uses the core deterministic CBOR encoding of
// RFC 8949 section 4.2.1. Parsers are strict: tag 18 is required, sizes are
// bounded (MaxStatementSize, MaxReceiptSize, ...), duplicate map keys and
// indefinite-length items are refused, a label may not appear in both
// header buckets, and every parsing or verification error wraps one of the
// sentinel errors ErrMalformed, ErrUnsupportedAlg, ErrBadSignature,
// ErrBadProof or ErrUnsupportedVDS so callers can branch with errors.Is.
//
// What it does not do:
//
//   - No other verifiable data structures than RFC9162_SHA256, and no
//     receipts with an attached payload (the root must be recomputed).
//   - No COSE_Sign (multi-signer), COSE_Mac or encryption; no countersignatures.
//   - No detached-payload statements for signing; statements with a detached
//     payload can be parsed and hashed but not verified here.
//   - No key discovery or trust decisions: callers pass the public key to
//     verify with. A kid is reported, never used to pick or check a key.
//   - No policy on claims (issuer allow lists, iat freshness, ...), and no
//     verification of the checkpoint note carried in a receipt.
//   - No Merkle tree storage or proof generation: proofs come from the log.
package receipts
