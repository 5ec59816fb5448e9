package verifier

import (
	"fmt"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
)

// Linkage is how much of a chain the Coordinator's own evidence chain covers, as the replay
// found it. Every entry's link is recomputed from genesis; EntriesNamed of them also named
// their predecessor (CHAP evidence.prev_hash, or an audit entry's prev_hash), each the one
// recomputed. The entries before CheckedFromSeq came as Coordinator audit entries without
// prev_hash: the Coordinator recorded them before it switched its chain on, so its chain
// does not cover them (EntriesUnchecked).
type Linkage struct {
	EntriesTotal     uint64 `json:"entries_total"`
	EntriesChecked   uint64 `json:"entries_checked"`   // entries from CheckedFromSeq on: the Coordinator's chain covers them
	EntriesUnchecked uint64 `json:"entries_unchecked"` // the unchained prefix
	EntriesNamed     uint64 `json:"entries_named"`     // entries that named their predecessor themselves
	CheckedFromSeq   uint64 `json:"checked_from_seq"`  // first entry after the unchained prefix
}

// linkageTrack watches a replay for the Coordinator's own chain and per-sender time.
type linkageTrack struct {
	total       uint64
	unchained   uint64 // audit entries without prev_hash (all at the start: admission refuses later ones)
	named       uint64
	lastTS      map[string]time.Time
	regressions uint64
	regressSeqs []string

	evidenceHead ledger.Link
	hasEvidence  bool
	auditCount   uint64 // the Coordinator's audit_count with its evidence_head, 0 when not given
	headSeq      uint64 // seq whose own head is evidence_head (no audit_count), or audit_count-1
	headFound    bool
	headAt       ledger.Link // the own head at seq audit_count-1
}

func newLinkageTrack(ref bundle.ChainRef) *linkageTrack {
	t := &linkageTrack{lastTS: map[string]time.Time{}}
	if ref.EvidenceHead != nil {
		t.evidenceHead, t.hasEvidence = *ref.EvidenceHead, true
		if ref.AuditCount != nil {
			t.auditCount = *ref.AuditCount
		}
	}
	return t
}

// observe reads one admitted record at seq.
func (t *linkageTrack) observe(seq uint64, a *ledger.Appended) {
	t.total = seq + 1
	adm := a.Admission
	if adm.Unchained {
		t.unchained++
	}
	if adm.PrevHash != nil {
		t.named++
	}
	if s := adm.Sender; s != "" && !adm.TS.IsZero() {
		if last, ok := t.lastTS[s]; ok && adm.TS.Before(last) {
			t.regressions++
			if len(t.regressSeqs) < 5 {
				t.regressSeqs = append(t.regressSeqs, fmt.Sprintf("seq %d: %s stamped %s after %s", seq, s, ledger.Timestamp(adm.TS), ledger.Timestamp(last)))
			}
		} else {
			t.lastTS[s] = adm.TS
		}
	}
	if !t.hasEvidence {
		return
	}
	own := a.Link // the Coordinator's chain is Evident's unless it began after an unchained prefix
	if adm.OwnHead != nil {
		own = *adm.OwnHead
	} else if adm.Unchained {
		return // outside the Coordinator's chain: no head of its can be this entry's
	}
	switch {
	case t.auditCount > 0 && seq == t.auditCount-1:
		t.headAt, t.headSeq, t.headFound = own, seq, true
	case t.auditCount == 0 && own == t.evidenceHead && !t.headFound:
		t.headSeq, t.headFound = seq, true
	}
}

// coverage returns the Linkage counts.
func (t *linkageTrack) coverage() Linkage {
	return Linkage{EntriesTotal: t.total, EntriesChecked: t.total - t.unchained, EntriesUnchecked: t.unchained,
		EntriesNamed: t.named, CheckedFromSeq: t.unchained}
}

// linked reports whether a profile's records are meant to name their predecessor
// (ledger.Linked: CHAP's evidence.prev_hash), so the chain's own linkage is reported.
func (v *verifier) linked(name string) bool {
	prof, ok := v.registry().Lookup(name)
	if !ok {
		return false
	}
	_, ok = prof.(ledger.Linked)
	return ok
}

