// Package log is the transparency log of evidentd: a tile-based Merkle log run by
// Tessera (github.com/transparency-dev/tessera), laid out as the C2SP tlog-tiles API
// (https://c2sp.org/tlog-tiles) names it, with checkpoints signed as C2SP signed notes.
//
// # Backends
//
// Open runs the log on one of two Tessera drivers; the Log API is the same on both.
//   - POSIX (Options.Dir, the embedded default): entry bundles, hash tiles and the
//     checkpoint are plain files in one directory, so the read path is static files.
//     One process owns the directory (and only one Log per directory in a process).
//   - S3 + MySQL (Options.AWS, see AWSOptions): Tessera's AWS driver in its non-AWS mode.
//     A MySQL-compatible database sequences and coordinates; an S3-compatible object
//     store with conditional PUT holds the same tlog-tiles layout. Several processes
//     share one log. Tessera's minimum checkpoint interval there is 1s
//     (MinAWSCheckpointInterval).
//
// # Entries
//
// Every entry is a fixed EntrySize (32) byte value: the SHA-256 of a registered COSE
// statement. Only seals and registered statements go in. The Merkle tree is RFC 6962:
// leaf hash = SHA-256(0x00 || entry), see LeafHash.
//
// # Checkpoint keys
//
// The log's identity is an Ed25519 signed-note key (golang.org/x/mod/sumdb/note) whose
// name is the origin: GenerateKey makes one, NewSigner loads one, DeriveVerifierKey gives
// its verifier key, and LoadOrCreateKey keeps the pair in KeyFile and VerifierKeyFile of
// the daemon's state directory. An ML-DSA-44 key (GenerateMLDSAKey, NewMLDSASigner,
// LoadOrCreateMLDSAKey, MLDSAKeyFile) may sign every checkpoint too, as an additional
// signer; Log.PostQuantumVerifierKey names it. Open refuses a log whose published
// checkpoint has another origin or does not verify with the configured keys
// (ErrKeyMismatch); to rotate keys, keep the old key as an additional signer.
// VerifyCheckpoint checks a checkpoint for callers holding only the verifier key.
//
// # Witnesses
//
// With Options.Witnesses every checkpoint goes to the witnesses of a C2SP tlog-policy
// (C2SP tlog-witness, through Tessera's WithWitnesses) and is published with their
// cosignatures; WitnessConfig documents fail-open and fail-closed, and Log.WitnessPolicy
// returns the policy for verifiers. WitnessConfig.OnRefusal is told of every witness that
// refuses a checkpoint as contradicting one it cosigned (IsRefusal), with what was sent and
// answered; Tessera still gets the answer unchanged.
//
// # What Log gives callers
//
//   - Append, which blocks until the entry is durably sequenced, integrated and covered
//     by a published signed checkpoint, and returns the index and that checkpoint (so
//     the caller can hand out a receipt with an inclusion proof straight away);
//   - Checkpoint and Size, the latest published checkpoint; CheckpointCovering waits for
//     one that covers a given index;
//   - Find, which looks for an entry among everything sequenced, after waiting for it
//     to be integrated;
//   - InclusionProof, ConsistencyProof and Entry, built from the log's own tiles with
//     Tessera's client.ProofBuilder;
//   - Handler, the read-only tlog-tiles HTTP API (GET /checkpoint, /tile/<L>/<N>,
//     /tile/entries/<N>), one handler over the directory or the bucket: only paths that
//     re-encode exactly are read, full tiles are immutable, partial ones short-lived,
//     missing ones 404 and not cached.
//
// # Behaviour callers must know
//
//   - Durability: Tessera's POSIX driver writes every file through a temporary file
//     opened O_SYNC, renames it into place and fsyncs the directory, and sequencing and
//     integration happen together. On either driver an index is only returned once its
//     entry bundle, tiles and tree state are stored and a checkpoint covering it is
//     published, so acknowledged entries survive a crash; entries still in
//     the in-memory batch (at most BatchMaxAge old) when the process dies were never
//     acknowledged and are lost. Open on the same directory or bucket resumes the log.
//   - Checkpoint timing: a new checkpoint is published at most once per
//     CheckpointInterval, so Append latency is roughly BatchMaxAge plus up to one
//     CheckpointInterval. Tessera's minimum interval for POSIX is 100ms
//     (MinCheckpointInterval).
//   - Deduplication: Tessera's in-memory antispam (an LRU of
//     tessera.DefaultAntispamInMemorySize entries, per process) returns the earlier index
//     when the same 32 bytes are appended again while remembered. On the AWS driver
//     Tessera's MySQL antispam (storage/aws/antispam) backs it: an entry → index table in
//     the sequencing database, shared by every replica and kept across restarts, filled by
//     a follower that reads the integrated log about once a second. Both are best effort:
//     an entry appended twice within the follower's lag gets two indexes. Exactly-once
//     appends are the caller's, with Find: evidentd claims each entry in its ledger
//     database before appending it and, when it takes over a dead appender's claim, looks
//     for the entry before appending again.
//   - Cancelling Append's context abandons the wait, not the append: the entry may still
//     be sequenced and published (Find sees it once it is integrated).
//   - Pushback: at most Options.PushbackMaxOutstanding appends may be waiting at once;
//     beyond that Append fails fast with ErrPushback (answer 503 with Retry-After).
//   - Close stops new appends, waits for in-flight appends to be published and then
//     runs Tessera's shutdown.
//
// Not done here (yet): mirroring, and any write API over HTTP.
package log
