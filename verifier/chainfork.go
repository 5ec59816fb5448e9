package verifier

import (
	"bytes"
	"fmt"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/receipts"
)

// sealEvidence names a seal statement and what it commits to.
func sealEvidence(s *sealInfo) string {
	return fmt.Sprintf("%s: seal %d of size %d, root %s, head %s, prev_seal %q, sealed_at %s", s.file, s.n, s.seal.Size, s.seal.Root, s.seal.Head, s.seal.PrevSeal, s.seal.SealedAt)
}

// checkChainConsistency links every two successive seals of a chain: by a chain consistency
// receipt (chains/<dir>/proofs/consistency-<n-1>-<n>.cose) between their roots, by equal
// roots when the sizes are equal, or by the replay when it recomputed both sealed states.
// Two seals that a proof shows are not one history, that seal one size with two roots, or
// that continue the same earlier seal (two lineages) are a chain fork: broken, with both
// statements as evidence.
func (v *verifier) checkChainConsistency(ref bundle.ChainRef, seals []*sealInfo, res *replayResult) []Check {
	var checks []Check
	fork := func(a, b *sealInfo, format string, args ...any) {
		checks = append(checks, Check{Name: CheckChainConsistency, Chain: ref.ID, Status: Broken, Code: CodeChainFork,
			Where: fmt.Sprintf("seals %d and %d", a.n, b.n), Detail: fmt.Sprintf(format, args...),
			Evidence: []string{sealEvidence(a), sealEvidence(b)}})
	}
	// Two lineages: a seal whose prev_seal names an earlier seal than its predecessor.
	byEntry := map[string]int{}
	for i, s := range seals {
		if s.hasEntry {
			byEntry[ledger.Link(s.entry).String()] = i
		}
	}
	for i, s := range seals {
		if !s.hasSeal || s.seal.PrevSeal == "" {
			continue
		}
		if j, ok := byEntry[s.seal.PrevSeal]; ok && j < i-1 && seals[j+1].hasSeal {
			fork(seals[j+1], s, "seals %d and %d both continue seal %d: the chain's seal lineage forked", j+1, i, j)
		}
	}

	pairs, byProof, byReplay := 0, 0, 0
	var unlinked []string
	for i := 1; i < len(seals); i++ {
		a, b := seals[i-1], seals[i]
		file := bundle.ChainConsistencyFile(ref.Dir, a.n, b.n)
		if !a.hasSeal || !b.hasSeal {
			if v.listed(file) {
				v.state(file).interpreted = true
			}
			continue
		}
		ra, errA := ledger.ParseLink(a.seal.Root)
		rb, errB := ledger.ParseLink(b.seal.Root)
		if errA != nil || errB != nil || b.seal.Size < a.seal.Size {
			if v.listed(file) {
				v.state(file).interpreted = true
			}
			continue // seal.payload or seal.lineage already says what is wrong
		}
		pairs++
		switch {
		case a.seal.Size == b.seal.Size:
			if ra != rb {
				fork(a, b, "seals %d and %d seal the same size %d with different roots: two histories of the chain", a.n, b.n, a.seal.Size)
			} else {
				byProof++
			}
			if v.listed(file) {
				v.state(file).interpreted = true
			}
			continue
		case a.seal.Size == 0:
			byProof++ // the empty tree is a prefix of every tree
			if v.listed(file) {
				v.state(file).interpreted = true
			}
			continue
		}
		if v.listed(file) {
			switch v.chainProof(ref, file, a, b, ra[:], rb[:]) {
			case consistent:
				byProof++
			case inconsistent:
				fork(a, b, "the chain consistency proof yields seal %d's root but implies another root at size %d than seal %d's: the two seals are not one history of the chain", b.n, a.seal.Size, a.n)
			default:
				checks = append(checks, Check{Name: CheckChainConsistency, Chain: ref.ID, Status: Broken, Code: CodeChainProof, Where: file,
					Detail:   fmt.Sprintf("%s does not link seal %d (size %d) to seal %d (size %d): %s", file, a.n, a.seal.Size, b.n, b.seal.Size, v.chainProofErr),
					Evidence: []string{sealEvidence(a), sealEvidence(b)}})
			}
			continue
		}
		if res != nil && stateMatches(res, a) && stateMatches(res, b) {
			byReplay++
			continue
		}
		unlinked = append(unlinked, fmt.Sprintf("seals %d-%d (sizes %d-%d)", a.n, b.n, a.seal.Size, b.seal.Size))
	}
	if len(checks) > 0 || pairs == 0 {
		return checks
	}
	if len(unlinked) > 0 {
		return []Check{{Name: CheckChainConsistency, Chain: ref.ID, Status: NotEvaluated, Code: CodeNoConsistency,
			Detail:   fmt.Sprintf("%d of %d pair(s) of successive seals are linked by neither a chain consistency proof nor the replayed entries: that the later seal extends the earlier is not evaluated", len(unlinked), pairs),
			Evidence: firstN(unlinked, maxEvidence)}}
	}
	return []Check{{Name: CheckChainConsistency, Chain: ref.ID, Status: Verified,
		Detail: fmt.Sprintf("%d pair(s) of successive seals are one history: %d by chain consistency proofs or equal roots, %d by the replayed entries", pairs, byProof, byReplay)}}
}