// checks turns the track into checks. The linkage check is made for chains whose profile's
// records name their predecessor (ledger.Linked); the time and evidence_head checks for
// every profile.
func (t *linkageTrack) checks(ref bundle.ChainRef, res *replayResult, linked bool) []Check {
	var out []Check
	if !res.complete() {
		return nil // the replay stopped: chain.entries already says where
	}
	if linked && t.total > 0 {
		l := t.coverage()
		c := Check{Name: CheckChainLinkage, Chain: ref.ID}
		counts := fmt.Sprintf("entries_total=%d entries_checked=%d entries_unchecked=%d entries_named=%d checked_from_seq=%d", l.EntriesTotal, l.EntriesChecked, l.EntriesUnchecked, l.EntriesNamed, l.CheckedFromSeq)
		c.Evidence = []string{counts}
		if l.EntriesUnchecked > 0 {
			c.Status, c.Code, c.Where = NotEvaluated, CodeUnchainedPrefix, "seq 0"
			c.Detail = fmt.Sprintf("the first %d entries came as Coordinator audit entries without prev_hash: the Coordinator recorded them before it switched its evidence chain on, so its chain does not cover them and what they were before Evident received them is not evaluated; Evident's own links cover all %d entries, and the Coordinator's chain covers seq %d on", l.EntriesUnchecked, l.EntriesTotal, l.CheckedFromSeq)
		} else {
			c.Status = Verified
			switch l.EntriesNamed {
			case 0:
				c.Detail = fmt.Sprintf("every link recomputed from genesis over all %d entries (no record names its predecessor itself: the links are the chain)", l.EntriesTotal)
			case l.EntriesTotal:
				c.Detail = fmt.Sprintf("every link recomputed from genesis over all %d entries, and every entry named its predecessor itself (evidence.prev_hash or its audit entry's prev_hash): the Coordinator's evidence chain and Evident's agree on all of them", l.EntriesTotal)
			default:
				c.Detail = fmt.Sprintf("every link recomputed from genesis over all %d entries; the %d that named their predecessor themselves each named the recomputed one", l.EntriesTotal, l.EntriesNamed)
			}
		}
		out = append(out, c)
	}
	c := Check{Name: CheckChainTimestamps, Chain: ref.ID, Status: Verified}
	if t.regressions > 0 {
		// A warning, not a break: the chain order is authoritative, a sender's clock is not.
		c.Code = CodeTSRegression
		c.Detail = fmt.Sprintf("warning: %d record(s) carry a ts earlier than their sender's previous record; the chain order stands (clocks drift), nothing is broken", t.regressions)
		c.Evidence = t.regressSeqs
	} else {
		c.Detail = "every sender's timestamps are non-decreasing along the chain"
	}
	out = append(out, c)
	if t.hasEvidence {
		out = append(out, t.evidenceHeadCheck(ref))
	}
	return out
}

// evidenceHeadCheck compares the Coordinator's evidence_head (and audit_count, when it gave
// one) with the Coordinator's chain as replayed.
func (t *linkageTrack) evidenceHeadCheck(ref bundle.ChainRef) Check {
	c := Check{Name: CheckChainEvidenceHead, Chain: ref.ID, Where: bundle.ManifestFile}
	switch {
	case t.auditCount > 0 && t.auditCount > t.total:
		c.Status, c.Code = NotEvaluated, CodeEvidenceHeadAhead
		c.Detail = fmt.Sprintf("the Coordinator reported audit_count %d with evidence_head %s, but the bundle's chain has %d entries: the entries it had recorded beyond are not in the bundle", t.auditCount, t.evidenceHead, t.total)
	case t.auditCount > 0 && t.headFound && t.headAt == t.evidenceHead:
		c.Status = Verified
		c.Detail = fmt.Sprintf("the Coordinator's evidence_head %s at audit_count %d is the replayed head of its chain at seq %d", t.evidenceHead, t.auditCount, t.headSeq)
	case t.auditCount > 0:
		c.Status, c.Code = Broken, CodeEvidenceHead
		c.Detail = fmt.Sprintf("the Coordinator reported evidence_head %s at audit_count %d, but the replayed head at seq %d is %s", t.evidenceHead, t.auditCount, t.auditCount-1, t.headAt)
	case t.headFound && t.headSeq == t.total-1:
		c.Status = Verified
		c.Detail = fmt.Sprintf("the Coordinator's evidence_head %s is the replayed head (seq %d)", t.evidenceHead, t.headSeq)
	case t.headFound:
		c.Status, c.Code = Broken, CodeEvidenceHead
		c.Detail = fmt.Sprintf("the Coordinator's evidence_head is the head at seq %d, but the bundle's chain goes on to seq %d: the two disagree on the chain's end", t.headSeq, t.total-1)
	default:
		c.Status, c.Code = Broken, CodeEvidenceHead
		c.Detail = fmt.Sprintf("the Coordinator's evidence_head %s is no head of the replayed chain", t.evidenceHead)
	}
	return c
}
