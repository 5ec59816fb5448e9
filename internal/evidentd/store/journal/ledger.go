// Package journal puts a write-ahead journal of entries in front of a ledger store, so
// that a commit costs one append and one fsync of a file instead of a database
// transaction that touches a page of every index of every chain it writes.
//
// Ledger.CommitGroup checks each batch as the store would (the chain's size, its links and
// record ids unused), appends the group to the journal (log.go, one frame) and fsyncs it:
// the batches are then durable, and every read of the Ledger sees them. A background
// indexer folds the journaled frames into the store behind, many at a time, in one
// transaction each. After a crash, Open folds in whatever the journal holds that the store
// does not (a frame is applied at most once: a chain's size in the store says which of its
// batches it holds), then deletes the journal's old segments.
//
// The Ledger must be the only writer of its store: one process, one Ledger. Open takes an
// exclusive lock on the journal's directory to make sure of it.
package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// Inner is the store behind the journal.
type Inner interface {
	store.Store
	// CommitAll commits every batch in one transaction: all of them, or none and an error.
	CommitAll(ctx context.Context, batches []store.Batch) error
	// UsedRecordIDs returns, of keys, those whose chain holds an entry with the record id,
	// with that entry's seq.
	UsedRecordIDs(ctx context.Context, keys []store.ChainRecordID) (map[store.ChainRecordID]uint64, error)
	// EachRecordID calls fn with every (chain, record id) the store holds, up to n at a
	// time, until fn fails.
	EachRecordID(ctx context.Context, n int, fn func([]store.ChainRecordID) error) error
}

