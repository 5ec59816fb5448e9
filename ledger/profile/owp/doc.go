// Package owp is the OWP-2 (Open Worker Protocol) profile adapter, profile name "owp/2".
//
// One evidence chain per Audit Envelope (OWP-2 §3.6): the chain id is the envelope URI
// `envelope:<workforce-id>:<envelope-id>`, and every record is one Audit Envelope event of the
// types this binding lists for §9.1 (EventTypes), emitted by a Worker
// (`worker:<authority>:<workforce-id>:<local-id>`, §3.1.2) and signed with that Worker's key.
// OWP-2's §9.2 onward (envelope structure, signing, sealing) and its wire binding are not
// public; Evident's binding — field names, canonical bytes, signature input, key binding —
// is docs/profiles/owp.md, with vectors in testvectors/owp.
//
// What the adapter enforces at ingest and on replay:
//
//   - the event names this envelope, a known type, an RFC 3339 time and a Worker ID actor;
//   - every event is signed, {alg, kid, value} over JCS(event − sig), with algorithm agility
//     (ed25519, ecdsa-p256-sha256/-sha3-256, rsa-pss-3072-sha256/-sha3-256, see internal/sigalg);
//   - Worker keys are bound in the envelope by WorkerKeyBound events: the first binding of a
//     Worker is signed by the key it binds (proof of possession), further keys (rotation, §3.1.4)
//     by a key already bound; a kid is never re-bound to another key (§3.1.2);
//   - the Intent lifecycle of §3.4.2: exactly one top-level Intent per envelope, sub-Intents
//     share their root's envelope (their parent must be an Intent of this envelope), and only
//     the transitions open→accepted, accepted→escalated, escalated→accepted, any→resolved
//     (outcome achieved, refused or abandoned);
//   - every Knowledge Base retrieval carries (knowledge_base_id, knowledge_base_version,
//     retrieved_content_hash) with the hash algorithm named (§3.7, §9.2);
//   - when the root Intent resolves, the record closes the chain (ledger.Admission.Closes):
//     evidentd seals it closed at once and accepts nothing more for the envelope (chain_closed).
//
// Provenance references to other envelopes (payload.provenance.prior_envelope) are kept in
// the state; the verifier checks them where the bundle holds the target.
//
// The package has no storage and no clock: evidentd and the offline verifier run the same code.
package owp
