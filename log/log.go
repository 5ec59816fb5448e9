package log

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	tlog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/api"
	"github.com/transparency-dev/tessera/api/layout"
	"github.com/transparency-dev/tessera/client"
	"github.com/transparency-dev/tessera/storage/posix"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/tlogpolicy"
)

const (
	// EntrySize is the size of every log entry: a SHA-256 hash.
	EntrySize = sha256.Size
	// DefaultCheckpointInterval is used when Options.CheckpointInterval is zero.
	DefaultCheckpointInterval = time.Second
	// DefaultBatchMaxAge is used when Options.BatchMaxAge is zero.
	DefaultBatchMaxAge = 100 * time.Millisecond
	// MinCheckpointInterval is the smallest interval Tessera's POSIX driver accepts.
	MinCheckpointInterval = 100 * time.Millisecond
)

var (
	// ErrPushback is returned by Append when the log is overloaded. Callers
	// should answer 503 with a Retry-After header. Tessera's own
	// tessera.ErrPushback is wrapped by it too.
	ErrPushback = errors.New("log: pushback, retry later")
	// ErrClosed is returned by Append once Close has been called.
	ErrClosed = errors.New("log: closed")
	// ErrInvalidEntry is returned by Append for entries that are not EntrySize bytes.
	ErrInvalidEntry = errors.New("log: invalid entry")
	// ErrBeyondPublished is returned when an index or tree size is not covered
	// by the latest published checkpoint.
	ErrBeyondPublished = errors.New("log: beyond the published checkpoint")
	// ErrNoCheckpoint is returned (wrapping fs.ErrNotExist) when no checkpoint
	// has been published yet.
	ErrNoCheckpoint = fmt.Errorf("log: no checkpoint published yet: %w", fs.ErrNotExist)
)

// Options configures Open.
type Options struct {
	// Dir is the directory of the POSIX tile log (the embedded default). It is created
	// if missing. Unused when AWS is set.
	Dir string
	// AWS, when set, runs the log on Tessera's AWS driver in its non-AWS mode (a
	// MySQL-compatible database and an S3-compatible object store) instead of the POSIX
	// directory; several processes may then share the log. See AWSOptions.
	AWS *AWSOptions
	// Signer signs checkpoints; the log origin is Signer.Name().
	Signer note.Signer
	// VerifierKey is the verifier key of Signer. It may be left empty when
	// Signer came from LoadOrCreateKey or NewSigner.
	VerifierKey string
	// AdditionalSigners also sign every checkpoint (e.g. during key rotation).
	// Their names must equal the origin.
	AdditionalSigners []note.Signer
	// CheckpointInterval is how often a new checkpoint may be published
	// (default DefaultCheckpointInterval, minimum MinCheckpointInterval).
	CheckpointInterval time.Duration
	// BatchMaxAge is the longest an entry waits in memory before its batch is
	// sequenced (default DefaultBatchMaxAge).
	BatchMaxAge time.Duration
	// BatchMaxSize is the largest sequencing batch (default tessera.DefaultBatchMaxSize).
	BatchMaxSize uint
	// PushbackMaxOutstanding bounds the number of Append calls waiting for
	// publication; further calls fail with ErrPushback (default
	// tessera.DefaultPushbackMaxOutstanding).
	PushbackMaxOutstanding uint
	// Logger receives operational logs (default slog.Default()).
	Logger *slog.Logger
	// Witnesses, when set, makes every checkpoint go to external witnesses before it is
	// published (see WitnessConfig for fail-open and fail-closed).
	Witnesses *WitnessConfig
}