// Options tune a Ledger; the zero value is the default.
type Options struct {
	// SegmentBytes is the size from which the journal starts a new segment file (default
	// 64 MiB). A segment is deleted once the store holds all of it.
	SegmentBytes int64
	// MaxPending and MaxPendingBytes bound the entries journaled but not yet in the store,
	// in number (default 65,536) and in the memory their frames are kept in (default
	// 256 MiB): past either, commits wait for them to be folded in.
	MaxPending      int
	MaxPendingBytes int
	// Gather is how long the indexer lets frames gather before folding them in, unless
	// ApplyEntries of them are waiting already (default 250 ms). The longer, the more
	// entries of a chain share the pages one store transaction writes.
	Gather time.Duration
	// ApplyEntries bounds the entries of one store transaction of the indexer (default
	// 8,192).
	ApplyEntries int
	// Logger receives the indexer's errors (default slog.Default()).
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = 64 << 20
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 1 << 16
	}
	if o.MaxPendingBytes <= 0 {
		o.MaxPendingBytes = 256 << 20
	}
	if o.Gather <= 0 {
		o.Gather = 250 * time.Millisecond
	}
	if o.ApplyEntries <= 0 {
		o.ApplyEntries = 8192
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Ledger is a store.Store whose commits go to the journal first. Its methods other than
// those of store.Store and store.GroupCommitter are the inner store's.
type Ledger struct {
	inner Inner
	log   *Log
	lock  func() error // releases the directory lock
	o     Options

	// mu orders commits and seals: the checks, the append and the overlay's update of one
	// group happen before those of the next.
	mu sync.Mutex

	// The overlay: what the journal holds and the store does not yet.
	ov      sync.RWMutex
	frames  []pending
	chains  map[string]*overlaid
	entries int // entries in frames
	bytes   int // bytes of their payloads' buffers (capacity: what they hold in memory)
	// Under ov too: the sizes of chains the overlay no longer holds, and record ids known
	// to be unused in a chain at a size.
	sizes  sizeCache
	absent absentCache
	// ids is the filter of the record ids held (idfilter.go), filled from the store by
	// loadIDs, which closes loaded when it is done.
	ids    *idFilter
	loaded chan struct{}

	// applyMu is held while frames are folded into the store.
	applyMu sync.Mutex
	applied uint64 // the last frame the store holds
	failed  bool   // the last fold failed: the store may hold it nonetheless

	kick   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// sizeCache remembers chains' sizes, heads and creation times, so that a commit need not
// read its chain from the store: the Ledger is its store's only writer, so what it wrote
// last is what the store holds. It forgets everything when it holds maxCachedSizes chains.
type sizeCache map[string]cachedChain

type cachedChain struct {
	size    uint64
	head    ledger.Link
	created time.Time
}

const maxCachedSizes = 1 << 16

func (c *sizeCache) get(id string) (cachedChain, bool) {
	v, ok := (*c)[id]
	return v, ok
}

// put remembers the chain's size, head and creation time; a zero time (a commit of the
// chain's state alone names none) keeps the one remembered, which never changes.
func (c *sizeCache) put(id string, size uint64, head ledger.Link, created time.Time) {
	if *c == nil || len(*c) >= maxCachedSizes {
		*c = sizeCache{}
	}
	if old, ok := (*c)[id]; ok && created.IsZero() {
		created = old.created
	}
	(*c)[id] = cachedChain{size, head, created}
}

// absentCache remembers record ids that a lookup found unused in a chain, with the chain's
// size then: a record id becomes used only by a commit to its chain, which makes the chain
// longer, so while the chain has that size the id is still unused and a commit need not look
// it up again (the ingest pipeline looks a batch's first id up just before committing it).
// It forgets everything when it holds maxCachedSizes ids.
type absentCache map[store.ChainRecordID]uint64

func (c *absentCache) put(k store.ChainRecordID, size uint64) {
	if *c == nil || len(*c) >= maxCachedSizes {
		*c = absentCache{}
	}
	(*c)[k] = size
}

// pending is a journaled frame the store does not hold yet.
type pending struct {
	n       uint64
	payload []byte
	entries int
}

// overlaid is a chain as the journal left it.
type overlaid struct {
	rec   store.ChainRecord
	frame uint64 // the last frame that wrote it
	links map[ledger.Link]at
	ids   map[string]at
}

type at struct{ seq, frame uint64 }

var (
	_ store.Store          = (*Ledger)(nil)
	_ store.GroupCommitter = (*Ledger)(nil)
)

// Open opens the journal in dir (creating it) in front of inner, folds into inner what the
// journal holds that inner does not, and starts the indexer.
func Open(ctx context.Context, dir string, inner Inner, o Options) (*Ledger, error) {
	o.defaults()
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	log, payloads, torn, err := openLog(dir, o.SegmentBytes)
	if err != nil {
		unlock()
		return nil, err
	}
	if torn > 0 {
		o.Logger.Warn("journal: cut off a torn frame (an append a crash interrupted, never acknowledged)", "bytes", torn)
	}
	l := &Ledger{inner: inner, log: log, lock: unlock, o: o, chains: map[string]*overlaid{}, kick: make(chan struct{}, 1), done: make(chan struct{}),
		loaded: make(chan struct{})}
	l.ids = newIDFilter(func(pairs int) {
		o.Logger.Warn("journal: the filter of unused record ids outgrew its memory bound and is off; every record id is looked up in the store", "ids", pairs, "bound_mib", maxFilterBytes>>20)
	})
	err = l.recover(ctx, payloads)
	if err == nil {
		err = log.start()
	}
	if err != nil {
		log.Close()
		unlock()
		return nil, err
	}
	bg, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go l.index(bg)
	go l.loadIDs(bg)
	return l, nil
}

// loadIDs adds the record ids the store holds to the filter of record ids, which answers
// from then on. The ids journaled meanwhile are added as they are journaled (overlay), so
// none is missed: the store held every id journaled before Open when this started.
func (l *Ledger) loadIDs(ctx context.Context) {
	defer close(l.loaded)
	start, n := time.Now(), 0
	err := l.inner.EachRecordID(ctx, 4096, func(keys []store.ChainRecordID) error {
		l.ov.Lock()
		defer l.ov.Unlock()
		for _, k := range keys {
			l.ids.add(k)
		}
		n += len(keys)
		if l.ids.off {
			return errFilterOff // it will not answer: the rest of the scan is of no use
		}
		return ctx.Err()
	})
	switch {
	case errors.Is(err, errFilterOff):
		return // the filter said so in the log when it switched off
	case err != nil:
		l.ov.Lock()
		l.ids.switchOff() // it will not answer: let its memory go
		l.ov.Unlock()
		if ctx.Err() == nil {
			l.o.Logger.Warn("journal: reading the record ids failed; every record id is looked up in the store", "err", err)
		}
		return
	}
	l.ov.Lock()
	l.ids.ready = true
	mib := float64(l.ids.bytes()) / (1 << 20)
	l.ov.Unlock()
	l.o.Logger.Info("journal: record ids read into the filter of unused ids", "ids", n, "mib", fmt.Sprintf("%.1f", mib), "took", time.Since(start).Round(time.Millisecond))
}

// errFilterOff stops the scan of loadIDs once the filter has switched itself off.
var errFilterOff = errors.New("the filter of record ids is off")

// recover folds the batches of payloads (the journal's frames, in order) that inner does
// not hold into it, then deletes the segments they were in.
func (l *Ledger) recover(ctx context.Context, payloads [][]byte) error {
	if len(payloads) == 0 {
		return nil
	}
	var all []store.Batch
	for i, p := range payloads {
		batches, err := decode(p)
		if err != nil {
			return fmt.Errorf("journal frame %d: %w", i+1, err)
		}
		all = append(all, batches...)
	}
	todo, err := l.unheld(ctx, all)
	if err != nil {
		return fmt.Errorf("journal recovery: %w", err)
	}
	for len(todo) > 0 {
		n, count := 0, 0
		for n < len(todo) && (n == 0 || count < l.o.ApplyEntries) {
			count += len(todo[n].Entries)
			n++
		}
		if err := l.inner.CommitAll(ctx, merge(todo[:n])); err != nil {
			return fmt.Errorf("journal recovery: %w", err)
		}
		todo = todo[n:]
	}
	l.applied = l.log.Frames()
	return l.log.Release(l.applied)
}

// unheld returns those of batches (in commit order, several of a chain each going on from
// the one before) that the store does not hold: a chain's size in the store says which of
// its batches it holds, since a fold writes batches whole and in order.
func (l *Ledger) unheld(ctx context.Context, batches []store.Batch) ([]store.Batch, error) {
	sizes := map[string]uint64{}
	var out []store.Batch
	for _, b := range batches {
		id := b.Chain.ID
		size, ok := sizes[id]
		if !ok {
			c, err := l.inner.LoadChain(ctx, id)
			switch {
			case errors.Is(err, store.ErrNotFound):
			case err != nil:
				return nil, err
			default:
				size = c.Size
			}
		}
		switch {
		case b.Chain.Size <= size:
			// The store holds this batch already.
		case b.PrevSize == size:
			out = append(out, b)
			size = b.Chain.Size
		default:
			return nil, fmt.Errorf("chain %q goes from size %d in the journal, but the store holds it at %d: %w", id, b.PrevSize, size, ErrCorrupt)
		}
		sizes[id] = size
	}
	return out, nil
}

// merge joins the batches of each chain (in order, each from where the one before left
// the chain) into one batch per chain, with entries of its own.
func merge(batches []store.Batch) []store.Batch {
	at := map[string]int{}
	var out []store.Batch
	for _, b := range batches {
		i, ok := at[b.Chain.ID]
		if !ok {
			i = len(out)
			at[b.Chain.ID] = i
			out = append(out, store.Batch{PrevSize: b.PrevSize})
		}
		out[i].Chain = b.Chain
		out[i].Entries = append(out[i].Entries, b.Entries...)
	}
	return out
}

// Commit implements store.Store.
func (l *Ledger) Commit(ctx context.Context, c *store.ChainRecord, prevSize uint64, entries []store.Entry) error {
	return l.CommitGroup(ctx, []store.Batch{{Chain: c, PrevSize: prevSize, Entries: entries}})[0]
}

// CommitGroup implements store.GroupCommitter: the batches that pass the store's checks
// are appended to the journal as one frame, durably, and the others refused.
func (l *Ledger) CommitGroup(ctx context.Context, batches []store.Batch) []error {
	errs := make([]error, len(batches))
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.room(ctx); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	// Each batch on its own, then what the store holds of all of them, in one lookup.
	var ok []int
	seen := map[string]bool{}
	for i, b := range batches {
		id := b.Chain.ID
		var err error
		if seen[id] {
			err = fmt.Errorf("chain %q twice in one group: %w", id, store.ErrConflict)
		} else if len(b.Entries) == 0 {
			// No entry to journal: the chain's state alone, written through.
			if err = l.flush(ctx); err == nil {
				err = l.inner.Commit(ctx, b.Chain, b.PrevSize, nil)
			}
			if err == nil {
				l.ov.Lock()
				l.sizes.put(id, b.Chain.Size, b.Chain.Head, b.Chain.Created)
				l.ov.Unlock()
			}
		} else {
			err = l.check(ctx, b)
		}
		if err != nil {
			errs[i] = fmt.Errorf("commit chain %q: %w", id, err)
			continue
		}
		seen[id] = true
		if len(b.Entries) > 0 {
			ok = append(ok, i)
		}
	}
	if err := l.checkStored(ctx, batches, ok, errs); err != nil {
		for _, i := range ok {
			errs[i] = fmt.Errorf("commit chain %q: %w", batches[i].Chain.ID, err)
		}
		return errs
	}
	var good []store.Batch
	now := time.Now().UTC()
	for _, i := range ok {
		if errs[i] != nil {
			continue
		}
		b := batches[i]
		if b.PrevSize == 0 && b.Chain.Created.IsZero() {
			// A new chain: the frame carries its creation time, so that the store keeps
			// the time it was acknowledged, also when it is folded in after a crash.
			c := *b.Chain
			c.Created = now
			b.Chain = &c
		}
		good = append(good, b)
	}
	if len(good) == 0 {
		return errs
	}
	payload := encode(good)
	n, err := l.log.Append(payload)
	if err != nil {
		for _, i := range ok {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("commit chain %q: %w", batches[i].Chain.ID, err)
			}
		}
		return errs
	}
	l.overlay(n, payload, good)
	select {
	case l.kick <- struct{}{}:
	default:
	}
	return errs
}

// room folds the journal into the store itself, making the caller wait, when more than
// MaxPending entries or MaxPendingBytes bytes of frames are journaled and not yet there.
func (l *Ledger) room(ctx context.Context) error {
	l.ov.RLock()
	full := l.entries > l.o.MaxPending || l.bytes > l.o.MaxPendingBytes
	l.ov.RUnlock()
	if !full {
		return nil
	}
	return l.flush(ctx)
}

// knownSize returns the size of chain id as the overlay or the size cache know it; the
// caller holds ov.
func (l *Ledger) knownSize(id string) (uint64, bool) {
	size, _, ok := l.known(id)
	return size, ok
}

// known returns the size and head of chain id as the overlay or the size cache know them;
// the caller holds ov.
func (l *Ledger) known(id string) (uint64, ledger.Link, bool) {
	if oc := l.chains[id]; oc != nil {
		return oc.rec.Size, oc.rec.Head, true
	}
	cc, ok := l.sizes.get(id)
	return cc.size, cc.head, ok
}

// check returns nil when b may be committed as far as the chain's state, the batch itself
// and the overlay tell: the chain is at b.PrevSize (absent when 0), the batch's entries are
// its next ones (seqs from b.PrevSize on, b.Chain.Size after them), linked after its head
// (each entry's Prev the link before it, the first's the chain's head; each Link the
// ledger.NextLink of its Record after its Prev; b.Chain.Head the last Link), and their
// record ids distinct and not in the overlay. What the store holds of the record ids is
// checkStored's.
//
// Linked so, no link of the batch can be one the chain holds short of a SHA-256 collision:
// a link equal to the link at seq k would make the head equal to the link at seq k-1, and
// so on down to the genesis link. So links are looked up neither in the overlay nor in the
// store, as record ids are; a link that is taken is refused here as one that does not
// follow its predecessor.
func (l *Ledger) check(ctx context.Context, b store.Batch) error {
	id := b.Chain.ID
	l.ov.RLock()
	size, head, exists := l.known(id)
	l.ov.RUnlock()
	if !exists {
		c, err := l.inner.LoadChain(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err
		default:
			exists, size, head = true, c.Size, c.Head
			l.ov.Lock()
			l.sizes.put(id, c.Size, c.Head, c.Created)
			l.ov.Unlock()
		}
	}
	switch {
	case !exists && b.PrevSize != 0:
		return fmt.Errorf("chain %q absent, expected at size %d: %w", id, b.PrevSize, store.ErrConflict)
	case size != b.PrevSize:
		return fmt.Errorf("chain %q at size %d, expected %d: %w", id, size, b.PrevSize, store.ErrConflict)
	}
	if want := b.PrevSize + uint64(len(b.Entries)); b.Chain.Size != want {
		return fmt.Errorf("chain %q: %d entries from size %d make size %d, not %d", id, len(b.Entries), b.PrevSize, want, b.Chain.Size)
	}
	rids := make(map[string]bool)
	prev := head
	for i := range b.Entries {
		e := &b.Entries[i]
		switch {
		case e.Chain != id:
			return fmt.Errorf("an entry of chain %q in the batch of %q", e.Chain, id)
		case e.Seq != b.PrevSize+uint64(i):
			return fmt.Errorf("chain %q: entry %d of the batch has seq %d, want %d: %w", id, i, e.Seq, b.PrevSize+uint64(i), store.ErrConflict)
		case (exists || i > 0) && e.Prev != prev:
			return fmt.Errorf("chain %q: entry at seq %d names predecessor %s, not the link before it, %s: %w", id, e.Seq, e.Prev, prev, store.ErrConflict)
		case e.Link != ledger.NextLink(e.Record, e.Prev):
			return fmt.Errorf("chain %q: entry at seq %d has link %s, not its record's link after its predecessor: %w", id, e.Seq, e.Link, store.ErrConflict)
		case e.RecordID != "" && rids[e.RecordID]:
			return fmt.Errorf("chain %q: record id %.80q twice in the batch: %w", id, e.RecordID, store.ErrConflict)
		}
		prev = e.Link
		if e.RecordID != "" {
			rids[e.RecordID] = true
		}
	}
	if b.Chain.Head != prev {
		return fmt.Errorf("chain %q: head %s is not the batch's last link %s", id, b.Chain.Head, prev)
	}
	l.ov.RLock()
	defer l.ov.RUnlock()
	oc := l.chains[id] // a fold may have taken it out since check began: then the store holds it
	if oc == nil {
		return nil
	}
	for _, e := range b.Entries {
		if p, taken := oc.ids[e.RecordID]; taken && e.RecordID != "" {
			return fmt.Errorf("chain %q: record id %.80q used at seq %d: %w", id, e.RecordID, p.seq, store.ErrConflict)
		}
	}
	return nil
}

// checkStored refuses (in errs) those of batches[ok...] whose record ids the inner store
// holds for their chain, looking all of them up at once (their links need no lookup:
// check). It runs after check: an entry that a fold moves from the overlay to the store in
// between is in the store by now. A chain without entries (b.PrevSize 0) has none to look
// up; neither has a record id a lookup found unused at the chain's present size
// (absentCache). An error is the lookup's.
func (l *Ledger) checkStored(ctx context.Context, batches []store.Batch, ok []int, errs []error) error {
	var ids []store.ChainRecordID
	of := map[string]int{}
	l.ov.RLock()
	for _, i := range ok {
		b := batches[i]
		if b.PrevSize == 0 {
			continue
		}
		of[b.Chain.ID] = i
		for _, e := range b.Entries {
			if e.RecordID == "" {
				continue
			}
			k := store.ChainRecordID{Chain: b.Chain.ID, ID: e.RecordID}
			if size, ok := l.absent[k]; ok && size == b.PrevSize || l.ids.absent(k) {
				continue // unused as far as the chain's size or the filter of ids tell
			}
			ids = append(ids, k)
		}
	}
	l.ov.RUnlock()
	refuse := func(chain string, err error) {
		if i := of[chain]; errs[i] == nil {
			errs[i] = fmt.Errorf("commit chain %q: %w", chain, err)
		}
	}
	if len(ids) > 0 {
		used, err := l.inner.UsedRecordIDs(ctx, ids)
		if err != nil {
			return err
		}
		for k, seq := range used {
			refuse(k.Chain, fmt.Errorf("chain %q: record id %.80q used at seq %d: %w", k.Chain, k.ID, seq, store.ErrConflict))
		}
	}
	return nil
}

// overlay makes frame n (its payload, of batches) visible to reads.
func (l *Ledger) overlay(n uint64, payload []byte, batches []store.Batch) {
	l.ov.Lock()
	defer l.ov.Unlock()
	count := 0
	for _, b := range batches {
		oc := l.chains[b.Chain.ID]
		if oc == nil {
			oc = &overlaid{links: map[ledger.Link]at{}, ids: map[string]at{}}
			l.chains[b.Chain.ID] = oc
		}
		// A chain keeps its creation time: the overlay's, the cache's (from the store), or
		// the new chain's own.
		created := oc.rec.Created
		if cc, ok := l.sizes.get(b.Chain.ID); ok && created.IsZero() {
			created = cc.created
		}
		oc.rec = *b.Chain
		oc.rec.Tree, oc.rec.State = bytes.Clone(b.Chain.Tree), bytes.Clone(b.Chain.State)
		if !created.IsZero() {
			oc.rec.Created = created
		}
		oc.frame = n
		for _, e := range b.Entries {
			oc.links[e.Link] = at{e.Seq, n}
			if e.RecordID != "" {
				oc.ids[e.RecordID] = at{e.Seq, n}
				l.ids.add(store.ChainRecordID{Chain: b.Chain.ID, ID: e.RecordID})
			}
		}
		count += len(b.Entries)
		l.sizes.put(b.Chain.ID, b.Chain.Size, b.Chain.Head, oc.rec.Created)
	}
	l.frames = append(l.frames, pending{n: n, payload: payload, entries: count})
	l.entries += count
	l.bytes += cap(payload) // the frame's buffer as kept, its spare room included
}

// index is the indexer: it folds journaled frames into the store until ctx ends.
func (l *Ledger) index(ctx context.Context) {
	defer close(l.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.kick:
		}
		l.ov.RLock()
		enough := l.entries >= l.o.ApplyEntries
		l.ov.RUnlock()
		if !enough {
			select {
			case <-ctx.Done():
				return
			case <-time.After(l.o.Gather):
			}
		}
		for pause := 100 * time.Millisecond; ; pause = min(2*pause, 5*time.Second) {
			err := l.flush(ctx)
			if err == nil || ctx.Err() != nil {
				break
			}
			l.o.Logger.Error("journal: folding entries into the store failed; retrying", "err", err, "retry_in", pause)
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
		}
	}
}

