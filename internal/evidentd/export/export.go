// Package export writes offline bundles (bundle/) of chains, case slices and registrations
// from the store and the log. It also cuts, from the same stored links, the chain receipts
// a bundle carries and the service hands out on their own: entry receipts and chain
// consistency receipts.
package export

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/evidentd/ingest"
	"github.com/evident-log/evident/internal/evidentd/scitt"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile"
)

// pageSize is how many entries one store read returns.
const pageSize = 5000

// Config names what an Exporter reads from.
type Config struct {
	// Pipeline gives each chain's head (size and profile).
	Pipeline *ingest.Pipeline
	// Store holds the entries, seals and SCITT registrations.
	Store store.Store
	// Service is the log and the service key that signs receipts.
	Service *scitt.Service
	// Keys, when set, is the service's key history: bundles then carry every key, retired
	// ones kept. Nil carries the current key only.
	Keys *scitt.KeyRing
	// Extensions are the profiles' extensions: each adds its own files to a bundle that
	// holds chains of its profile (ledger/profile/service).
	Extensions []profile.Extension
	// Profiles is the registry of the served profiles (which can be cut into case slices);
	// nil is profile.Default().
	Profiles *profile.Registry
	// Producer is written into every manifest, e.g. "evidentd v0.1.0".
	Producer string
	// Now, when set, gives the export time: the manifest's created and the date of every
	// zip entry. Nil is time.Now; a test sets a fixed time to pin those fields. It does not
	// make a bundle byte-stable: the chain-root signatures of entry proofs are stamped with
	// the wall clock (issued at).
	Now func() time.Time
	// TreeCache bounds the memory of the sealed chain trees kept whole so that the chain
	// receipts of one seal's entries cost O(log n) each after the first (GET
	// …/entries/{seq}/receipt and …/entry-receipt; a CHAP Coordinator's
	// audit.submit_to_scitt asks for every entry of a range). 0 is DefaultTreeCache; a
	// negative value keeps none, and a tree larger than the bound is never kept: its
	// receipts are cut in one pass over the chain each.
	TreeCache int64
}

// DefaultTreeCache is the default Config.TreeCache: 64 MiB, the whole tree of a chain of one
// million entries.
const DefaultTreeCache = 64 << 20

// Exporter writes bundles and chain receipts. It is safe for concurrent use.
type Exporter struct {
	c     Config
	trees treeCache
}

// New returns an Exporter reading from c.
func New(c Config) *Exporter {
	if c.Profiles == nil {
		c.Profiles = profile.Default()
	}
	budget := c.TreeCache
	if budget == 0 {
		budget = DefaultTreeCache
	}
	return &Exporter{c: c, trees: treeCache{budget: max(budget, 0), m: map[string]*cachedTree{}}}
}

// newBundle starts a bundle on w dated at the export time, which it returns for the
// manifest's created: a zip listing then shows when the bundle was exported.
func (x *Exporter) newBundle(w io.Writer) (*bundle.Writer, time.Time) {
	now := time.Now
	if x.c.Now != nil {
		now = x.c.Now
	}
	t := now().UTC()
	bw := bundle.NewWriter(w)
	bw.SetModified(t)
	return bw, t
}

// Chain names a chain to export and how many of its entries.
type Chain struct {
	Chain string
	Size  uint64
}

// Chains writes one offline bundle holding several chains (each up to its size) to w:
// one set of trust files and one checkpoint for all of them, so that references between the
// chains (OWP provenance) can be checked offline.
func (x *Exporter) Chains(ctx context.Context, w io.Writer, chains []Chain) error {
	if len(chains) == 0 {
		return errors.New("export: no chain named")
	}
	bw, exported := x.newBundle(w)
	l := x.c.Service.Log()
	if err := x.writeTrust(bw); err != nil { // trust/ files (trust.go)
		return err
	}
	// Every receipt is cut afresh from the latest checkpoint, so one checkpoint anchors all
	// the seals of the bundle and no consistency proof between checkpoints is needed.
	cp, c, err := x.latestCheckpoint(ctx)
	if err != nil {
		return err
	}
	var refs []bundle.ChainRef
	wroteCP := false
	for _, ec := range chains {
		ref, wrote, err := x.exportChain(ctx, bw, ec.Chain, ec.Size, cp, c.Size)
		if err != nil {
			return err
		}
		refs = append(refs, ref)
		wroteCP = wroteCP || wrote
	}
	if err := x.exportExtensions(ctx, bw, refs); err != nil {
		return err
	}
	if wroteCP {
		if err := bw.WriteFile(bundle.CheckpointFile(c.Size), cp); err != nil {
			return err
		}
		// The seals' first checkpoints and their consistency with cp (proofs.go).
		if err := x.writeLogConsistency(ctx, bw, refs, c.Size); err != nil {
			return err
		}
	}
	scope := bundle.Scope{Chain: chains[0].Chain}
	if len(chains) > 1 {
		scope = bundle.Scope{}
		for _, ec := range chains {
			scope.Chains = append(scope.Chains, ec.Chain)
		}
	}
	return bw.Close(bundle.Manifest{
		Producer: x.c.Producer,
		Created:  ledger.Timestamp(exported),
		Scope:    scope,
		Log:      bundle.LogInfo{Origin: l.Origin()},
		Chains:   refs,
	})
}

