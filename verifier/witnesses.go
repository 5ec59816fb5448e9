package verifier

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"

	tlog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/misbehaviour"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/tlogpolicy"
	"github.com/evident-log/evident/tlogwitness"
)

// ExtraCheckpoint is a checkpoint gathered outside the bundle (a witness's monitoring
// endpoint, evidentd's /log/checkpoint, another bundle) to cross-check the bundle's view of
// the log against. Data is a signed checkpoint note; a tlog-witness add-checkpoint body ("old
// N", proof lines, an empty line, the checkpoint), whose proof then links it to the verified
// checkpoints of size N; or JSON that misbehaviour.ParseAll reads (a proof of misbehaviour, a
// witness's forks answer or fork record, an evidentd witness refusal with a proof), expanded
// into its checkpoints named Name#1, Name#2, … (see expandExtra).
type ExtraCheckpoint struct {
	Name string
	Data []byte
}

// seenNote is a verified checkpoint note and where it was found.
type seenNote struct {
	raw    []byte
	size   uint64
	root   []byte
	source string
}

// witnessState is what the witness checks collect while the other checks run.
type witnessState struct {
	notes  []seenNote
	proofs []extraProof
}

// extraProof is a consistency proof that came with an extra checkpoint.
type extraProof struct {
	src    string
	raw    []byte // the extra checkpoint note
	old    uint64
	hashes [][]byte
	cp     *tlog.Checkpoint
}

// distinctNotes returns the verified checkpoint notes, each distinct note once, in the order
// they were found.
func (v *verifier) distinctNotes() []seenNote {
	var out []seenNote
	seen := map[[32]byte]bool{}
	for _, n := range v.wit.notes {
		h := sha256.Sum256(n.raw)
		if !seen[h] {
			seen[h] = true
			out = append(out, n)
		}
	}
	return out
}

// noteCheckpoint records a checkpoint note that verified with the log key, for the quorum.
func (v *verifier) noteCheckpoint(raw []byte, size uint64, root []byte, source string) {
	v.wit.notes = append(v.wit.notes, seenNote{raw: raw, size: size, root: root, source: source})
}

// loadExtraCheckpoints verifies the caller's extra checkpoints with the log key and adds
// them to the log view (so one of the same size with another root is reported as a fork
// by log.fork), and keeps the consistency proofs that come with them for checkWitnesses. An
// input that is JSON but no record misbehaviour.ParseAll reads is not evaluated.
func (v *verifier) loadExtraCheckpoints() []Check {
	var checks []Check
	for _, x := range v.o.Checkpoints {
		items, err := expandExtra(x)
		if err != nil {
			checks = append(checks, Check{Name: CheckLogExtraCheckpoint, Status: NotEvaluated, Code: CodeExtraCheckpoint, Where: x.Name,
				Detail: "JSON that is no proof of misbehaviour, witness fork record or refusal with a proof, so nothing in it was cross-checked: " + err.Error()})
			continue
		}
		if len(items) == 0 {
			checks = append(checks, Check{Name: CheckLogExtraCheckpoint, Status: NotEvaluated, Code: CodeExtraCheckpoint, Where: x.Name,
				Detail: "an empty list (as a witness without forks answers) holds no checkpoint, so nothing was cross-checked"})
			continue
		}
		for _, it := range items {
			checks = append(checks, v.loadExtra(it))
		}
	}
	return checks
}

// loadExtra verifies one extra checkpoint and records it.
func (v *verifier) loadExtra(it extraItem) Check {
	src := "checkpoint " + it.name
	c := Check{Name: CheckLogExtraCheckpoint, Where: it.name}
	cp, err := v.verifyCheckpoint(it.raw)
	dropped := ""
	if err != nil && v.logKey != nil {
		// A line under the log key's name that does not verify can be appended by anyone: it
		// must not hide what the log signed (a fork, most of all). Drop it and look again.
		if signed, _, serr := misbehaviour.Signed(it.raw, []note.Verifier{v.logKey}); serr == nil {
			if scp, serr := v.verifyCheckpoint(signed); serr == nil {
				dropped = fmt.Sprintf(" (a signature line under the log key's name that does not verify was dropped: %v)", err)
				cp, err, it.raw = scp, nil, signed
			}
		}
	}
	if err != nil {
		c.Status, c.Code = NotEvaluated, CodeExtraCheckpoint
		c.Detail = "not a checkpoint signed by the bundle's log key, so it was not cross-checked: " + err.Error()
		return c
	}
	v.addCheckpoint(cp.Size, cp.Hash, src)
	v.noteCheckpoint(it.raw, cp.Size, cp.Hash, src)
	if it.hasProof {
		v.wit.proofs = append(v.wit.proofs, extraProof{src: src, raw: it.raw, old: it.old, hashes: it.hashes, cp: cp})
	}
	c.Status = Verified
	c.Detail = fmt.Sprintf("signed by the log key: tree size %d, root %s%s", cp.Size, ledger.RootString(toRoot(cp.Hash)), dropped)
	return c
}