// flush folds every frame acknowledged before it was called into the store. The fold is
// shared by every caller waiting on it, so the caller's cancellation does not stop it; it
// runs under a deadline of its own.
func (l *Ledger) flush(ctx context.Context) error {
	l.ov.RLock()
	var target uint64
	if n := len(l.frames); n > 0 {
		target = l.frames[n-1].n
	}
	l.ov.RUnlock()
	l.applyMu.Lock()
	defer l.applyMu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), foldTimeout)
	defer cancel()
	for l.applied < target {
		if err := l.applyNext(ctx, target); err != nil {
			l.failed = true
			return err
		}
		l.failed = false
	}
	return nil
}

// foldTimeout bounds one flush.
const foldTimeout = 5 * time.Minute

// applyNext folds the next frames, up to ApplyEntries entries of them and none past frame
// target, into the store in one transaction. The caller holds applyMu.
func (l *Ledger) applyNext(ctx context.Context, target uint64) error {
	l.ov.RLock()
	var take []pending
	count := 0
	for _, f := range l.frames {
		if f.n > target || (len(take) > 0 && count+f.entries > l.o.ApplyEntries) {
			break
		}
		take = append(take, f)
		count += f.entries
	}
	l.ov.RUnlock()
	if len(take) == 0 {
		return fmt.Errorf("journal: frames up to %d are neither applied nor pending", target)
	}
	var all []store.Batch
	for _, f := range take {
		bs, err := decode(f.payload)
		if err != nil {
			return fmt.Errorf("journal frame %d: %w", f.n, err)
		}
		all = append(all, bs...)
	}
	todo := all
	if l.failed {
		// The failed fold may have reached the store nonetheless (an error after its
		// commit): fold only what the store does not hold.
		var err error
		if todo, err = l.unheld(ctx, all); err != nil {
			return fmt.Errorf("journal: folding frames %d to %d into the store: %w", take[0].n, take[len(take)-1].n, err)
		}
	}
	if len(todo) > 0 {
		if err := l.inner.CommitAll(ctx, merge(todo)); err != nil {
			return fmt.Errorf("journal: folding frames %d to %d into the store: %w", take[0].n, take[len(take)-1].n, err)
		}
	}
	last := take[len(take)-1].n
	l.ov.Lock()
	l.frames = l.frames[len(take):]
	if len(l.frames) == 0 {
		l.frames = nil
	}
	l.entries -= count
	for _, f := range take {
		l.bytes -= cap(f.payload)
	}
	for _, b := range all {
		oc := l.chains[b.Chain.ID]
		if oc == nil {
			continue
		}
		if oc.frame <= last {
			delete(l.chains, b.Chain.ID)
			continue
		}
		for _, e := range b.Entries {
			if p, ok := oc.links[e.Link]; ok && p.frame <= last {
				delete(oc.links, e.Link)
			}
			if p, ok := oc.ids[e.RecordID]; ok && p.frame <= last {
				delete(oc.ids, e.RecordID)
			}
		}
	}
	l.ov.Unlock()
	l.applied = last
	if err := l.log.Release(last); err != nil {
		l.o.Logger.Warn("journal: deleting folded segments", "err", err)
	}
	return nil
}