// Log is a transparency log on one of Tessera's drivers (POSIX, or S3 and MySQL) with
// signed-note checkpoints.
// Its methods are safe for concurrent use.
type Log struct {
	origin             string
	vkey               string
	verifier           note.Verifier
	checkpointInterval time.Duration
	logger             *slog.Logger

	appender *tessera.Appender
	reader   tessera.LogReader
	shutdown func(context.Context) error
	awaiter  *tessera.PublicationAwaiter
	poll     time.Duration // how often waits re-read the log's state (find.go)

	bgCtx    context.Context
	bgCancel context.CancelFunc

	mu             sync.RWMutex // guards closed; held (R) while registering in-flight appends
	closed         bool
	inflight       sync.WaitGroup
	outstanding    atomic.Int64
	maxOutstanding int64

	closeOnce sync.Once
	closeErr  error
	dirKey    string
	tiles     tileStore // the log directory (POSIX) or the bucket (AWS), for Handler

	witnessPolicy *tlogpolicy.Policy // verifier-side witness policy; nil without witnesses
	pqVKey        string             // ML-DSA-44 verifier key of an additional signer (mldsa.go); "" without
}

// openDirs prevents two Logs in one process from using the same directory:
// Tessera's POSIX driver serialises writers with fcntl locks, which do not
// exclude each other within a single process.
var (
	openDirsMu sync.Mutex
	openDirs   = map[string]bool{}
)