// splitExtra separates an add-checkpoint body into its parts; anything else is a checkpoint.
func splitExtra(b []byte) (cp []byte, old uint64, proof [][]byte, ok bool) {
	if !bytes.HasPrefix(b, []byte("old ")) {
		return b, 0, nil, false
	}
	r, err := tlogwitness.ParseRequest(b)
	if err != nil || len(r.Checkpoint) > receipts.MaxCheckpointSize {
		return b, 0, nil, false
	}
	return r.Checkpoint, r.OldSize, r.Proof, true
}

// checkExtraProof uses the proof that came with an extra checkpoint against every verified
// checkpoint of the old size (the bundle's, or other extras, such as the smaller checkpoint of
// a proof of misbehaviour): a proof that reconstructs the new root while implying another old
// root proves the two checkpoints are not views of one append-only log.
func (v *verifier) checkExtraProof(p extraProof) []Check {
	if p.old == 0 || p.old >= p.cp.Size {
		return nil
	}
	var checks []Check
	seen := map[[32]byte]bool{}
	for _, n := range v.wit.notes {
		if n.size != p.old || seen[toRoot(n.root)] {
			continue
		}
		seen[toRoot(n.root)] = true
		checks = append(checks, v.extraProofAgainst(p, n))
	}
	return checks
}

// extraProofAgainst checks an extra's proof from one verified checkpoint n of its old size.
func (v *verifier) extraProofAgainst(p extraProof, n seenNote) Check {
	old, cp := p.old, p.cp
	c := Check{Name: CheckLogConsistency, Where: fmt.Sprintf("tree sizes %d and %d", old, cp.Size)}
	switch consistencyVerdict(old, cp.Size, p.hashes, n.root, cp.Hash) {
	case consistent:
		v.linkConsistent(old, n.root, cp.Size, cp.Hash)
		c.Status = Verified
		c.Detail = fmt.Sprintf("the consistency proof with %s shows tree %d extends tree %d of %s", p.src, cp.Size, old, n.source)
	case inconsistent:
		v.recordFork(n.raw, p.raw, p.hashes)
		c.Status, c.Code = Broken, CodeInconsistent
		c.Detail = fmt.Sprintf("split view: a consistency proof that yields the root of the log-signed tree %d implies another root for tree %d than the log-signed checkpoint of that size: the log showed two histories", cp.Size, old)
		c.Evidence = []string{
			fmt.Sprintf("size %d root %s in %s", old, ledger.RootString(toRoot(n.root)), n.source),
			fmt.Sprintf("size %d root %s in %s", cp.Size, ledger.RootString(toRoot(cp.Hash)), p.src),
		}
	default:
		c.Status, c.Code = NotEvaluated, CodeNoConsistency
		c.Detail = fmt.Sprintf("the proof in %s does not reconstruct its own checkpoint's root, so it says nothing about tree %d", p.src, old)
	}
	return c
}

// checkWitnesses runs the checks that need every checkpoint of the bundle: the consistency
// proofs of extra checkpoints, then the witness policy on every verified checkpoint note. A
// bundle with no trust/witness.policy gets no witness policy check (its verdicts are what
// they were before witnesses existed).
func (v *verifier) checkWitnesses() []Check {
	sizes := make([]uint64, 0, len(v.cpFiles))
	for s := range v.cpFiles {
		sizes = append(sizes, s)
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i] < sizes[j] })
	for _, s := range sizes {
		raw := v.cpFiles[s]
		if cp, err := v.verifyCheckpoint(raw); err == nil {
			v.noteCheckpoint(raw, cp.Size, cp.Hash, bundle.CheckpointFile(s))
		}
	}
	var checks []Check
	for _, p := range v.wit.proofs {
		checks = append(checks, v.checkExtraProof(p)...)
	}
	return append(checks, v.checkPolicy()...)
}

