package verifier

import (
	"fmt"
	"io"
	"sort"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
)

// provenanceState collects, chain by chain, what the cross-chain provenance check needs: each
// chain's replayed roots and closure, and the references to other chains (ledger.Referrer:
// OWP provenance).
type provenanceState struct {
	chains map[string]*provChain
	refs   map[string][]ledger.Reference // referencing chain → its references
	order  []string                      // referencing chains in bundle order
}

type provChain struct {
	profile  string
	dir      string
	complete bool            // replayed to the end with no break
	closed   bool            // closed by its last record or a closing seal
	roots    map[string]bool // recomputed Merkle roots at every seal's size and at the end
}

// recordProvenance notes a replayed chain for provenanceChecks.
func (v *verifier) recordProvenance(ref bundle.ChainRef, res *replayResult, seals []*sealInfo) {
	p := &v.prov
	if p.chains == nil {
		p.chains, p.refs = map[string]*provChain{}, map[string][]ledger.Reference{}
	}
	pc := &provChain{profile: ref.Profile, dir: ref.Dir, roots: map[string]bool{}}
	p.chains[ref.ID] = pc
	if res == nil || res.chain == nil {
		return
	}
	pc.complete = res.complete()
	pc.closed = res.chain.Closed
	for _, s := range seals {
		if s.hasSeal && s.seal.Closed {
			pc.closed = true
		}
	}
	for _, st := range res.states {
		pc.roots[ledger.RootString(st.root)] = true
	}
	pc.roots[ledger.RootString(res.chain.Root())] = true
	if _, ok := v.crossChain(ref.Profile); !ok {
		return
	}
	if st, ok := res.chain.State.(ledger.Referrer); ok {
		if refs := st.References(); len(refs) > 0 {
			p.refs[ref.ID] = refs
			p.order = append(p.order, ref.ID)
		}
	}
}

// crossChain returns the registry's adapter of a profile whose chains reference other chains.
func (v *verifier) crossChain(name string) (ledger.CrossChain, bool) {
	prof, ok := v.registry().Lookup(name)
	if !ok {
		return nil, false
	}
	cc, ok := prof.(ledger.CrossChain)
	return cc, ok
}

// provenanceChecks resolves every reference to another chain (ledger.Referrer; OWP:
// provenance.prior_envelope, and optionally prior_event and prior_root) against the chains the
// bundle holds: a target the bundle does not hold is not evaluated; a target it holds must be
// a chain of the referring one's profile replayed to the end, hold the named record and have
// had the named root at one of its seals (or at its end).
func (v *verifier) provenanceChecks() []Check {
	p := &v.prov
	// Record ids to look for, per target chain.
	want := map[string]map[string]bool{}
	for _, id := range p.order {
		for _, r := range p.refs[id] {
			if t := p.chains[r.Chain]; t != nil && r.Event != "" && t.complete && t.profile == p.chains[id].profile {
				if want[r.Chain] == nil {
					want[r.Chain] = map[string]bool{}
				}
				want[r.Chain][r.Event] = false
			}
		}
	}
	targets := make([]string, 0, len(want))
	for t := range want {
		targets = append(targets, t)
	}
	sort.Strings(targets)
	for _, t := range targets {
		cc, _ := v.crossChain(p.chains[t].profile)
		if err := v.findRecords(p.chains[t].dir, cc, want[t]); err != nil {
			return nil
		}
	}
	var checks []Check
	for _, id := range p.order {
		from := p.chains[id]
		cc, _ := v.crossChain(from.profile)
		c := Check{Name: cc.ReferenceCheck(), Chain: id, Status: Verified}
		var broken, absent, ok int
		for _, r := range p.refs[id] {
			t := p.chains[r.Chain]
			what := fmt.Sprintf("seq %d → %s", r.Seq, r.Chain)
			if r.Event != "" {
				what += " event " + r.Event
			}
			if r.Root != "" {
				what += " root " + r.Root
			}
			var verdict string
			switch {
			case t == nil:
				absent++
				verdict = "not evaluated: the bundle does not hold that envelope (export it with the same bundle: /v1/export?chain=…&chain=…)"
			case t.profile != from.profile:
				broken++
				verdict = fmt.Sprintf("broken: the bundle's chain of that id is a %s chain, not an OWP envelope", t.profile)
			case !t.complete:
				absent++
				verdict = "not evaluated: that envelope's replay stopped (see its chain.entries)"
			case r.Event != "" && !want[r.Chain][r.Event]:
				broken++
				verdict = "broken: that envelope holds no event with this event_id"
			case r.Root != "" && !t.roots[r.Root]:
				broken++
				verdict = "broken: that root is the envelope's Merkle root at none of its seals nor at its end"
			default:
				ok++
				verdict = "resolved"
				if !t.closed {
					verdict += " (note: the prior envelope is not closed in this bundle)"
				}
			}
			c.Evidence = append(c.Evidence, what+": "+verdict)
		}
		switch {
		case broken > 0:
			c.Status, c.Code = Broken, CodeProvenanceBroken
		case absent > 0:
			c.Status, c.Code = NotEvaluated, CodeProvenanceAbsent
		}
		c.Detail = fmt.Sprintf("%d provenance reference(s) to other envelopes: %d resolved in the bundle, %d broken, %d not evaluated", len(p.refs[id]), ok, broken, absent)
		c.Evidence = firstN(c.Evidence, maxEvidence)
		checks = append(checks, c)
	}
	return checks
}

// findRecords streams a chain's entries and marks the wanted record ids it holds.
func (v *verifier) findRecords(dir string, cc ledger.CrossChain, want map[string]bool) error {
	f, err := v.open(bundle.EntriesFile(dir))
	if err != nil {
		return nil // the chain's own checks report it; nothing is found
	}
	defer f.Close()
	br := NewLines(f, MaxLineSize(v.o.Limits))
	for n := 0; ; n++ {
		if n%progressEvery == 0 {
			if err := v.ctx.Err(); err != nil {
				return err
			}
		}
		line, err := readJSONLine(br)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return nil
		}
		e, err := parseEntryLine(line)
		if err != nil {
			continue
		}
		if id, err := cc.ReferencedID(e.Record); err == nil {
			if _, ok := want[id]; ok {
				want[id] = true
			}
		}
	}
}