// LoadChain implements store.Store.
func (l *Ledger) LoadChain(ctx context.Context, id string) (*store.ChainRecord, error) {
	l.ov.RLock()
	oc := l.chains[id]
	var rec store.ChainRecord
	if oc != nil {
		rec = oc.rec
		rec.Tree, rec.State = bytes.Clone(rec.Tree), bytes.Clone(rec.State)
	}
	l.ov.RUnlock()
	if oc != nil {
		return &rec, nil
	}
	return l.inner.LoadChain(ctx, id)
}

// FindLink implements store.Store.
func (l *Ledger) FindLink(ctx context.Context, chain string, lk ledger.Link) (uint64, bool, error) {
	l.ov.RLock()
	var p at
	var ok bool
	if oc := l.chains[chain]; oc != nil {
		p, ok = oc.links[lk]
	}
	l.ov.RUnlock()
	if ok {
		return p.seq, true, nil
	}
	return l.inner.FindLink(ctx, chain, lk)
}

// FindRecordIDs implements store.Store.
func (l *Ledger) FindRecordIDs(ctx context.Context, chain string, ids []string) (map[string]uint64, error) {
	out := map[string]uint64{}
	var rest []string
	l.ov.RLock()
	oc := l.chains[chain]
	size, known := l.knownSize(chain) // before anything is looked up (absentCache)
	for _, id := range ids {
		if oc != nil {
			if p, ok := oc.ids[id]; ok {
				out[id] = p.seq
				continue
			}
		}
		if !l.ids.absent(store.ChainRecordID{Chain: chain, ID: id}) {
			rest = append(rest, id)
		}
	}
	l.ov.RUnlock()
	if len(rest) == 0 {
		return out, nil
	}
	used, err := l.inner.FindRecordIDs(ctx, chain, rest)
	if err != nil {
		return nil, err
	}
	maps.Copy(out, used)
	if known {
		l.ov.Lock()
		for _, id := range rest {
			if _, ok := used[id]; !ok {
				l.absent.put(store.ChainRecordID{Chain: chain, ID: id}, size)
			}
		}
		l.ov.Unlock()
	}
	return out, nil
}

