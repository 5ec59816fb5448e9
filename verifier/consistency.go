package verifier

import (
	"fmt"
	"sort"
	"strings"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
	"github.com/transparency-dev/merkle/rfc6962"
)

// maxProofFile bounds a log/consistency proof file (126 lines of 45 bytes).
const maxProofFile = 8 << 10

// linkState holds what the consistency checks learn: which verified checkpoints a verified
// proof shows to be prefixes of which.
type linkState struct {
	edges map[cpKey][]cpKey // smaller tree → larger trees it is a prefix of
}

// linkConsistent records that the tree (size1, root1) is a prefix of (size2, root2).
func (v *verifier) linkConsistent(size1 uint64, root1 []byte, size2 uint64, root2 []byte) {
	if v.links.edges == nil {
		v.links.edges = map[cpKey][]cpKey{}
	}
	a, b := cpKey{size: size1}, cpKey{size: size2}
	copy(a.root[:], root1)
	copy(b.root[:], root2)
	v.links.edges[a] = append(v.links.edges[a], b)
}

// prefixRoot returns the root of the first index leaves of a tree of size size, read from a
// verified inclusion proof of leaf index in it (RFC 9162 §2.1.3): the proof's left siblings
// are the roots of the perfect subtrees that tile leaves [0, index), largest first from the
// top, and folded from the right they are that tree's root. Combined with the signed root the
// proof leads to, this proves the smaller tree a prefix of the larger one, as a consistency
// proof would. nil when index is 0 or the path does not fit the sizes.
func prefixRoot(index, size uint64, path [][]byte) []byte {
	if index == 0 || index >= size {
		return nil
	}
	var left [][]byte // bottom-up: the smallest subtree, next to the leaf, first
	fn, sn := index, size-1
	for _, p := range path {
		if sn == 0 {
			return nil
		}
		if fn&1 == 1 || fn == sn {
			left = append(left, p)
			if fn&1 == 0 {
				for fn&1 == 0 && fn != 0 {
					fn, sn = fn>>1, sn>>1
				}
			}
		}
		fn, sn = fn>>1, sn>>1
	}
	if sn != 0 || len(left) == 0 {
		return nil
	}
	r := left[0]
	for _, l := range left[1:] {
		r = rfc6962.DefaultHasher.HashChildren(l, r)
	}
	return r
}

// rootsAt returns the roots of the verified checkpoints of one size.
func (v *verifier) rootsAt(size uint64) [][]byte {
	var out [][]byte
	for k := range v.cps {
		if k.size == size {
			out = append(out, append([]byte(nil), k.root[:]...))
		}
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i]) < string(out[j]) })
	return out
}