// Open opens (creating if needed) the log in o.Dir and starts Tessera's
// background sequencing and publishing. If the directory already holds a
// checkpoint, its origin must equal o.Signer.Name() and it must verify with
// the configured key(s); otherwise Open refuses to start.
//
// ctx only bounds Open itself; the log runs until Close.
func Open(ctx context.Context, o Options) (*Log, error) {
	if o.Dir == "" && o.AWS == nil {
		return nil, errors.New("log: Options.Dir (or Options.AWS) is required")
	}
	if o.Signer == nil {
		return nil, errors.New("log: Options.Signer is required")
	}
	if o.CheckpointInterval == 0 {
		o.CheckpointInterval = DefaultCheckpointInterval
	}
	if o.CheckpointInterval < MinCheckpointInterval {
		return nil, fmt.Errorf("log: CheckpointInterval %v is below the minimum %v", o.CheckpointInterval, MinCheckpointInterval)
	}
	if o.AWS != nil && o.CheckpointInterval < MinAWSCheckpointInterval {
		return nil, fmt.Errorf("log: CheckpointInterval %v is below the AWS driver's minimum %v", o.CheckpointInterval, MinAWSCheckpointInterval)
	}
	if o.BatchMaxAge <= 0 {
		o.BatchMaxAge = DefaultBatchMaxAge
	}
	if o.BatchMaxSize == 0 {
		o.BatchMaxSize = tessera.DefaultBatchMaxSize
	}
	if o.PushbackMaxOutstanding == 0 {
		o.PushbackMaxOutstanding = tessera.DefaultPushbackMaxOutstanding
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	origin := o.Signer.Name()

	verifier, vkey, err := primaryVerifier(o)
	if err != nil {
		return nil, err
	}
	verifiers := []note.Verifier{verifier}
	for _, s := range o.AdditionalSigners {
		if s.Name() != origin {
			return nil, fmt.Errorf("log: additional signer name %q differs from origin %q", s.Name(), origin)
		}
		if ks, ok := s.(interface{ VerifierKey() string }); ok {
			if v, err := note.NewVerifier(ks.VerifierKey()); err == nil {
				verifiers = append(verifiers, v)
			}
		}
	}

	if o.AWS != nil {
		return openAWS(ctx, o, origin, verifier, vkey, verifiers)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("log: creating log directory: %w", err)
	}
	dirKey, err := filepath.Abs(o.Dir)
	if err == nil {
		dirKey, err = filepath.EvalSymlinks(dirKey)
	}
	if err != nil {
		return nil, fmt.Errorf("log: resolving log directory: %w", err)
	}
	openDirsMu.Lock()
	if openDirs[dirKey] {
		openDirsMu.Unlock()
		return nil, fmt.Errorf("log: directory %s is already open in this process", o.Dir)
	}
	openDirs[dirKey] = true
	openDirsMu.Unlock()
	release := func() {
		openDirsMu.Lock()
		delete(openDirs, dirKey)
		openDirsMu.Unlock()
	}

	if err := checkPublishedCheckpoint(ctx, dirStore(o.Dir), origin, verifiers); err != nil {
		release()
		return nil, err
	}

	// Background work must outlive Open's ctx; keep its values only.
	bgCtx, bgCancel := context.WithCancel(context.WithoutCancel(ctx))
	fail := func(err error) (*Log, error) {
		bgCancel()
		release()
		return nil, err
	}
	hc, err := witnessClient(o.Witnesses, nil)
	if err != nil {
		return fail(err)
	}
	driver, err := posix.New(bgCtx, posix.Config{Path: o.Dir, HTTPClient: hc})
	if err != nil {
		return fail(fmt.Errorf("log: posix driver: %w", err))
	}
	l, err := start(ctx, bgCtx, bgCancel, driver, o, origin, verifier, vkey, dirStore(o.Dir))
	if err != nil {
		return fail(err)
	}
	l.dirKey = dirKey
	return l, nil
}

// openAWS is Open on Tessera's AWS driver.
func openAWS(ctx context.Context, o Options, origin string, verifier note.Verifier, vkey string, verifiers []note.Verifier) (*Log, error) {
	hc, err := witnessClient(o.Witnesses, o.AWS.HTTPClient)
	if err != nil {
		return nil, err
	}
	bgCtx, bgCancel := context.WithCancel(context.WithoutCancel(ctx))
	driver, obj, err := awsDriver(ctx, o.AWS, hc)
	if err != nil {
		bgCancel()
		return nil, err
	}
	if err := checkPublishedCheckpoint(ctx, obj, origin, verifiers); err != nil {
		bgCancel()
		return nil, err
	}
	l, err := start(ctx, bgCtx, bgCancel, driver, o, origin, verifier, vkey, obj)
	if err != nil {
		bgCancel()
		return nil, err
	}
	return l, nil
}

// start runs Tessera's appender lifecycle on driver; it is the same for every driver.
func start(ctx, bgCtx context.Context, bgCancel context.CancelFunc, driver tessera.Driver, o Options, origin string, verifier note.Verifier, vkey string, tiles tileStore) (*Log, error) {
	persistent, err := persistentAntispam(ctx, o.AWS)
	if err != nil {
		return nil, err
	}
	opts := tessera.NewAppendOptions().
		WithCheckpointSigner(o.Signer, o.AdditionalSigners...).
		WithCheckpointInterval(o.CheckpointInterval).
		WithBatching(o.BatchMaxSize, o.BatchMaxAge).
		WithPushback(o.PushbackMaxOutstanding).
		// See "Deduplication" in the package doc.
		WithAntispam(tessera.DefaultAntispamInMemorySize, persistent)
	var wpol *tlogpolicy.Policy
	if o.Witnesses != nil {
		group, wopts, p, err := witnessOptions(o.Witnesses)
		if err != nil {
			return nil, err
		}
		opts, wpol = opts.WithWitnesses(group, wopts), p
	}
	appender, shutdown, reader, err := tessera.NewAppender(bgCtx, driver, opts)
	if err != nil {
		return nil, fmt.Errorf("log: tessera appender: %w", err)
	}
	if _, onBucket := tiles.(*objectStore); onBucket {
		reader = awsReader{reader}
	}
	poll := min(max(o.CheckpointInterval/10, 5*time.Millisecond), 100*time.Millisecond)
	l := &Log{
		origin:             origin,
		vkey:               vkey,
		verifier:           verifier,
		checkpointInterval: o.CheckpointInterval,
		logger:             o.Logger,
		appender:           appender,
		reader:             reader,
		shutdown:           shutdown,
		awaiter:            tessera.NewPublicationAwaiter(bgCtx, reader.ReadCheckpoint, poll),
		poll:               poll,
		bgCtx:              bgCtx,
		bgCancel:           bgCancel,
		maxOutstanding:     int64(o.PushbackMaxOutstanding),
		tiles:              tiles,
		witnessPolicy:      wpol,
		pqVKey:             postQuantumVKey(o.AdditionalSigners),
	}
	size, _ := l.Size(ctx)
	l.logger.Info("transparency log opened", "origin", origin, "size", size,
		"checkpoint_interval", o.CheckpointInterval, "batch_max_age", o.BatchMaxAge)
	return l, nil
}

// primaryVerifier works out the verifier for o.Signer and checks that the two
// belong together.
func primaryVerifier(o Options) (note.Verifier, string, error) {
	vkey := o.VerifierKey
	if vkey == "" {
		ks, ok := o.Signer.(interface{ VerifierKey() string })
		if !ok {
			return nil, "", errors.New("log: Options.VerifierKey is required for signers not made by LoadOrCreateKey/NewSigner")
		}
		vkey = ks.VerifierKey()
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, "", fmt.Errorf("log: parsing verifier key: %w", err)
	}
	if v.Name() != o.Signer.Name() || v.KeyHash() != o.Signer.KeyHash() {
		return nil, "", fmt.Errorf("%w: verifier key %q does not belong to signer %q", ErrKeyMismatch, vkey, o.Signer.Name())
	}
	msg := []byte("evident log key self-check\n")
	sig, err := o.Signer.Sign(msg)
	if err != nil {
		return nil, "", fmt.Errorf("log: signer self-check: %w", err)
	}
	if !v.Verify(msg, sig) {
		return nil, "", fmt.Errorf("%w: signer and verifier key do not match", ErrKeyMismatch)
	}
	return v, vkey, nil
}

// checkPublishedCheckpoint refuses to reuse a log whose published checkpoint is for
// another origin or signed by another key; a log that has published none passes.
func checkPublishedCheckpoint(ctx context.Context, tiles tileStore, origin string, verifiers []note.Verifier) error {
	raw, _, err := tiles.read(ctx, layout.CheckpointPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("log: reading existing checkpoint: %w", err)
	}
	return checkCheckpoint(raw, origin, verifiers)
}

// checkCheckpoint refuses a published checkpoint of another origin or key.
func checkCheckpoint(raw []byte, origin string, verifiers []note.Verifier) error {
	var cp tlog.Checkpoint
	if _, err := cp.Unmarshal(raw); err != nil {
		return fmt.Errorf("log: existing checkpoint in log directory is malformed: %w", err)
	}
	if cp.Origin != origin {
		return fmt.Errorf("%w: log directory holds a log with origin %q, not %q", ErrKeyMismatch, cp.Origin, origin)
	}
	if _, err := note.Open(raw, note.VerifierList(verifiers...)); err != nil {
		return fmt.Errorf("%w: existing checkpoint of %q is not signed by the configured key (to rotate keys, keep the old key as an additional signer): %v", ErrKeyMismatch, origin, err)
	}
	return nil
}

// Origin returns the log's origin line (the signer name).
func (l *Log) Origin() string { return l.origin }

// Verifier returns the note verifier for the log's checkpoints.
func (l *Log) Verifier() note.Verifier { return l.verifier }

// VerifierKey returns the log's verifier key ("<origin>+<hash>+<base64>").
func (l *Log) VerifierKey() string { return l.vkey }

// Append adds one EntrySize-byte entry and waits until a checkpoint covering
// it is published. It returns the entry's index and that checkpoint (a raw
// signed note). If the same entry was appended recently, the earlier index is
// returned. Overload yields an error wrapping ErrPushback; ctx cancellation
// returns ctx.Err() promptly (the entry may still be appended).
func (l *Log) Append(ctx context.Context, entry []byte) (index uint64, checkpoint []byte, err error) {
	if len(entry) != EntrySize {
		return 0, nil, fmt.Errorf("%w: %d bytes, want %d", ErrInvalidEntry, len(entry), EntrySize)
	}
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}

	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return 0, nil, ErrClosed
	}
	if l.outstanding.Add(1) > l.maxOutstanding {
		l.outstanding.Add(-1)
		l.mu.RUnlock()
		return 0, nil, fmt.Errorf("%w: %d appends outstanding", ErrPushback, l.maxOutstanding)
	}
	l.inflight.Add(1)
	future := l.appender.Add(ctx, tessera.NewEntry(bytes.Clone(entry)))
	l.mu.RUnlock()

	type result struct {
		idx tessera.Index
		cp  []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		idx, cp, err := l.awaiter.Await(ctx, future)
		// Release the slot before answering: a caller that gets its answer and appends again
		// must not be pushed back by its own finished append.
		l.outstanding.Add(-1)
		l.inflight.Done()
		done <- result{idx, cp, err}
	}()

	select {
	case r := <-done:
		if r.err != nil {
			return 0, nil, l.mapErr(ctx, r.err)
		}
		return r.idx.Index, bytes.Clone(r.cp), nil
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	case <-l.bgCtx.Done():
		return 0, nil, ErrClosed
	}
}