// Entries implements store.Store: the journal is folded into the store, then the store
// answers.
func (l *Ledger) Entries(ctx context.Context, chain string, f store.Filter) ([]store.Entry, error) {
	if err := l.flush(ctx); err != nil {
		return nil, err
	}
	return l.inner.Entries(ctx, chain, f)
}

// Chains implements store.Store.
func (l *Ledger) Chains(ctx context.Context) ([]string, error) {
	if err := l.flush(ctx); err != nil {
		return nil, err
	}
	return l.inner.Chains(ctx)
}

// ListChains implements store.Store.
func (l *Ledger) ListChains(ctx context.Context, after string, limit int) ([]store.ChainRecord, error) {
	if err := l.flush(ctx); err != nil {
		return nil, err
	}
	return l.inner.ListChains(ctx, after, limit)
}

// AddSeal implements store.Store: the chain's journaled entries are folded into the store
// first, so that the seal's chain state is written after them.
func (l *Ledger) AddSeal(ctx context.Context, c *store.ChainRecord, s *store.Seal) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.flush(ctx); err != nil {
		return fmt.Errorf("add seal %s/%d: %w", s.Chain, s.N, err)
	}
	return l.inner.AddSeal(ctx, c, s)
}

// CompleteSeal implements store.Store.
func (l *Ledger) CompleteSeal(ctx context.Context, chain string, n, logIndex uint64, checkpoint, receipt []byte) (*store.Seal, error) {
	return l.inner.CompleteSeal(ctx, chain, n, logIndex, checkpoint, receipt)
}

