// Package ingest is the path of a record through evidentd, in order:
//
//	profile adapter → canonical bytes → chain rules and link → signature (all cores)
//	→ store (durable) → acknowledgement → seal (COSE statement registered in the log)
//
// A batch is atomic: every record is accepted, or none is and the answer names the
// first refused record with its stable code. Nothing is acknowledged before the store
// has it on disk. A record already stored at its position (a retried submission) is
// acknowledged again as a duplicate and not stored twice; a different record that names an
// already-used predecessor is refused as a fork and kept, with the entry that holds that
// position, as evidence.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/evident-log/evident/internal/echo"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// Options configure a Pipeline.
type Options struct {
	Store    store.Store
	Profiles []ledger.Profile // the first is the default for new chains
	Sealer   SealIssuer       // nil: sealing disabled
	// SealEvery seals a chain once this many entries arrived since its last seal (0: never).
	SealEvery uint64
	// Shared says other processes write to the same store (several evidentd replicas):
	// a chain's state is then read from the store before every use instead of kept in
	// memory between requests, so heads, seals and reads are never stale.
	Shared bool
	// ConflictBudget bounds how long Ingest and Seal retry a write the store refused with
	// store.ErrConflict (retry.go), within the request's context; 0 means
	// DefaultConflictBudget.
	ConflictBudget time.Duration
	Logger         *slog.Logger
	Now            func() time.Time // clock; time.Now when nil
}

// Pipeline ingests records into chains and seals them.
type Pipeline struct {
	o        Options
	profiles map[string]ledger.Profile

	mu     sync.Mutex
	chains map[string]*chainSlot

	sealKick chan string
	group    *groupCommit // nil: the store commits each batch on its own

	conflictRetries atomic.Uint64 // retries after store.ErrConflict (retry.go)
}

type chainSlot struct {
	mu    sync.Mutex
	chain *ledger.Chain // nil until loaded
	// users counts the calls holding or waiting for the slot (Pipeline.mu guards it); known
	// is set once a chain was loaded or created in it. A slot that was never known is dropped
	// when its last user leaves (Pipeline.put): asking after chains that do not exist holds
	// no memory.
	users int
	known atomic.Bool
}