// exportChain writes one chain's entries (up to size) and its seals, with receipts cut from
// the checkpoint cp of tree size cpSize, and returns the chain's manifest entry and whether a
// receipt was written.
func (x *Exporter) exportChain(ctx context.Context, bw *bundle.Writer, chain string, size uint64, cp []byte, cpSize uint64) (bundle.ChainRef, bool, error) {
	h, err := x.c.Pipeline.Head(ctx, chain)
	if err != nil {
		return bundle.ChainRef{}, false, err
	}
	dir := bundle.ChainDir(chain)
	seals, err := x.c.Store.Seals(ctx, chain)
	if err != nil {
		return bundle.ChainRef{}, false, err
	}
	proofs, err := planSealProofs(seals, size) // consistency between successive seals (proofs.go)
	if err != nil {
		return bundle.ChainRef{}, false, err
	}
	ew, err := bw.Create(bundle.EntriesFile(dir))
	if err != nil {
		return bundle.ChainRef{}, false, err
	}
	n, head, err := writeEntries(ew, entryPages(ctx, x.c.Store, chain, size), proofs.prover)
	if err != nil {
		return bundle.ChainRef{}, false, err
	}
	wroteCP := false
	written := map[uint64]bool{}
	for _, sl := range seals {
		if !sl.Registered || sl.Size > n || sl.LogIndex >= cpSize {
			continue
		}
		if err := x.writeSeal(ctx, bw, dir, sl, cp); err != nil {
			return bundle.ChainRef{}, false, err
		}
		wroteCP = true
		written[sl.N] = true
	}
	if err := x.writeSealProofs(bw, proofs, dir, chain, written); err != nil {
		return bundle.ChainRef{}, false, err
	}
	ref := bundle.ChainRef{ID: chain, Dir: dir, Profile: h.Profile, Size: n, Head: head, Root: ledger.RootString(proofs.prover.CurrentRoot())}
	switch eh, err := x.c.Store.EvidenceHead(ctx, chain); {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return bundle.ChainRef{}, false, err
	default:
		ref.EvidenceHead = &eh.Head
		if eh.AuditCount > 0 {
			ref.AuditCount = &eh.AuditCount
		}
	}
	return ref, wroteCP, nil
}

// pageReaders is how many pages of a chain's entries are read at once while exporting it.
const pageReaders = 2

// entryPages yields chain's entries below size page by page, in order: page k holds seqs
// [k·pageSize, (k+1)·pageSize). The pages are read by pageReaders goroutines, each one page
// ahead, so that reading the store (the larger part of an export's work) runs on more than
// one core and overlaps the writing (encoding, compression, hashing) of the page before.
// Stopping early, or ctx ending, stops the readers. A short or empty page ends the
// sequence; the caller checks the seqs it gets.
func entryPages(ctx context.Context, st store.Store, chain string, size uint64) iter.Seq2[[]store.Entry, error] {
	return func(yield func([]store.Entry, error) bool) {
		parent := ctx
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		var out [pageReaders]chan page
		for r := range out {
			out[r] = make(chan page, 1)
			wg.Go(func() { readPages(ctx, st, chain, size, uint64(r), out[r]) })
		}
		for k := 0; ; k++ {
			p, ok := <-out[k%pageReaders]
			if !ok {
				if err := parent.Err(); err != nil {
					yield(nil, err) // the readers stopped for ctx, not at the chain's end
				}
				return
			}
			if !yield(p.es, p.err) || p.err != nil || len(p.es) < pageSize {
				return
			}
		}
	}
}

// page is one read of entryPages.
type page struct {
	es  []store.Entry
	err error
}

// readPages reads pages first, first+pageReaders, … of chain's entries below size into out,
// and closes it after the last page, an error, a short page, or when ctx ends.
func readPages(ctx context.Context, st store.Store, chain string, size, first uint64, out chan<- page) {
	defer close(out)
	for k := first; k*pageSize < size; k += pageReaders {
		from := k * pageSize
		es, err := st.Entries(ctx, chain, store.Filter{From: from, Limit: int(min(pageSize, size-from))})
		if err != nil {
			err = fmt.Errorf("entries of %q from %d: %w", chain, from, err)
		}
		select {
		case out <- page{es: es, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil || len(es) < pageSize {
			return
		}
	}
}

// entriesBuffer is how many bytes of entry lines are gathered before they are written on.
const entriesBuffer = 256 << 10

// writeEntries writes the entries pages yields to w as entries.jsonl, feeding each link to
// prover, and returns how many it wrote and the last link. The entries must follow one
// another from seq 0.
func writeEntries(w io.Writer, pages iter.Seq2[[]store.Entry, error], prover *ledger.Prover) (uint64, ledger.Link, error) {
	var n uint64
	var head ledger.Link
	bw := bufio.NewWriterSize(w, entriesBuffer)
	var line []byte
	for es, err := range pages {
		if err != nil {
			return 0, head, err
		}
		for i := range es {
			e := &es[i]
			if e.Seq != n {
				return 0, head, fmt.Errorf("export: entry %d where %d was expected", e.Seq, n)
			}
			if line, err = writeLine(bw, line, e); err != nil {
				return 0, head, err
			}
			if err := prover.Append(e.Link); err != nil { // the chain's root and the seal proofs
				return 0, head, err
			}
			head, n = e.Link, n+1
		}
	}
	return n, head, bw.Flush()
}

// writeLine writes the entry line of stored entry e to bw, built in buf, which it returns
// for the next line.
func writeLine(bw *bufio.Writer, buf []byte, e *store.Entry) ([]byte, error) {
	buf, err := bundle.AppendEntryLine(buf[:0], &bundle.EntryLine{Seq: e.Seq, Prev: e.Prev, Link: e.Link,
		Arrival: ledger.Timestamp(e.Arrival), Record: e.Record, Meta: e.Meta})
	if err != nil {
		return buf, fmt.Errorf("export: entry %d: %w", e.Seq, err)
	}
	_, err = bw.Write(buf)
	return buf, err
}