// Seals implements store.Store.
func (l *Ledger) Seals(ctx context.Context, chain string) ([]store.Seal, error) {
	return l.inner.Seals(ctx, chain)
}

// PendingSeals implements store.Store.
func (l *Ledger) PendingSeals(ctx context.Context) ([]store.Seal, error) {
	return l.inner.PendingSeals(ctx)
}

// RecordFork implements store.Store.
func (l *Ledger) RecordFork(ctx context.Context, f *store.Fork) error {
	return l.inner.RecordFork(ctx, f)
}

// Forks implements store.Store.
func (l *Ledger) Forks(ctx context.Context, chain string) ([]store.Fork, error) {
	return l.inner.Forks(ctx, chain)
}

// PutEvidenceHead implements store.Store.
func (l *Ledger) PutEvidenceHead(ctx context.Context, h *store.EvidenceHead) error {
	return l.inner.PutEvidenceHead(ctx, h)
}

// EvidenceHead implements store.Store.
func (l *Ledger) EvidenceHead(ctx context.Context, chain string) (*store.EvidenceHead, error) {
	return l.inner.EvidenceHead(ctx, chain)
}

// Err returns why the journal takes no more commits (a failed write, fsync or segment
// start: only a restart clears it), or nil.
func (l *Ledger) Err() error { return l.log.Err() }

// Pending returns the entries journaled and not yet folded into the store.
func (l *Ledger) Pending() int {
	l.ov.RLock()
	defer l.ov.RUnlock()
	return l.entries
}

// Close stops the indexer, folds the whole journal into the store, and closes the journal
// and the store. When the journal cannot be folded in, it stays on disk for the next Open.
func (l *Ledger) Close() error {
	l.closeOnce.Do(func() {
		l.cancel()
		<-l.done
		<-l.loaded
		l.mu.Lock()
		defer l.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		l.closeErr = errors.Join(l.flush(ctx), l.log.Close(), l.inner.Close(), l.lock())
	})
	return l.closeErr
}
