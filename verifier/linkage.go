package verifier

import (
	"fmt"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile"
)

// Linkage is how much of a chain the records' own predecessor links (CHAP
// evidence.prev_hash) cover: the Coordinator's evidence chain, as opposed to the links
// Evident computed at ingest. Records before CheckedFromSeq name no predecessor, so that
// the Coordinator's chain holds them in that order is not evaluated.
type Linkage struct {
	EntriesTotal     uint64 `json:"entries_total"`
	EntriesChecked   uint64 `json:"entries_checked"`   // records from CheckedFromSeq on that name their predecessor
	EntriesUnchecked uint64 `json:"entries_unchecked"` // records that name none
	CheckedFromSeq   uint64 `json:"checked_from_seq"`  // first record that names a predecessor (= total when none does)
}

// linkageTrack watches a replay for the records' own predecessor links and per-sender time.
type linkageTrack struct {
	total        uint64
	firstLinked  uint64
	linked       bool
	unlinkedLate uint64
	lateSeqs     []uint64
	lastTS       map[string]time.Time
	regressions  uint64
	regressSeqs  []string
	headSeq      uint64 // seq whose link is the manifest's evidence_head
	headFound    bool
	evidenceHead ledger.Link
	hasEvidence  bool
}

func newLinkageTrack(ref bundle.ChainRef) *linkageTrack {
	t := &linkageTrack{lastTS: map[string]time.Time{}}
	if ref.EvidenceHead != nil {
		t.evidenceHead, t.hasEvidence = *ref.EvidenceHead, true
	}
	return t
}

// observe reads one admitted record at seq.
func (t *linkageTrack) observe(seq uint64, a *ledger.Appended) {
	t.total = seq + 1
	adm := a.Admission
	if adm.PrevHash != nil {
		if !t.linked {
			t.linked, t.firstLinked = true, seq
		}
	} else if t.linked {
		t.unlinkedLate++
		if len(t.lateSeqs) < 5 {
			t.lateSeqs = append(t.lateSeqs, seq)
		}
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
	if t.hasEvidence && a.Link == t.evidenceHead && !t.headFound {
		t.headSeq, t.headFound = seq, true
	}
}

// coverage returns the Linkage counts.
func (t *linkageTrack) coverage() Linkage {
	l := Linkage{EntriesTotal: t.total, CheckedFromSeq: t.total}
	if t.linked {
		l.CheckedFromSeq = t.firstLinked
		l.EntriesChecked = t.total - t.firstLinked - t.unlinkedLate
	}
	l.EntriesUnchecked = t.total - l.EntriesChecked
	return l
}

// linked reports whether a profile's records are meant to name their predecessor
// (ledger.Linked: CHAP's evidence.prev_hash), so the chain's own linkage is reported.
func linked(name string) bool {
	prof, ok := profile.Lookup(name)
	if !ok {
		return false
	}
	_, ok = prof.(ledger.Linked)
	return ok
}

// checks turns the track into checks. The linkage check is made for chains whose profile's
// records name their predecessor (ledger.Linked); the time and evidence_head checks for
// every profile.
func (t *linkageTrack) checks(ref bundle.ChainRef, res *replayResult) []Check {
	var out []Check
	if !res.complete() {
		return nil // the replay stopped: chain.entries already says where
	}
	if linked(ref.Profile) && t.total > 0 {
		l := t.coverage()
		c := Check{Name: CheckChainLinkage, Chain: ref.ID}
		counts := fmt.Sprintf("entries_total=%d entries_checked=%d entries_unchecked=%d checked_from_seq=%d", l.EntriesTotal, l.EntriesChecked, l.EntriesUnchecked, l.CheckedFromSeq)
		switch {
		case !t.linked || t.firstLinked > 0:
			c.Status, c.Code, c.Where = NotEvaluated, CodeUnchainedPrefix, "seq 0"
			c.Detail = fmt.Sprintf("the first %d record(s) name no prev_hash: the Coordinator's own evidence chain does not cover them, so their order and completeness before seq %d is Evident's word only (not evaluated)", l.CheckedFromSeq, l.CheckedFromSeq)
			c.Evidence = []string{counts}
		case t.unlinkedLate > 0:
			c.Status, c.Code = NotEvaluated, CodeUnchainedRecords
			c.Detail = fmt.Sprintf("%d record(s) after seq %d name no prev_hash: the Coordinator's chain does not cover them", t.unlinkedLate, t.firstLinked)
			c.Evidence = []string{counts}
			for _, s := range t.lateSeqs {
				c.Evidence = append(c.Evidence, fmt.Sprintf("seq %d", s))
			}
		default:
			c.Status = Verified
			c.Detail = fmt.Sprintf("every record names its predecessor (evidence.prev_hash) from genesis: the Coordinator's evidence chain and Evident's agree on all %d entries", l.EntriesTotal)
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
		c := Check{Name: CheckChainEvidenceHead, Chain: ref.ID, Where: bundle.ManifestFile}
		switch {
		case t.headFound && t.headSeq == t.total-1:
			c.Status = Verified
			c.Detail = fmt.Sprintf("the Coordinator's evidence_head %s is the replayed head (seq %d)", t.evidenceHead, t.headSeq)
		case t.headFound:
			c.Status, c.Code = Broken, CodeEvidenceHead
			c.Detail = fmt.Sprintf("the Coordinator's evidence_head is the link of seq %d, but the bundle's chain goes on to seq %d: the two disagree on the chain's end", t.headSeq, t.total-1)
		default:
			c.Status, c.Code = Broken, CodeEvidenceHead
			c.Detail = fmt.Sprintf("the Coordinator's evidence_head %s is no link of the replayed chain", t.evidenceHead)
		}
		out = append(out, c)
	}
	return out
}
