package verifier

import (
	"fmt"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
)

// profileChecks reports what a profile's replay concluded beyond admitting records
// (ledger.Auditor: ChiefLab's critical findings, COP parents) and closure: no entry may follow
// a seal that closed the chain, nor the record that closed it (an OWP root Intent resolving).
func profileChecks(ref bundle.ChainRef, res *replayResult, seals []*sealInfo) []Check {
	if res == nil || res.chain == nil {
		return nil
	}
	var checks []Check
	if au, ok := res.chain.State.(ledger.Auditor); ok {
		byCheck := map[CheckName][]ledger.Finding{}
		for _, f := range au.Findings() {
			byCheck[f.Check] = append(byCheck[f.Check], f)
		}
		for _, name := range au.Checks() {
			c := Check{Name: name, Chain: ref.ID}
			fs := byCheck[name]
			switch {
			case !res.complete():
				c.Status, c.Code = NotEvaluated, CodeNotReplayed
				c.Detail = fmt.Sprintf("the replay stopped at seq %d; the %s rules were evaluated only up to there", res.brkSeq, ref.Profile)
				if len(fs) == 0 {
					break
				}
				fallthrough
			case len(fs) > 0:
				c.Status, c.Code, c.Where = NotEvaluated, fs[0].Code, fmt.Sprintf("seq %d", fs[0].Seq)
				c.Detail = fs[0].Detail
				for _, f := range fs {
					if f.Severity == ledger.Critical && c.Status != Broken {
						c.Status, c.Code, c.Where, c.Detail = Broken, f.Code, fmt.Sprintf("seq %d", f.Seq), "critical: "+f.Detail
					}
					c.Evidence = append(c.Evidence, fmt.Sprintf("seq %d: %s (%s): %s", f.Seq, f.Code, f.Severity, f.Detail))
				}
			default:
				c.Status = Verified
				// Named by check: the story's findings (a CHAP replay's warnings) are another
				// axis, reported beside the verdict (Report.Story), and this must not read as
				// their absence.
				c.Detail = fmt.Sprintf("%d entries replayed under the %s rules with no %s finding", res.total, ref.Profile, name)
			}
			checks = append(checks, c)
		}
	}
	for _, s := range seals {
		if s.hasSeal && s.seal.Closed && res.total > s.seal.Size {
			checks = append(checks, Check{Name: CheckChainClosure, Chain: ref.ID, Status: Broken, Code: ledger.CodeAfterClosure,
				Where: fmt.Sprintf("seq %d", s.seal.Size), Evidence: []string{s.file},
				Detail: fmt.Sprintf("seal %d closed the chain at size %d, but the bundle holds %d entries: nothing may follow closure", s.n, s.seal.Size, res.total)})
			return checks
		}
	}
	if res.brk != nil && res.brk.Code == ledger.CodeClosed {
		checks = append(checks, Check{Name: CheckChainClosure, Chain: ref.ID, Status: Broken, Code: ledger.CodeAfterClosure, Where: res.brk.Where,
			Detail: fmt.Sprintf("an entry follows the record that closed the chain (seq %d)", res.brkSeq)})
	} else if res.complete() && res.chain.Closed {
		checks = append(checks, Check{Name: CheckChainClosure, Chain: ref.ID, Status: Verified,
			Detail: fmt.Sprintf("the chain was closed by its last record (seq %d) and nothing follows it", res.total-1)})
	}
	return checks
}

// serviceAttested returns, for a profile whose records carry no sender signature by design
// (ledger.ServiceAttested: ChiefLab, where evidentd authenticates the submitting operator and
// writes it into the hashed record), what vouches for the records instead; "" otherwise.
func serviceAttested(res *replayResult) string {
	if res == nil || res.chain == nil || res.sigOK > 0 || res.sigFailCount > 0 {
		return ""
	}
	sa, ok := res.chain.State.(ledger.ServiceAttested)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d record(s) carry no sender signature under %s by design: %s", res.unsigned, res.chain.Profile, sa.AttestedBy())
}