func (l *Log) mapErr(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, tessera.ErrPushback):
		return fmt.Errorf("%w: %w", ErrPushback, err)
	case ctx.Err() != nil:
		return ctx.Err()
	case l.bgCtx.Err() != nil:
		return ErrClosed
	default:
		return fmt.Errorf("log: append: %w", err)
	}
}

// Checkpoint returns the latest published checkpoint (a raw signed note).
func (l *Log) Checkpoint(ctx context.Context) ([]byte, error) {
	raw, err := l.reader.ReadCheckpoint(ctx)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoCheckpoint
	}
	if err != nil {
		return nil, fmt.Errorf("log: reading checkpoint: %w", err)
	}
	return raw, nil
}

// latest returns the parsed, verified latest published checkpoint.
func (l *Log) latest(ctx context.Context) (*tlog.Checkpoint, error) {
	raw, err := l.Checkpoint(ctx)
	if err != nil {
		return nil, err
	}
	return l.parse(raw)
}

// parse verifies a checkpoint the log published.
func (l *Log) parse(raw []byte) (*tlog.Checkpoint, error) {
	cp, _, _, err := tlog.ParseCheckpoint(raw, l.origin, l.verifier)
	if err != nil {
		return nil, fmt.Errorf("log: published checkpoint does not verify: %w", err)
	}
	return cp, nil
}