// stateMatches says whether the replay recomputed seal s's size with its head and root.
func stateMatches(res *replayResult, s *sealInfo) bool {
	st, ok := res.states[s.seal.Size]
	return ok && st.head == s.seal.Head && ledger.RootString(st.root) == s.seal.Root
}

// chainProof reads and checks one chain consistency receipt between seals a and b. The
// verdict needs no signature: both roots come from seal statements the service signed, and
// a path that reproduces b's root while implying another root at a's size shows, by
// collision resistance, that a's tree is not a prefix of b's. The receipt's own signature
// (by an issuer key, over b's root, subject the chain) is checked for a consistent verdict
// so that a bundle cannot carry an unsigned receipt unnoticed.
func (v *verifier) chainProof(ref bundle.ChainRef, file string, a, b *sealInfo, ra, rb []byte) consistencyResult {
	v.chainProofErr = ""
	raw, err := v.readSmall(file, receipts.MaxStatementSize)
	if err != nil {
		v.chainProofErr = err.Error()
		return undetermined
	}
	r, err := receipts.ParseReceipt(raw)
	if err != nil {
		v.chainProofErr = err.Error()
		return undetermined
	}
	if len(r.Consistency) != 1 || len(r.Inclusion) != 0 {
		v.chainProofErr = "want exactly one consistency proof"
		return undetermined
	}
	p := r.Consistency[0]
	if p.Size1 != a.seal.Size || p.Size2 != b.seal.Size {
		v.chainProofErr = fmt.Sprintf("the proof is between sizes %d and %d", p.Size1, p.Size2)
		return undetermined
	}
	verdict := consistencyVerdict(p.Size1, p.Size2, p.Path, ra, rb)
	if verdict != consistent {
		if verdict == undetermined {
			v.chainProofErr = "the proof does not reproduce the later seal's root from the earlier seal's"
		}
		return verdict
	}
	if r.Claims.Subject != ref.ID {
		v.chainProofErr = fmt.Sprintf("the receipt's subject %.80q is not the chain", r.Claims.Subject)
		return undetermined
	}
	if v.issuersErr {
		return consistent // trust.issuers already says the keys are unusable; the math holds
	}
	for _, k := range v.keysFor(r.KeyID) {
		if root, _, err := receipts.VerifyConsistency(raw, ra, k.pub); err == nil && bytes.Equal(root, rb) {
			return consistent
		}
	}
	v.chainProofErr = "the receipt is not signed by an issuer key over the later seal's root"
	return undetermined
}
