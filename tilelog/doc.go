// Package log is the transparency log of evidentd.
//
// It runs a tile-based Merkle log on Tessera's POSIX storage driver
// (github.com/transparency-dev/tessera/storage/posix): entry bundles, hash
// tiles and the checkpoint are plain files laid out exactly as the C2SP
// tlog-tiles API (https://c2sp.org/tlog-tiles) names them, so the read path
// is static files. With Options.AWS it runs instead on Tessera's AWS driver
// (storage/aws) in its non-AWS mode: a MySQL-compatible database sequences and
// coordinates, an S3-compatible object store with conditional PUT holds the
// same tlog-tiles layout, and several processes share one log (see AWSOptions;
// Tessera's minimum checkpoint interval there is 1s, and its deduplication is
// the in-memory one per process). The Log API is the same on both. Checkpoints are C2SP tlog-checkpoint bodies signed as C2SP
// signed notes with an Ed25519 key (golang.org/x/mod/sumdb/note), which
// LoadOrCreateKey keeps next to the daemon's state.
//
// Every entry is a fixed EntrySize (32) byte value: the SHA-256 of a
// registered COSE statement. Only seals/registered statements go in.
// The Merkle tree is RFC 6962: leaf hash = SHA-256(0x00 || entry), see
// LeafHash.
//
// What Log gives callers:
//   - Append, which blocks until the entry is durably sequenced, integrated
//     and covered by a published signed checkpoint, and returns the index and
//     that checkpoint (so the caller can hand out a receipt with an inclusion
//     proof straight away);
//   - inclusion and consistency proofs and entry read-back, built from the
//     local tiles with Tessera's client.ProofBuilder;
//   - Handler, a read-only, path-traversal-proof HTTP handler for the
//     tlog-tiles read API (GET /checkpoint, /tile/<L>/<N>, /tile/entries/<N>);
//   - VerifyCheckpoint for callers holding only the verifier key.
//
// Behaviour callers must know:
//   - Durability: Tessera's POSIX driver writes every file through a temporary
//     file opened O_SYNC, renames it into place and fsyncs the directory, and
//     sequencing and integration happen together. An index is only returned
//     once its entry bundle, tiles and tree state are on disk, so acknowledged
//     entries survive a crash; entries still in the in-memory batch (at most
//     BatchMaxAge old) when the process dies were never acknowledged and are
//     lost. Open on the same directory resumes the log.
//   - Checkpoint timing: a new checkpoint is published at most once per
//     CheckpointInterval (Tessera skips publishing while the current checkpoint
//     file is younger than the interval), so Append latency is roughly
//     BatchMaxAge plus up to one CheckpointInterval. Tessera's minimum interval
//     for POSIX is 100ms.
//   - Deduplication is Tessera's in-memory antispam only (an LRU of
//     tessera.DefaultAntispamInMemorySize entries): appending the same 32
//     bytes again while it is remembered returns the earlier index. It is best
//     effort and forgets on restart; callers needing exact deduplication must
//     keep their own statement-hash index (the persistent Badger antispam of
//     Tessera would add a dependency this module does not carry).
//   - Cancelling Append's context abandons the wait, not the append: the entry
//     may still be sequenced and published. Retrying the same entry is safe
//     while the dedup cache remembers it.
//   - Pushback: at most Options.PushbackMaxOutstanding appends may be waiting
//     at once; beyond that Append fails fast with ErrPushback (answer 503 with
//     Retry-After).
//   - Close stops new appends, waits for in-flight appends to be published and
//     then runs Tessera's shutdown; only one Log may use a directory at a time
//     within a process.
//
// Witnesses: with Options.Witnesses every checkpoint goes to the witnesses of a
// tlog-policy (C2SP tlog-witness, through Tessera's WithWitnesses) and is published
// with their cosignatures; WitnessConfig documents fail-open and fail-closed.
//
// Not done here (yet): mirroring, and any write API over HTTP.
package tilelog