// Size returns the tree size of the latest published checkpoint.
func (l *Log) Size(ctx context.Context) (uint64, error) {
	cp, err := l.latest(ctx)
	if err != nil {
		return 0, err
	}
	return cp.Size, nil
}

// readTile fetches a hash tile for proof building. Besides Tessera's
// partial-then-full fallback it also tries the right-edge partial tile of the
// current tree: the first nodes of a tile never change, so a wider partial
// tile serves any narrower tree size that was never an integration point.
func (l *Log) readTile(ctx context.Context, level, index uint64, p uint8) ([]byte, error) {
	return l.readWidening(ctx, level, index, p, func(w uint8) ([]byte, error) {
		return l.reader.ReadTile(ctx, level, index, w)
	})
}

// readEntryBundle is readTile's counterpart for entry bundles.
func (l *Log) readEntryBundle(ctx context.Context, index uint64, p uint8) ([]byte, error) {
	return l.readWidening(ctx, 0, index, p, func(w uint8) ([]byte, error) {
		return l.reader.ReadEntryBundle(ctx, index, w)
	})
}

// readWidening returns read(p); when that object does not exist, it reads the wider
// partial width that tile (level, index) has in the current tree instead.
func (l *Log) readWidening(ctx context.Context, level, index uint64, p uint8, read func(width uint8) ([]byte, error)) ([]byte, error) {
	b, err := read(p)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return b, err
	}
	size, serr := l.reader.IntegratedSize(ctx)
	if serr != nil {
		return nil, err
	}
	if q := layout.PartialTileSize(level, index, size); q > p {
		return read(q)
	}
	return nil, err
}

// InclusionProof returns the RFC 6962 inclusion proof of the entry at index in
// the tree of the given size, built from the local tiles. size must not exceed
// the latest published checkpoint's size.
func (l *Log) InclusionProof(ctx context.Context, index, size uint64) ([][]byte, error) {
	if index >= size {
		return nil, fmt.Errorf("log: index %d is not below tree size %d", index, size)
	}
	pub, err := l.Size(ctx)
	if err != nil {
		return nil, err
	}
	if size > pub {
		return nil, fmt.Errorf("%w: tree size %d > published size %d", ErrBeyondPublished, size, pub)
	}
	pb, err := client.NewProofBuilder(ctx, size, l.readTile)
	if err != nil {
		return nil, fmt.Errorf("log: proof builder: %w", err)
	}
	p, err := pb.InclusionProof(ctx, index)
	if err != nil {
		return nil, fmt.Errorf("log: inclusion proof: %w", err)
	}
	return p, nil
}