// New returns a pipeline over o.Store.
func New(o Options) (*Pipeline, error) {
	if o.Store == nil || len(o.Profiles) == 0 {
		return nil, errors.New("ingest: a store and at least one profile are required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	p := &Pipeline{o: o, profiles: map[string]ledger.Profile{}, chains: map[string]*chainSlot{}, sealKick: make(chan string, 64)}
	for _, pr := range o.Profiles {
		p.profiles[pr.Name()] = pr
	}
	// Group commit in one process only. Replicas of the distributed mode commit on their
	// own: the database server already shares one log flush among concurrent transactions
	// (InnoDB), and a group holding the rows of many chains would make every request of a
	// replica wait behind one chain another replica holds.
	if gc, ok := o.Store.(store.GroupCommitter); ok && !o.Shared {
		p.group = &groupCommit{st: gc}
	}
	return p, nil
}

// DefaultProfile is the profile of chains created without naming one.
func (p *Pipeline) DefaultProfile() string { return p.o.Profiles[0].Name() }

// slot returns chain id's slot, the caller counted as its user until it calls put.
func (p *Pipeline) slot(id string) *chainSlot {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.chains[id]
	if s == nil {
		s = &chainSlot{}
		p.chains[id] = s
	}
	s.users++
	return s
}

// put ends a use of id's slot s (after s.mu is released); the slot of a chain that does not
// exist goes when its last user does.
func (p *Pipeline) put(id string, s *chainSlot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.users--; s.users == 0 && !s.known.Load() {
		delete(p.chains, id)
	}
}

// ErrUnknownProfile is returned for a profile name the pipeline does not serve.
var ErrUnknownProfile = errors.New("unknown profile")

// ErrNoChain is returned when a chain does not exist.
var ErrNoChain = errors.New("no such chain")

// load returns the chain (creating an empty one of profile when absent and create is set).
// The caller holds s.mu.
func (p *Pipeline) load(ctx context.Context, s *chainSlot, id, profile string, create bool) (*ledger.Chain, error) {
	if s.chain != nil && !p.o.Shared {
		return s.chain, nil
	}
	rec, err := p.o.Store.LoadChain(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		if !create {
			return nil, fmt.Errorf("chain %s: %w", echo.Quote(id), ErrNoChain)
		}
		if profile == "" {
			profile = p.DefaultProfile()
		}
		pr, ok := p.profiles[profile]
		if !ok {
			return nil, fmt.Errorf("%w %s", ErrUnknownProfile, echo.Quote(profile))
		}
		return ledger.NewChain(id, pr)
	}
	if err != nil {
		return nil, err
	}
	c, err := p.restore(rec)
	if err != nil {
		return nil, err
	}
	s.chain = c
	s.known.Store(true)
	return c, nil
}

func (p *Pipeline) restore(rec *store.ChainRecord) (*ledger.Chain, error) {
	pr, ok := p.profiles[rec.Profile]
	if !ok {
		return nil, fmt.Errorf("chain %q: %w %q", rec.ID, ErrUnknownProfile, rec.Profile)
	}
	st, err := pr.NewState(rec.State)
	if err != nil {
		return nil, fmt.Errorf("chain %q: %w", rec.ID, err)
	}
	t := ledger.NewTree()
	if err := t.UnmarshalJSON(rec.Tree); err != nil {
		return nil, fmt.Errorf("chain %q: %w", rec.ID, err)
	}
	if t.Size() != rec.Size {
		return nil, fmt.Errorf("chain %q: stored tree size %d differs from chain size %d", rec.ID, t.Size(), rec.Size)
	}
	return &ledger.Chain{ID: rec.ID, Profile: rec.Profile, Size: rec.Size, Head: rec.Head, Tree: t, State: st,
		Closed: rec.Closed, LastSeal: rec.LastSeal, SealedSize: rec.SealedSize}, nil
}

func record(c *ledger.Chain) (*store.ChainRecord, error) {
	tree, err := c.Tree.MarshalJSON()
	if err != nil {
		return nil, err
	}
	st, err := c.State.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return &store.ChainRecord{ID: c.ID, Profile: c.Profile, Size: c.Size, Head: c.Head, Tree: tree, State: st,
		Closed: c.Closed, LastSeal: c.LastSeal, SealedSize: c.SealedSize}, nil
}

// Accepted is the acknowledgement of one record.
type Accepted struct {
	Seq     uint64      `json:"seq"`
	Prev    ledger.Link `json:"prev"`
	Link    ledger.Link `json:"link"`
	Arrival string      `json:"arrival"`
	// Duplicate marks a record that was already stored at Seq (a retried submission): nothing
	// was written for it, and Arrival is when it was first accepted.
	Duplicate bool `json:"duplicate,omitempty"`
}

// Head is a chain's current state as clients see it.
type Head struct {
	Chain      string      `json:"chain"`
	Profile    string      `json:"profile"`
	Size       uint64      `json:"size"`
	Head       ledger.Link `json:"head"`
	Root       string      `json:"root"`
	Closed     bool        `json:"closed"`
	LastSeal   string      `json:"last_seal,omitempty"`
	SealedSize uint64      `json:"sealed_size"`
}

func headOf(c *ledger.Chain) Head {
	return Head{Chain: c.ID, Profile: c.Profile, Size: c.Size, Head: c.Head, Root: ledger.RootString(c.Root()),
		Closed: c.Closed, LastSeal: c.LastSeal, SealedSize: c.SealedSize}
}

// Head returns the chain's head, or ErrNoChain.
func (p *Pipeline) Head(ctx context.Context, id string) (Head, error) {
	s := p.slot(id)
	defer p.put(id, s)
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := p.load(ctx, s, id, "", false)
	if err != nil {
		return Head{}, err
	}
	return headOf(c), nil
}

// Ingest admits records (in order) into chain id, creating the chain with profile (""
// for the default) when it does not exist. The batch is atomic and durable on return.
// A refusal is a *ledger.RecordError naming the record's index in the batch.
//
// Ingest is safe to retry: a prefix of the batch that is already in the chain, each record
// the very one stored at its position, is acknowledged with its stored seq and link and
// marked Duplicate, nothing is written for it, and the rest of the batch is admitted after
// the chain's head. Only a different record at a taken position is a fork.
//
// A commit the store refuses with store.ErrConflict (another writer moved the chain, or
// the database broke a deadlock) is retried after a jittered, growing pause, from the
// reloaded chain, within ctx and Options.ConflictBudget; the conflict is returned only
// when that time is spent.
func (p *Pipeline) Ingest(ctx context.Context, id, profile string, records [][]byte) ([]Accepted, error) {
	if len(records) == 0 {
		return nil, ledger.Refuse(ledger.CodeMalformed, "empty batch")
	}
	s := p.slot(id)
	defer p.put(id, s)
	s.mu.Lock()
	defer s.mu.Unlock()
	var acc []Accepted
	err := p.retryConflicts(ctx, id, func() error {
		var err error
		acc, err = p.ingestLocked(ctx, s, id, profile, records)
		if errors.Is(err, store.ErrConflict) {
			s.chain = nil // reload: another writer may have moved the chain
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return acc, nil
}

func (p *Pipeline) ingestLocked(ctx context.Context, s *chainSlot, id, profile string, records [][]byte) ([]Accepted, error) {
	cur, err := p.load(ctx, s, id, profile, true)
	if err != nil {
		return nil, err
	}
	if profile != "" && cur.Profile != profile {
		return nil, ledger.Refuse(ledger.CodeProfileMismatch, "chain %s is a %s chain, not %s", echo.Quote(id), cur.Profile, echo.Quote(profile))
	}
	// A retried submission: what is already stored is acknowledged again, before the
	// profile's admission rules (which would refuse a second join, a reused id, a fork).
	dups, first, err := p.repeated(ctx, cur, records)
	if err != nil {
		return nil, err
	}
	if len(dups) == len(records) {
		return dups, nil
	}
	off := len(dups)
	prevSize := cur.Size
	next := cur.Clone()
	now := p.o.Now().UTC()
	apps := make([]*ledger.Appended, len(records)-off)
	ids := map[string]int{}
	// Signatures are checked on every core while the chain rules run on this one.
	sigs := startVerifying(len(records))
	defer sigs.stop()
	for j, rec := range records[off:] {
		i := off + j
		var a *ledger.Appended
		if i == 0 && first != nil {
			a, err = next.AppendIdentified(rec, first, now, SubmitterFrom(ctx)) // read once, by repeated
		} else {
			a, err = next.AppendBy(rec, now, SubmitterFrom(ctx))
		}
		if err != nil {
			// The first refusal names the first bad record: an earlier record whose signature
			// fails comes before this one (a record altered in a chain whose next entry names
			// the original is refused for its signature, not for its successor's prev_hash).
			if serr := sigs.wait(); serr != nil {
				return nil, serr
			}
			return nil, p.refusal(ctx, cur, next, i, rec, now, err)
		}
		sigs.submit(i, a.Admission.Verify)
		if rid := a.Admission.RecordID; rid != "" {
			if k, dup := ids[rid]; dup {
				return nil, &ledger.RecordError{Index: i, Code: ledger.CodeIDReused, Detail: fmt.Sprintf("id %s already used by record %d of this batch", echo.Quote(rid), k)}
			}
			ids[rid] = i
		}
		apps[j] = a
	}
	if err := sigs.wait(); err != nil {
		return nil, err
	}
	entries := make([]store.Entry, len(apps))
	acc := make([]Accepted, len(apps))
	arrival := ledger.Timestamp(now)
	for i, a := range apps {
		entries[i] = store.Entry{Chain: id, Seq: a.Seq, Prev: a.Prev, Link: a.Link, Arrival: now, Record: a.Admission.Canonical,
			RecordID: a.Admission.RecordID, Method: a.Admission.Method, Sender: a.Admission.Sender, TS: a.Admission.TS, Signed: a.Admission.Signed,
			Meta: a.Admission.Meta, Attrs: a.Admission.Attrs}
		acc[i] = Accepted{Seq: a.Seq, Prev: a.Prev, Link: a.Link, Arrival: arrival}
	}
	rec, err := record(next)
	if err != nil {
		return nil, err
	}
	if err := p.commit(ctx, store.Batch{Chain: rec, PrevSize: prevSize, Entries: entries}); err != nil {
		// The store refuses a record id the chain holds (a unique key, on every replica), so
		// the ids are not looked up before the commit, only after a refused one.
		if errors.Is(err, store.ErrConflict) {
			if rerr := p.reusedID(ctx, id, ids, prevSize); rerr != nil {
				return nil, rerr
			}
		}
		return nil, err
	}
	s.chain = next
	s.known.Store(true)
	acc = append(dups, acc...)
	closedNow := next.Closed && !cur.Closed // a record closed the chain: seal it closed at once
	if p.o.Sealer != nil && (closedNow || p.o.SealEvery > 0 && next.Size-next.SealedSize >= p.o.SealEvery) {
		select {
		case p.sealKick <- id:
		default: // the sealer is busy; the periodic pass will catch up
		}
	}
	return acc, nil
}

// commit stores b durably: in a group with other callers' batches when the store can
// (groupcommit.go), else on its own.
func (p *Pipeline) commit(ctx context.Context, b store.Batch) error {
	if p.group != nil {
		return p.group.commit(ctx, b)
	}
	return p.o.Store.Commit(ctx, b.Chain, b.PrevSize, b.Entries)
}

// reusedID returns the refusal of the first record, in batch order, whose record id (ids:
// id → index in the batch) the chain already held at size prevSize, or nil when none did:
// an id stored at prevSize or later came from a concurrent writer after the batch was
// admitted, and the batch is to be admitted again after it.
func (p *Pipeline) reusedID(ctx context.Context, chain string, ids map[string]int, prevSize uint64) error {
	if len(ids) == 0 {
		return nil
	}
	used, err := p.o.Store.FindRecordIDs(ctx, chain, slices.Collect(maps.Keys(ids)))
	if err != nil {
		return fmt.Errorf("chain %q: looking up the batch's record ids: %w", chain, err)
	}
	first, firstID := -1, ""
	for rid, seq := range used {
		if i := ids[rid]; seq < prevSize && (first < 0 || i < first) {
			first, firstID = i, rid
		}
	}
	if first < 0 {
		return nil
	}
	return &ledger.RecordError{Index: first, Code: ledger.CodeIDReused, Detail: fmt.Sprintf("id %s already used at seq %d", echo.Quote(firstID), used[firstID])}
}

// refusal turns an admission error into the answer, recognising forks: a record whose
// named predecessor already has a successor in the chain.
func (p *Pipeline) refusal(ctx context.Context, cur, next *ledger.Chain, i int, rec []byte, now time.Time, err error) error {
	var re *ledger.RecordError
	if !errors.As(err, &re) {
		return err
	}
	re.Index = i
	if re.Code != ledger.CodePrevMismatch {
		return re
	}
	var pm *ledger.PrevMismatchError
	if !errors.As(re, &pm) {
		return re
	}
	named := pm.Named
	var existing uint64
	found := false
	if named == ledger.Genesis {
		existing, found = 0, cur.Size > 0 || next.Size > 0
	} else if seq, ok, ferr := p.o.Store.FindLink(ctx, cur.ID, named); ferr == nil && ok {
		existing, found = seq+1, true
	}
	if !found {
		return re
	}
	// Keep evidence only of an authentic fork: the record must be admissible at the position
	// it claims (with the chain's current key history) and carry a valid signature, so a
	// client cannot fill the store with forged "forks".
	probe := next.State.Clone()
	adm, aerr := probe.Admit(ledger.Position{Chain: cur.ID, Head: named, Seq: existing}, rec)
	if aerr != nil {
		if ae := (*ledger.RecordError)(nil); errors.As(aerr, &ae) {
			ae.Index = i
			return ae
		}
		return re
	}
	if adm.Verify != nil {
		if verr := adm.Verify(); verr != nil {
			if ve := (*ledger.RecordError)(nil); errors.As(verr, &ve) {
				ve.Index = i
				return ve
			}
			return verr
		}
	}
	if ferr := p.o.Store.RecordFork(ctx, &store.Fork{Chain: cur.ID, Seq: existing, ExistingSeq: existing, Record: rec, Arrival: now}); ferr != nil {
		p.o.Logger.Error("keeping fork evidence", "chain", cur.ID, "err", ferr)
	}
	return &ledger.RecordError{Index: i, Code: ledger.CodeFork,
		Detail: fmt.Sprintf("prev_hash %s already has a successor at seq %d; the conflicting record is kept as fork evidence", named, existing)}
}

// sigVerifier checks a batch's signatures on a pool of goroutines as records are admitted.
type sigVerifier struct {
	work chan sigJob
	errs []error
	wg   sync.WaitGroup
	once sync.Once
}

type sigJob struct {
	i      int
	verify func() error
}

func startVerifying(n int) *sigVerifier {
	v := &sigVerifier{work: make(chan sigJob, n), errs: make([]error, n)}
	workers := min(runtime.GOMAXPROCS(0), max(1, n/8))
	for range workers {
		v.wg.Add(1)
		go func() {
			defer v.wg.Done()
			for j := range v.work {
				v.errs[j.i] = j.verify()
			}
		}()
	}
	return v
}

// submit queues record i's signature check (nil: unsigned).
func (v *sigVerifier) submit(i int, verify func() error) {
	if verify != nil {
		v.work <- sigJob{i, verify}
	}
}

// stop ends the workers; safe to call more than once.
func (v *sigVerifier) stop() {
	v.once.Do(func() {
		close(v.work)
		v.wg.Wait()
	})
}

// wait returns the first failure in batch order.
func (v *sigVerifier) wait() error {
	v.stop()
	for i, err := range v.errs {
		if err != nil {
			var re *ledger.RecordError
			if errors.As(err, &re) {
				re.Index = i
			}
			return err
		}
	}
	return nil
}
