package legacy

import (
	"context"
	"fmt"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// copyPage is how many entries of a chain Copy reads and commits at a time.
const copyPage = 4096

// Counts is what Copy copied.
type Counts struct {
	Chains, Entries, Seals, Forks, Heads, Registrations, Claims int
}

// Copy copies everything r holds into dst, an empty store, through dst's own API, so that
// each of dst's checks runs on every batch: chains with their entries (in pages, each
// committed as the chain's next batch, its creation time kept), seals as they were
// (registered or pending), forks in their order, evidence heads, registrations in their
// order with their log positions, and claims with their log indexes. progress, when set,
// is called after each page with the counts so far.
func Copy(ctx context.Context, r *Reader, dst store.Store, progress func(Counts)) (Counts, error) {
	var n Counts
	chains, err := r.Chains(ctx)
	if err != nil {
		return n, err
	}
	for i := range chains {
		final := chains[i]
		var size uint64
		head := ledger.Genesis
		for size < final.Size {
			es, err := r.Entries(ctx, final.ID, size, copyPage)
			if err != nil {
				return n, err
			}
			if len(es) == 0 {
				return n, fmt.Errorf("chain %q: %d entries of %d: %w", final.ID, size, final.Size, ErrCorrupt)
			}
			c := final // the final state, at this page's size and head
			c.Size, c.Head = size+uint64(len(es)), es[len(es)-1].Link
			if err := dst.Commit(ctx, &c, size, es); err != nil {
				return n, fmt.Errorf("copying chain %q from seq %d: %w", final.ID, size, err)
			}
			size, head = c.Size, c.Head
			n.Entries += len(es)
			if progress != nil {
				progress(n)
			}
		}
		if head != final.Head {
			return n, fmt.Errorf("chain %q: its entries end in %s, its head is %s: %w", final.ID, head, final.Head, ErrCorrupt)
		}
		if final.Size == 0 { // a chain with no entries: its state alone
			if err := dst.Commit(ctx, &final, 0, nil); err != nil {
				return n, fmt.Errorf("copying chain %q: %w", final.ID, err)
			}
		}
		n.Chains++
	}
	seals, err := r.Seals(ctx)
	if err != nil {
		return n, err
	}
	for i := range seals {
		sl := &seals[i]
		c, err := dst.LoadChain(ctx, sl.Chain)
		if err != nil {
			return n, fmt.Errorf("seal %s/%d: %w", sl.Chain, sl.N, err)
		}
		if err := dst.AddSeal(ctx, c, sl); err != nil {
			return n, fmt.Errorf("copying seal %s/%d: %w", sl.Chain, sl.N, err)
		}
		n.Seals++
	}
	forks, err := r.Forks(ctx)
	if err != nil {
		return n, err
	}
	for i := range forks {
		if err := dst.RecordFork(ctx, &forks[i]); err != nil {
			return n, fmt.Errorf("copying fork of %q: %w", forks[i].Chain, err)
		}
		n.Forks++
	}
	heads, err := r.EvidenceHeads(ctx)
	if err != nil {
		return n, err
	}
	for i := range heads {
		if err := dst.PutEvidenceHead(ctx, &heads[i]); err != nil {
			return n, fmt.Errorf("copying evidence head of %q: %w", heads[i].Chain, err)
		}
		n.Heads++
	}
	regs, err := r.Registrations(ctx)
	if err != nil {
		return n, err
	}
	if len(regs) > 0 {
		rs, ok := dst.(store.Registrations)
		if !ok {
			return n, fmt.Errorf("the new store %T keeps no registrations, and the old one holds %d", dst, len(regs))
		}
		for i := range regs {
			if _, created, err := rs.AddRegistration(ctx, &regs[i]); err != nil {
				return n, fmt.Errorf("copying registration %.16s: %w", regs[i].ID, err)
			} else if !created {
				return n, fmt.Errorf("copying registration %.16s: the new store holds it already", regs[i].ID)
			}
			n.Registrations++
		}
	}
	claims, err := r.Claims(ctx)
	if err != nil {
		return n, err
	}
	if len(claims) > 0 {
		cs, ok := dst.(store.Claims)
		if !ok {
			return n, fmt.Errorf("the new store %T keeps no claims, and the old one holds %d", dst, len(claims))
		}
		for _, c := range claims {
			if _, err := cs.ClaimEntry(ctx, c.Entry, c.Owner, 0, c.From); err != nil {
				return n, fmt.Errorf("copying claim %x: %w", c.Entry[:8], err)
			}
			if c.Appended {
				if _, err := cs.EntryAppended(ctx, c.Entry, c.Index); err != nil {
					return n, fmt.Errorf("copying claim %x: %w", c.Entry[:8], err)
				}
			}
			n.Claims++
		}
	}
	return n, nil
}
