package ingest

import (
	"context"
	"errors"
	"fmt"

	"github.com/evident-log/evident/internal/echo"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// Evidence-head statuses: how a reported head compares with the chain (EvidenceHeadReport.Status).
const (
	EvidenceHeadMatches   = "matches"   // the chain's own head after audit_count entries is the reported head
	EvidenceHeadAhead     = "ahead"     // the sender reported more entries than the chain holds yet
	EvidenceHeadUnchecked = "unchecked" // an earlier head of a sender chain that began after an unchained prefix
)

// EvidenceHeadReport is a kept evidence head and how it compares with the chain.
type EvidenceHeadReport struct {
	store.EvidenceHead
	Size   uint64 // the chain's size when it was reported
	Status string // EvidenceHeadMatches, EvidenceHeadAhead or EvidenceHeadUnchecked
}

// ReportEvidenceHead checks the head a chain's sender reported for its own evidence chain
// (a CHAP Coordinator's evidence_head after count entries; count 0 when it gave none) against
// the chain, and keeps it. A head that is not the chain's after count entries, or that is no
// head of the chain at all, is refused with ledger.CodeEvidenceHeadMismatch and nothing is
// kept; so is a report older (fewer entries) than the one kept.
func (p *Pipeline) ReportEvidenceHead(ctx context.Context, id string, head ledger.Link, count uint64) (*EvidenceHeadReport, error) {
	s := p.slot(id)
	defer p.put(id, s)
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := p.load(ctx, s, id, "", false)
	if err != nil {
		return nil, err
	}
	own, diverged := ledger.Link{}, false
	if oh, ok := c.State.(ledger.OwnHeader); ok {
		own, diverged = oh.OwnHead()
	}
	mismatch := func(format string, a ...any) error {
		return ledger.Refuse(ledger.CodeEvidenceHeadMismatch, format, a...)
	}
	rep := &EvidenceHeadReport{EvidenceHead: store.EvidenceHead{Chain: id, Head: head, AuditCount: count, ReportedAt: p.o.Now().UTC()}, Size: c.Size, Status: EvidenceHeadMatches}
	switch {
	case count == 0 && diverged:
		if head != own {
			return nil, mismatch("evidence_head %s is not the head %s of the Coordinator's chain after the %d entries the chain holds (give audit_count for an earlier head)", head, own, c.Size)
		}
		rep.AuditCount = c.Size
	case count == 0:
		seq, found, err := p.o.Store.FindLink(ctx, id, head)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, mismatch("evidence_head %s is no head of chain %s (size %d)", head, echo.Quote(id), c.Size)
		}
		rep.AuditCount = seq + 1
	case count > c.Size:
		rep.Status = EvidenceHeadAhead
	case diverged && count == c.Size:
		if head != own {
			return nil, mismatch("evidence_head %s at audit_count %d is not the Coordinator's chain head %s", head, count, own)
		}
	case diverged:
		rep.Status = EvidenceHeadUnchecked
	default:
		es, err := p.o.Store.Entries(ctx, id, store.Filter{From: count - 1, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(es) != 1 || es[0].Seq != count-1 {
			return nil, fmt.Errorf("evidence head of %q: entry %d not found", id, count-1)
		}
		if es[0].Link != head {
			return nil, mismatch("evidence_head %s at audit_count %d is not the chain's head %s after seq %d", head, count, es[0].Link, count-1)
		}
	}
	kept, err := p.o.Store.EvidenceHead(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return nil, err
	case kept.AuditCount > rep.AuditCount:
		return nil, mismatch("an evidence head at audit_count %d is kept; this one (audit_count %d) is older", kept.AuditCount, rep.AuditCount)
	}
	if err := p.o.Store.PutEvidenceHead(ctx, &rep.EvidenceHead); err != nil {
		return nil, err
	}
	return rep, nil
}
