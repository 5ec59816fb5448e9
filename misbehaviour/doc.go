// Package misbehaviour reads, writes and checks proofs of misbehaviour of a transparency log:
// two checkpoints signed by the same log key that cannot both be true — the same tree size
// with two roots, or a larger tree with a consistency proof that leads to its root and
// implies another root for the smaller tree. Anyone holding the log's public key can check
// such a proof offline; it needs nothing else.
//
// The file format (Format, JSON) is documented in docs/misbehaviour.md. The witness writes
// one when it refuses a checkpoint that contradicts the one it cosigned, evident verify
// writes one when a checkpoint given with --checkpoint forks from the bundle's, and evidentd
// keeps the one a witness answers with when it refuses the log's own checkpoint.
//
// Check never reports a file as proof unless the mathematics holds under the pinned key: a
// forged, mismatched or merely faulty file is "not proven", with the reason.
package misbehaviour
