// Package chap is the CHAP 0.3 profile adapter (profile name "chap/0.3").
//
// It turns what a Coordinator hands Evident into records of an evidence chain:
//
//   - an envelope as received (JSON-RPC 2.0 shape with CHAP fields, `id` and
//     top-level `sig` included) or a recorded refusal {outcome, request};
//   - its canonical bytes under CHAP canonical JSON (RFC 8785 with the
//     integers-only rule, |n| ≤ 2^53−1), which feed the chain link;
//   - the signature check: `sig = "ed25519:<kid>:<base64>"` over
//     JCS(envelope − top-level sig), with the key chosen by (from, kid, ts)
//     from the participants' key history (Keyring).
//
// The key history is built from the chain itself: participant.join carries
// JWKs, participant.rotate_key {old_kid, new_jwk} must be signed by the old key,
// participant.revoke_key by the participant itself or an admin member. A workspace.create
// signed with the key its sender's following join introduces is pending until that join
// verifies it (bootstrap.go); one never verified is the finding bootstrap_unverified.
// Binding details the paper leaves open are in docs/profiles/chap.md.
//
// The package has no storage and no clock; evidentd's ingest and the offline
// verifier run the same code.
package chap
