package ingest

import (
	"bytes"
	"context"
	"fmt"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// repeated returns the acknowledgements of the longest prefix of records that is already in
// chain c, each the very record stored at its position (same canonical bytes, hence the same
// link): a retried submission. The rest of the batch (records[len(result):]) is new, or a
// refusal the profile's rules name.
//
// A record's position is the one it states (a CHAP audit entry's seq), else the successor of
// the predecessor it names (evidence.prev_hash), else the place its record id was used; each
// next record of the prefix must be at the next position. A first record that states none
// of these is looked for in the chain's tail: the batch's prefix must then be the chain's
// last entries, so a record without a position is a retry only if nothing came after it.
//
// It also returns the profile's Identity of records[0] when it read one, so that a new first
// record is admitted from it (ledger.Chain.AppendIdentified) instead of being parsed again.
//
// The caller holds the chain's lock; the answer is for c as loaded (entries a concurrent
// writer stored after it are not considered: its commit then conflicts and the batch is
// looked at again).
func (p *Pipeline) repeated(ctx context.Context, c *ledger.Chain, records [][]byte) ([]Accepted, *ledger.Identity, error) {
	idf, ok := c.State.(ledger.Identifier)
	if !ok || c.Size == 0 {
		return nil, nil, nil
	}
	at := ledger.Position{Chain: c.ID, Submitter: SubmitterFrom(ctx)}
	first, err := idf.Identify(at, records[0])
	if err != nil {
		return nil, nil, nil // not readable: the profile's rules refuse it with their code
	}
	k, found, err := p.positionOf(ctx, c, first)
	if err != nil {
		return nil, nil, err
	}
	var stored []store.Entry
	switch {
	case found && k < c.Size:
		stored, err = p.o.Store.Entries(ctx, c.ID, store.Filter{From: k, Limit: int(min(uint64(len(records)), c.Size-k))})
	case !found:
		stored, err = p.tail(ctx, c, idf, at, first, records)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("chain %q: looking for resubmitted records: %w", c.ID, err)
	}
	var acc []Accepted
	for i, e := range stored {
		if i >= len(records) || e.Seq != stored[0].Seq+uint64(i) {
			break
		}
		id := first
		if i > 0 {
			if id, err = idf.Identify(at, records[i]); err != nil {
				break
			}
		}
		if !same(id, &e) {
			break
		}
		acc = append(acc, Accepted{Seq: e.Seq, Prev: e.Prev, Link: e.Link, Arrival: ledger.Timestamp(e.Arrival), Duplicate: true})
	}
	return acc, first, nil
}

// positionOf returns the position a record states or implies by its predecessor or id;
// found is false when it gives none the chain can place.
func (p *Pipeline) positionOf(ctx context.Context, c *ledger.Chain, id *ledger.Identity) (uint64, bool, error) {
	var own ledger.Link // the sender's own chain head, when it differs from the chain's
	if oh, ok := c.State.(ledger.OwnHeader); ok {
		if h, diverged := oh.OwnHead(); diverged {
			own = h
		}
	}
	switch {
	case id.Seq != nil:
		return *id.Seq, true, nil
	case id.PrevHash != nil && *id.PrevHash == ledger.Genesis:
		return 0, true, nil
	case id.PrevHash != nil && (*id.PrevHash == c.Head || *id.PrevHash == own && own != ledger.Link{}):
		return c.Size, true, nil // the next entry (by either chain's head): new
	case id.PrevHash != nil:
		seq, ok, err := p.o.Store.FindLink(ctx, c.ID, *id.PrevHash)
		if err != nil || ok {
			return seq + 1, ok, err
		}
		// A predecessor Evident does not know (a Coordinator's own head): try the id.
	}
	if id.RecordID != "" {
		used, err := p.o.Store.FindRecordIDs(ctx, c.ID, []string{id.RecordID})
		if err != nil {
			return 0, false, err
		}
		if seq, ok := used[id.RecordID]; ok {
			return seq, true, nil
		}
		return c.Size, true, nil // an unused id: new
	}
	return 0, false, nil
}

// tail returns the chain's last entries from the earliest one where the batch's records
// repeat the chain's end, or none.
func (p *Pipeline) tail(ctx context.Context, c *ledger.Chain, idf ledger.Identifier, at ledger.Position, first *ledger.Identity, records [][]byte) ([]store.Entry, error) {
	n := min(uint64(len(records)), c.Size)
	window, err := p.o.Store.Entries(ctx, c.ID, store.Filter{From: c.Size - n, Limit: int(n)})
	if err != nil {
		return nil, err
	}
	ids := []*ledger.Identity{first}
	identity := func(i int) *ledger.Identity {
		for len(ids) <= i {
			id, err := idf.Identify(at, records[len(ids)])
			if err != nil {
				id = &ledger.Identity{}
			}
			ids = append(ids, id)
		}
		return ids[i]
	}
	for j := range window {
		match := true
		for i, e := range window[j:] {
			if !same(identity(i), &e) {
				match = false
				break
			}
		}
		if match {
			return window[j:], nil
		}
	}
	return nil, nil
}

// same reports whether a submitted record is the stored entry e: the same canonical bytes,
// no different position stated, and when it carries unhashed metadata (a CHAP audit entry's
// seq, arrived and prev_hash), the metadata e kept: a record that names another predecessor
// or arrival beside the same bytes is not a retry, and goes to the profile's rules.
func same(id *ledger.Identity, e *store.Entry) bool {
	return id.Canonical != nil && bytes.Equal(id.Canonical, e.Record) &&
		(id.Seq == nil || *id.Seq == e.Seq) &&
		(id.Meta == nil || bytes.Equal(id.Meta, e.Meta))
}