// ConsistencyProof returns the RFC 6962 consistency proof between tree sizes
// from and to (from <= to <= published size). It is empty when from is 0 or
// equals to.
func (l *Log) ConsistencyProof(ctx context.Context, from, to uint64) ([][]byte, error) {
	if from > to {
		return nil, fmt.Errorf("log: consistency from %d to smaller size %d", from, to)
	}
	pub, err := l.Size(ctx)
	if err != nil {
		return nil, err
	}
	if to > pub {
		return nil, fmt.Errorf("%w: tree size %d > published size %d", ErrBeyondPublished, to, pub)
	}
	pb, err := client.NewProofBuilder(ctx, to, l.readTile)
	if err != nil {
		return nil, fmt.Errorf("log: proof builder: %w", err)
	}
	p, err := pb.ConsistencyProof(ctx, from, to)
	if err != nil {
		return nil, fmt.Errorf("log: consistency proof: %w", err)
	}
	return p, nil
}

// Entry reads the entry at index back from the entry bundles. index must be
// covered by the latest published checkpoint.
func (l *Log) Entry(ctx context.Context, index uint64) ([]byte, error) {
	pub, err := l.Size(ctx)
	if err != nil {
		return nil, err
	}
	if index >= pub {
		return nil, fmt.Errorf("%w: index %d, published size %d", ErrBeyondPublished, index, pub)
	}
	bi := index / layout.EntryBundleWidth
	raw, err := l.readEntryBundle(ctx, bi, layout.PartialTileSize(0, bi, pub))
	if err != nil {
		return nil, fmt.Errorf("log: reading entry bundle %d: %w", bi, err)
	}
	var b api.EntryBundle
	if err := b.UnmarshalText(raw); err != nil {
		return nil, fmt.Errorf("log: parsing entry bundle %d: %w", bi, err)
	}
	off := index % layout.EntryBundleWidth
	if off >= uint64(len(b.Entries)) {
		return nil, fmt.Errorf("log: entry bundle %d has %d entries, want index %d", bi, len(b.Entries), off)
	}
	return bytes.Clone(b.Entries[off]), nil
}

// Close stops accepting appends, waits (bounded by ctx) for in-flight appends
// to be published, runs Tessera's shutdown (which waits for a checkpoint
// covering every index it handed out) and stops the background work. It is
// safe to call more than once; later calls return the first result.
func (l *Log) Close(ctx context.Context) error {
	l.closeOnce.Do(func() { l.closeErr = l.close(ctx) })
	return l.closeErr
}

func (l *Log) close(ctx context.Context) error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	defer func() {
		l.bgCancel()
		if l.dirKey != "" {
			openDirsMu.Lock()
			delete(openDirs, l.dirKey)
			openDirsMu.Unlock()
		}
	}()

	drained := make(chan struct{})
	go func() {
		l.inflight.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-ctx.Done():
		return fmt.Errorf("log: close: waiting for in-flight appends: %w", ctx.Err())
	}
	if err := l.shutdown(ctx); err != nil {
		return fmt.Errorf("log: close: tessera shutdown: %w", err)
	}
	l.logger.Info("transparency log closed", "origin", l.origin)
	return nil
}

// VerifyCheckpoint verifies a raw checkpoint's signed-note signature with the
// verifier key vkey and parses it. The checkpoint origin must equal the key
// name.
func VerifyCheckpoint(raw []byte, vkey string) (*tlog.Checkpoint, error) {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("log: parsing verifier key: %w", err)
	}
	cp, _, _, err := tlog.ParseCheckpoint(raw, v.Name(), v)
	if err != nil {
		return nil, fmt.Errorf("log: verifying checkpoint: %w", err)
	}
	return cp, nil
}

// LeafHash returns the RFC 6962 Merkle leaf hash of an entry,
// SHA-256(0x00 || entry), as used in inclusion proofs.
func LeafHash(entry []byte) []byte {
	return rfc6962.DefaultHasher.HashLeaf(entry)
}