// checkLogProofs verifies every log/consistency/<a>-<b>.proof against the verified
// checkpoints of sizes a and b.
func (v *verifier) checkLogProofs() []Check {
	var checks []Check
	for _, name := range v.r.List("log/consistency/") {
		c := Check{Name: CheckLogConsistency, Where: name, Status: Broken, Code: CodeLogProof}
		a, b, ok := bundle.ParseLogConsistencyFile(name)
		if !ok || a == 0 || a >= b {
			v.state(name).interpreted = true
			c.Detail = "not a log/consistency/<size1>-<size2>.proof file with 0 < size1 < size2"
			checks = append(checks, c)
			continue
		}
		raw, err := v.readSmall(name, maxProofFile)
		if err != nil {
			c.Detail = err.Error()
			checks = append(checks, c)
			continue
		}
		path, err := bundle.ParseConsistencyProof(raw)
		if err != nil {
			c.Detail = err.Error()
			checks = append(checks, c)
			continue
		}
		olds, news := v.rootsAt(a), v.rootsAt(b)
		if len(olds) == 0 || len(news) == 0 {
			c.Status, c.Code = NotEvaluated, CodeNoCheckpoint
			c.Detail = fmt.Sprintf("the bundle holds no verified checkpoint of tree size %d and %d both, so the proof links nothing", a, b)
			checks = append(checks, c)
			continue
		}
		linked := false
		var forks []Check
		for _, ro := range olds {
			for _, rn := range news {
				switch consistencyVerdict(a, b, path, ro, rn) {
				case consistent:
					v.linkConsistent(a, ro, b, rn)
					linked = true
				case inconsistent:
					v.recordForkKeys(keyOf(a, ro), keyOf(b, rn), path)
					forks = append(forks, Check{Name: CheckLogConsistency, Status: Broken, Code: CodeInconsistent, Where: name,
						Detail: fmt.Sprintf("split view: the consistency proof yields the log-signed root of tree %d but implies another root for tree %d than the log-signed checkpoint of that size: the log showed two histories", b, a),
						Evidence: []string{
							fmt.Sprintf("size %d root %s in %s", a, ledger.RootString(toRoot(ro)), strings.Join(v.cps[keyOf(a, ro)], ", ")),
							fmt.Sprintf("size %d root %s in %s", b, ledger.RootString(toRoot(rn)), strings.Join(v.cps[keyOf(b, rn)], ", ")),
						}})
				}
			}
		}
		checks = append(checks, forks...)
		if !linked && len(forks) == 0 {
			c.Detail = fmt.Sprintf("the proof does not lead from the log-signed tree %d to the log-signed tree %d", a, b)
			checks = append(checks, c)
		}
	}
	return checks
}

func keyOf(size uint64, root []byte) cpKey {
	k := cpKey{size: size}
	copy(k.root[:], root)
	return k
}

// checkLogConsistency says whether every verified checkpoint is shown to be a prefix of the
// largest one by a chain of verified consistency proofs (the bundle's log/consistency files
// and the proofs of extra checkpoints). Being a prefix is transitive, so that makes every
// two of them views of one append-only log; two trees that merely extend a common third
// are not shown consistent with each other, and are not counted.
func (v *verifier) checkLogConsistency() []Check {
	sizes := map[uint64]bool{}
	var top uint64
	for k := range v.cps {
		sizes[k.size] = true
		top = max(top, k.size)
	}
	if len(sizes) < 2 {
		return nil
	}
	memo := map[cpKey]bool{}
	var reaches func(k cpKey, depth int) bool
	reaches = func(k cpKey, depth int) bool {
		if k.size == top {
			return true
		}
		if r, ok := memo[k]; ok || depth > len(v.cps) {
			return r
		}
		memo[k] = false
		for _, n := range v.links.edges[k] {
			if _, ok := v.cps[n]; ok && n.size > k.size && reaches(n, depth+1) {
				memo[k] = true
				break
			}
		}
		return memo[k]
	}
	var unlinked []string
	linked := 0
	keys := make([]cpKey, 0, len(v.cps))
	for k := range v.cps {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].size != keys[j].size {
			return keys[i].size < keys[j].size
		}
		return string(keys[i].root[:]) < string(keys[j].root[:])
	})
	for _, k := range keys {
		if k.size == top {
			continue
		}
		if reaches(k, 0) {
			linked++
			continue
		}
		unlinked = append(unlinked, fmt.Sprintf("tree size %d root %s", k.size, ledger.RootString(k.root)))
	}
	if len(unlinked) == 0 {
		return []Check{{Name: CheckLogConsistency, Status: Verified,
			Detail: fmt.Sprintf("every verified checkpoint (%d of %d tree sizes below %d) is shown by verified consistency proofs (or the inclusion proof of the leaf after it) to be a prefix of tree %d: one append-only log", linked, len(sizes)-1, top, top)}}
	}
	return []Check{{Name: CheckLogConsistency, Status: NotEvaluated, Code: CodeNoConsistency,
		Detail:   fmt.Sprintf("no consistency proof in bundle links %d checkpoint(s) to the largest tree %d: each verifies, but that the larger tree extends them is not evaluated", len(unlinked), top),
		Evidence: firstN(unlinked, maxEvidence)}}
}