// checkPolicy evaluates the witness policy on every verified checkpoint note: the pinned one
// when a trust file was given (Options.Trust), else the bundle's trust/witness.policy. A
// policy that only the bundle names is used, so bad cosignatures are still found, but its
// trust.witness_policy check is not evaluated (trust_not_pinned): whoever made the bundle
// chose it. A bundle policy that differs from the pinned one is reported and not used.
func (v *verifier) checkPolicy() []Check {
	var bundled *tlogpolicy.Policy
	if v.listed(bundle.WitnessPolicyFile) {
		c := Check{Name: CheckTrustWitnessPolicy, Where: bundle.WitnessPolicyFile}
		b, err := v.readSmall(bundle.WitnessPolicyFile, tlogpolicy.MaxSize)
		if err != nil {
			c.Status, c.Code, c.Detail = Broken, CodeWitnessPolicy, err.Error()
			return []Check{c}
		}
		if bundled, err = tlogpolicy.Parse(b); err != nil {
			c.Status, c.Code, c.Detail = Broken, CodeWitnessPolicy, err.Error()
			return []Check{c}
		}
	}
	p, c := v.choosePolicy(bundled)
	if p == nil {
		return nil
	}
	for _, w := range p.Witnesses {
		c.Evidence = append(c.Evidence, w.Name+" "+w.VKey)
	}
	checks := []Check{c}

	fr := tlogpolicy.Freshness{Now: v.o.Now(), MaxAge: v.o.WitnessMaxAge}
	met := 0
	notes := v.distinctNotes()
	for _, n := range notes {
		r := p.Evaluate(n.raw, fr)
		if len(r.Invalid) > 0 {
			checks = append(checks, Check{Name: CheckWitnessCosignature, Status: Broken, Code: CodeCosignatureInvalid, Where: n.source,
				Detail:   fmt.Sprintf("the checkpoint of tree size %d carries a cosignature line of %s that does not verify: altered or forged", n.size, strings.Join(r.Invalid, ", ")),
				Evidence: []string{string(n.raw)}})
		}
		if r.Satisfied {
			met++
			continue
		}
		q := Check{Name: CheckWitnessQuorum, Status: NotEvaluated, Code: CodeQuorumUnmet, Where: n.source,
			Detail: fmt.Sprintf("the checkpoint of tree size %d is not cosigned by the witness quorum (%s): that every reader was shown this same log is not established for it", n.size, p.Describe())}
		q.Evidence = append(q.Evidence, "cosigned by: "+orNone(r.Cosigned))
		if len(r.Stale) > 0 {
			q.Evidence = append(q.Evidence, fmt.Sprintf("cosignatures older than %v, not counted: %s", v.o.WitnessMaxAge, strings.Join(r.Stale, ", ")))
		}
		checks = append(checks, q)
	}
	checks = append(checks, v.checkPQQuorum(p)...) // --require-pq (postquantum.go)
	if met > 0 && met == len(notes) {
		d := fmt.Sprintf("every checkpoint (%d) is cosigned by the witness quorum: %s", met, p.Describe())
		if v.o.WitnessMaxAge > 0 {
			d += fmt.Sprintf(", cosignatures no older than %v", v.o.WitnessMaxAge)
		}
		checks = append(checks, Check{Name: CheckWitnessQuorum, Status: Verified, Detail: d})
	} else if len(notes) == 0 {
		checks = append(checks, Check{Name: CheckWitnessQuorum, Status: NotEvaluated, Code: CodeNoCheckpoint,
			Detail: "the bundle holds no verified checkpoint to evaluate the witness quorum on"})
	}
	return checks
}

// choosePolicy picks the policy that judges the quorum and says why in the
// trust.witness_policy check; nil when there is none to evaluate.
func (v *verifier) choosePolicy(bundled *tlogpolicy.Policy) (*tlogpolicy.Policy, Check) {
	c := Check{Name: CheckTrustWitnessPolicy, Where: bundle.WitnessPolicyFile}
	pinned := v.pins.policy
	switch {
	case pinned == nil && bundled == nil:
		return nil, c
	case !v.pins.policySet:
		c.Status, c.Code = NotEvaluated, CodeTrustNotPinned
		c.Detail = fmt.Sprintf("witness policy taken from the bundle, not pinned: %d witness(es), quorum %s; the quorum is evaluated with it, but the bundle's maker chose it (%s)", len(bundled.Witnesses), bundled.Describe(), PinAdvice)
		return bundled, c
	case pinned == nil:
		c.Status, c.Code = NotEvaluated, CodeTrustNotPinned
		c.Detail = fmt.Sprintf("the pinned trust file names no witness policy, the bundle names one (%d witness(es), quorum %s): the quorum is evaluated with the bundle's, which the operator does not publish", len(bundled.Witnesses), bundled.Describe())
		return bundled, c
	}
	c.Where = "pinned trust file"
	c.Status = Verified
	c.Detail = fmt.Sprintf("pinned witness policy: %d witness(es), quorum %s; it judges every checkpoint's cosignatures", len(pinned.Witnesses), pinned.Describe())
	switch {
	case bundled == nil:
		c.Detail += " (the bundle names no policy)"
	case bundled.WithoutURLs().String() != pinned.WithoutURLs().String():
		c.Detail += fmt.Sprintf("; the bundle's %s differs (quorum %s) and is not used", bundle.WitnessPolicyFile, bundled.Describe())
		for _, w := range bundled.Witnesses {
			c.Evidence = append(c.Evidence, "bundle policy, not used: "+w.Name+" "+w.VKey)
		}
	}
	return pinned, c
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

func toRoot(b []byte) [32]byte {
	var r [32]byte
	copy(r[:], b)
	return r
}

// The verifier's names for misbehaviour's consistency verdicts.
type consistencyResult = misbehaviour.Verdict

const (
	undetermined = misbehaviour.Undetermined
	consistent   = misbehaviour.Consistent
	inconsistent = misbehaviour.Inconsistent
)

// consistencyVerdict is misbehaviour.Consistency.
func consistencyVerdict(size1, size2 uint64, path [][]byte, root1, root2 []byte) consistencyResult {
	return misbehaviour.Consistency(size1, size2, path, root1, root2)
}
