package verifier

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/receipts"
)

// sealInfo is one seal file and what was established about it.
type sealInfo struct {
	n        uint64
	file     string
	entry    [32]byte // log entry of the statement (receipts.EntryHash)
	hasEntry bool
	seal     ledger.Seal
	hasSeal  bool // payload parsed (whatever the rest says)
	logIndex uint64
	treeSize uint64
	cps      []cpKey // verified checkpoints its receipts lead to
	problems []Check // broken or not evaluated findings
}

func (s *sealInfo) add(status Status, name CheckName, code Code, format string, args ...any) *Check {
	s.problems = append(s.problems, Check{Name: name, Status: status, Code: code, Where: fmt.Sprintf("seal %d", s.n),
		Detail: fmt.Sprintf(format, args...), Evidence: []string{s.file}})
	return &s.problems[len(s.problems)-1]
}

func (s *sealInfo) verified() bool { return len(s.problems) == 0 }

// verifyChain checks one chain of the manifest: its seals, its entries and how they agree.
func (v *verifier) verifyChain(ref bundle.ChainRef) (ChainReport, []Check, error) {
	if ref.Slice != nil {
		return v.verifySlice(ref) // a case slice: slice.go
	}
	cr := ChainReport{ID: ref.ID, Profile: ref.Profile, Participants: []Participant{}}
	var checks []Check
	seals, numbering := v.readSeals(ref)
	checks = append(checks, numbering...)
	claimed := map[uint64]bool{}
	for _, s := range seals {
		if s.hasSeal {
			claimed[s.seal.Size] = true
		}
	}
	var res *replayResult
	if prof, ok := v.registry().Lookup(ref.Profile); !ok {
		v.state(bundle.EntriesFile(ref.Dir)).interpreted = true
		checks = append(checks, Check{Name: CheckChainProfile, Chain: ref.ID, Status: NotEvaluated, Code: CodeUnknownProfile,
			Detail: fmt.Sprintf("this verifier has no adapter for profile %q: the chain's entries, signatures and seal states are not evaluated", ref.Profile)})
	} else {
		var err error
		if res, err = v.replay(ref, prof, claimed); err != nil {
			return cr, nil, err
		}
		checks = append(checks, res.entryChecks(ref)...)
		checks = append(checks, res.linkage.checks(ref, res, v.linked(ref.Profile))...)
		if _, ok := prof.(ledger.Linked); ok && res.complete() && res.total > 0 {
			l := res.linkage.coverage()
			cr.Linkage = &l
		}
		cr.Coverage.EntriesTotal = res.total
		cr.Coverage.EntriesChecked = res.checked
		cr.Coverage.EntriesUnchecked = res.total - res.checked
		cr.Coverage.SignaturesVerified = res.sigOK
		cr.Coverage.Unsigned = res.unsigned
		cr.Coverage.Unsignable = res.unsignable
		if res.chain != nil {
			cr.Size, cr.Head, cr.Root = res.chain.Size, res.chain.Head.String(), ledger.RootString(res.chain.Root())
			if p := participants(res.chain.State); p != nil {
				cr.Participants = p
			}
		}
	}
	sealChecks := v.sealStates(ref, seals, res, &cr.Coverage)
	checks = append(checks, sealChecks...)
	checks = append(checks, v.checkChainConsistency(ref, seals, res)...) // chainfork.go
	checks = append(checks, profileChecks(ref, res, seals)...)
	checks = append(checks, v.bundleChecks(ref)...)
	v.recordProvenance(ref, res, seals)
	return cr, checks, nil
}

// readSeals reads chains/<dir>/seals/*.cose in order and checks everything that does not
// need the replay: format, issuer signature, payload, lineage, receipts and checkpoints.
func (v *verifier) readSeals(ref bundle.ChainRef) ([]*sealInfo, []Check) {
	var checks []Check
	names := v.r.List("chains/" + ref.Dir + "/seals/")
	var seals []*sealInfo
	for i, name := range names {
		if want := bundle.SealFile(ref.Dir, uint64(i)); name != want {
			v.state(name).interpreted = true
			checks = append(checks, Check{Name: CheckSealNumbering, Chain: ref.ID, Status: Broken, Code: CodeSealNumbering, Where: name,
				Detail: fmt.Sprintf("seal files must be numbered 0..n-1 with no gap: found %s where %s was expected", name, want)})
			break
		}
		seals = append(seals, &sealInfo{n: uint64(i), file: name})
	}
	for i, s := range seals {
		var prev *sealInfo
		if i > 0 {
			prev = seals[i-1]
		}
		v.readSeal(ref, s, prev)
	}
	return seals, checks
}

func (v *verifier) readSeal(ref bundle.ChainRef, s, prev *sealInfo) {
	raw, err := v.readSmall(s.file, receipts.MaxStatementSize)
	if err != nil {
		s.add(Broken, CheckSealFormat, CodeSealFormat, "%v", err)
		return
	}
	stmt, rcpts, err := receipts.SplitTransparent(raw)
	if err != nil {
		s.add(Broken, CheckSealFormat, CodeSealFormat, "not a transparent statement: %v", err)
		return
	}
	st, err := receipts.ParseStatement(stmt)
	if err != nil {
		s.add(Broken, CheckSealFormat, CodeSealFormat, "not a signed statement: %v", err)
		return
	}
	if s.entry, err = receipts.EntryHash(stmt); err != nil {
		s.add(Broken, CheckSealFormat, CodeSealFormat, "log entry: %v", err)
		return
	}
	s.hasEntry = true

	// The issuer's signature over the statement.
	switch keys := v.keysFor(st.KeyID); {
	case v.issuersErr:
		s.add(NotEvaluated, CheckSealSignature, CodeTrust, "no usable issuer keys (see trust.issuers): the seal statement's signature is not evaluated")
	case len(keys) == 0:
		s.add(Broken, CheckSealSignature, CodeSealSignature, "the seal statement names kid %s, which is not in %s", hex.EncodeToString(st.KeyID), bundle.IssuersFile)
	default:
		ok := false
		for _, k := range keys {
			if st.Verify(k.pub) == nil {
				ok = true
				break
			}
		}
		if !ok {
			s.add(Broken, CheckSealSignature, CodeSealSignature, "the seal statement's signature does not verify with the issuer key (the statement was altered or not signed by the service)")
		} else if err := v.keyWindow(st.KeyID, st.Claims.IssuedAt); err != nil {
			s.add(Broken, CheckSealSignature, CodeKeyWindow, "the seal statement: %v", err)
		}
	}

	// The payload: this chain's seal.
	if st.ContentType != ledger.SealContentType {
		s.add(Broken, CheckSealPayload, CodeSealPayload, "content type %.80q is not %s", st.ContentType, ledger.SealContentType)
		return
	}
	seal, err := ledger.ParseSeal(st.Payload)
	if err != nil {
		s.add(Broken, CheckSealPayload, CodeSealPayload, "%v", err)
		return
	}
	s.seal, s.hasSeal = seal, true
	if seal.Chain != ref.ID {
		s.add(Broken, CheckSealPayload, CodeSealPayload, "the seal is for chain %.80q, not %.80q", seal.Chain, ref.ID)
	}
	if seal.Profile != ref.Profile {
		s.add(Broken, CheckSealPayload, CodeSealPayload, "the seal names profile %.40q, the chain is %.40q", seal.Profile, ref.Profile)
	}
	if st.Claims.Subject != seal.Chain {
		s.add(Broken, CheckSealPayload, CodeSealPayload, "the statement's subject %.80q is not the sealed chain %.80q", st.Claims.Subject, seal.Chain)
	}
	if _, err := ledger.ParseLink(seal.Root); err != nil {
		s.add(Broken, CheckSealPayload, CodeSealPayload, "root: %v", err)
	}

	// Lineage: each seal names the log entry of the one before it.
	switch {
	case prev == nil:
		if seal.PrevSeal != "" {
			s.add(Broken, CheckSealLineage, CodeSealLineage, "the first seal in the bundle names a previous seal %.80q (the bundle does not start at the chain's first seal)", seal.PrevSeal)
		}
	case !prev.hasEntry:
		s.add(NotEvaluated, CheckSealLineage, CodeSealLineage, "the previous seal could not be read, so prev_seal is not evaluated")
	default:
		want := ledger.Link(prev.entry).String()
		if seal.PrevSeal != want {
			c := s.add(Broken, CheckSealLineage, CodeSealLineage, "prev_seal %.80q does not name the previous seal statement (log entry %s)", seal.PrevSeal, want)
			c.Evidence = []string{prev.file, s.file}
		}
		if prev.hasSeal && seal.Size < prev.seal.Size {
			c := s.add(Broken, CheckSealLineage, CodeSealLineage, "seal size %d is below the previous seal's %d", seal.Size, prev.seal.Size)
			c.Evidence = []string{prev.file, s.file}
		}
		if prev.hasSeal && prev.seal.Closed {
			c := s.add(Broken, CheckSealLineage, ledger.CodeClosed, "the previous seal closed the chain, yet another seal follows")
			c.Evidence = []string{prev.file, s.file}
		}
	}

	// Receipts: the statement is in the log, and the log's checkpoint says so.
	if len(rcpts) == 0 {
		s.add(Broken, CheckSealReceipt, CodeReceipt, "the seal statement carries no receipt: it is not shown to be in the log")
		return
	}
	leaf := receipts.LeafHash(s.entry[:])
	for i, rc := range rcpts {
		v.checkReceipt(s, i, rc, leaf)
	}
}

// checkReceipt verifies one RFC 9942 receipt of a seal and the checkpoint that goes with it.
func (v *verifier) checkReceipt(s *sealInfo, i int, raw []byte, leaf [32]byte) {
	r0, err := receipts.ParseReceipt(raw)
	if err != nil {
		s.add(Broken, CheckSealReceipt, CodeReceipt, "receipt %d: %v", i, err)
		return
	}
	if len(r0.Inclusion) != 1 || len(r0.Consistency) != 0 {
		s.add(Broken, CheckSealReceipt, CodeReceipt, "receipt %d: want exactly one inclusion proof", i)
		return
	}
	// The receipt must be exactly what the service writes: nothing unsigned rides along unnoticed.
	if !r0.Canonical() {
		s.add(Broken, CheckSealReceipt, CodeReceipt, "receipt %d is not in the deterministic encoding the service writes (it was re-encoded or carries extra parameters)", i)
		return
	}
	if v.issuersErr {
		s.add(NotEvaluated, CheckSealReceipt, CodeTrust, "no usable issuer keys (see trust.issuers): receipt %d is not evaluated", i)
		return
	}
	keys := v.keysFor(r0.KeyID)
	if len(keys) == 0 {
		s.add(Broken, CheckSealReceipt, CodeReceipt, "receipt %d names kid %s, which is not in %s", i, hex.EncodeToString(r0.KeyID), bundle.IssuersFile)
		return
	}
	var root []byte
	for _, k := range keys {
		if root, err = r0.VerifyInclusion(leaf[:], k.pub); err == nil {
			break
		}
	}
	if err != nil {
		s.add(Broken, CheckSealReceipt, CodeReceipt, "receipt %d does not verify for this seal statement: %v", i, err)
		return
	}
	if err := v.keyWindow(r0.KeyID, r0.Claims.IssuedAt); err != nil {
		s.add(Broken, CheckSealReceipt, CodeKeyWindow, "receipt %d: %v", i, err)
	}
	p := r0.Inclusion[0]
	s.logIndex, s.treeSize = p.LeafIndex, p.TreeSize

	cpRaw, src := r0.Checkpoint, fmt.Sprintf("receipt %d of %s", i, s.file)
	if cpRaw == nil {
		cpRaw, src = v.cpFiles[p.TreeSize], bundle.CheckpointFile(p.TreeSize)
	}
	if cpRaw == nil {
		if _, bad := v.cpBroken[bundle.CheckpointFile(p.TreeSize)]; bad {
			s.add(Broken, CheckSealCheckpoint, CodeCheckpoint, "the checkpoint for tree size %d does not verify (see log.checkpoint)", p.TreeSize)
		} else {
			s.add(NotEvaluated, CheckSealCheckpoint, CodeNoCheckpoint, "receipt %d leads to the root of tree size %d, but the bundle holds no checkpoint of that size: the log's own signature over that root is not evaluated", i, p.TreeSize)
		}
		return
	}
	cp, err := v.verifyCheckpoint(cpRaw)
	switch {
	case err == errNoLogKey:
		s.add(NotEvaluated, CheckSealCheckpoint, CodeTrust, "no usable log key (see trust.log_key): the checkpoint in %s is not evaluated", src)
		return
	case err != nil:
		c := s.add(Broken, CheckSealCheckpoint, CodeCheckpoint, "the checkpoint in %s does not verify with the log key: %v", src, err)
		c.Evidence = append(c.Evidence, src)
		return
	}
	if cp.Size != p.TreeSize || !bytes.Equal(cp.Hash, root) {
		c := s.add(Broken, CheckSealCheckpoint, CodeCheckpoint, "the checkpoint in %s (size %d) is not the tree the receipt proves inclusion in (size %d)", src, cp.Size, p.TreeSize)
		c.Evidence = append(c.Evidence,
			fmt.Sprintf("checkpoint: size %d root %s", cp.Size, hex.EncodeToString(cp.Hash)),
			fmt.Sprintf("receipt: size %d root %s", p.TreeSize, hex.EncodeToString(root)))
		return
	}
	v.addCheckpoint(cp.Size, cp.Hash, src)
	v.noteCheckpoint(cpRaw, cp.Size, cp.Hash, src)
	// The proof names the tree of the LeafIndex leaves before the seal: a prefix of this one.
	if r := prefixRoot(p.LeafIndex, p.TreeSize, p.Path); r != nil {
		v.linkConsistent(p.LeafIndex, r, p.TreeSize, cp.Hash)
	}
	k := cpKey{size: cp.Size}
	copy(k.root[:], cp.Hash)
	s.cps = append(s.cps, k)
}

// sealStates compares each seal with the replayed chain, summarises the seals and says how
// much of the chain is anchored in the log.
func (v *verifier) sealStates(ref bundle.ChainRef, seals []*sealInfo, res *replayResult, cov *Coverage) []Check {
	var checks []Check
	for _, s := range seals {
		if !s.hasSeal {
			continue
		}
		switch {
		case res == nil:
			s.add(NotEvaluated, CheckSealState, CodeUnknownProfile, "the chain was not replayed (profile %.40q), so the seal's head and root are not compared", ref.Profile)
		case s.seal.Size > res.total:
			s.add(Broken, CheckSealState, CodeStateMismatch, "the seal covers %d entries but the bundle holds %d", s.seal.Size, res.total)
		default:
			st, ok := res.states[s.seal.Size]
			if !ok {
				s.add(NotEvaluated, CheckSealState, CodeNotReplayed, "the replay stopped at seq %d, before this seal's size %d", res.brkSeq, s.seal.Size)
				break
			}
			if st.head != s.seal.Head || ledger.RootString(st.root) != s.seal.Root {
				c := s.add(Broken, CheckSealState, CodeStateMismatch, "at size %d the recomputed chain differs from the sealed one", s.seal.Size)
				c.Evidence = append(c.Evidence,
					fmt.Sprintf("sealed: head %s root %s", s.seal.Head, s.seal.Root),
					fmt.Sprintf("recomputed: head %s root %s", st.head, ledger.RootString(st.root)))
			}
			if s.seal.Closed && res.total > s.seal.Size {
				s.add(Broken, CheckSealState, ledger.CodeClosed, "the seal closed the chain at size %d, yet the bundle holds %d entries", s.seal.Size, res.total)
			}
		}
	}
	var anchored uint64
	var anchor *sealInfo
	cps := map[cpKey]bool{}
	for _, s := range seals {
		cov.SealsTotal++
		checks = append(checks, s.problems...)
		if !s.verified() {
			continue
		}
		cov.SealsVerified++
		if anchor == nil || s.seal.Size >= anchored {
			anchored, anchor = s.seal.Size, s
		}
	}
	for _, s := range seals {
		if s.verified() {
			for _, k := range s.cps {
				cps[k] = true
			}
			if v.anchors == nil {
				v.anchors = map[string][]sealAnchor{}
			}
			v.anchors[ref.ID] = append(v.anchors[ref.ID], sealAnchor{logIndex: s.logIndex, cps: s.cps})
		}
	}
	// The checkpoints the receipts lead to; chainCheckpoints adds, once the log's
	// consistency proofs are known, the earlier checkpoints shown to hold the seals.
	cov.Checkpoints = uint64(len(cps))
	for i := range checks {
		checks[i].Chain = ref.ID
	}

	sum := Check{Name: CheckSeals, Chain: ref.ID}
	switch {
	case len(seals) == 0:
		sum.Status, sum.Code, sum.Detail = NotEvaluated, CodeNotAnchored, "the bundle holds no seal for this chain"
	case cov.SealsVerified == cov.SealsTotal:
		sum.Status = Verified
		sum.Detail = fmt.Sprintf("%d seal(s): issuer signatures, payloads, lineage, chain state at each seal, receipts and log checkpoints verified", len(seals))
	default:
		sum.Status = NotEvaluated
		sum.Detail = fmt.Sprintf("%d of %d seal(s) verified (see the seal.* checks)", cov.SealsVerified, cov.SealsTotal)
		for _, c := range checks {
			if c.Status == Broken {
				sum.Status = Broken
			}
		}
		sum.Code = firstCode(checks, sum.Status)
	}
	checks = append(checks, sum)

	if res == nil {
		checks = append(checks, Check{Name: CheckAnchoring, Chain: ref.ID, Status: NotEvaluated, Code: CodeUnknownProfile,
			Detail: "the chain was not replayed, so which entries the seals anchor is not evaluated"})
		return checks
	}
	anchored = min(anchored, res.validUpTo())
	cov.EntriesAnchored = anchored
	a := Check{Name: CheckAnchoring, Chain: ref.ID}
	switch {
	case res.total == 0:
		a.Status, a.Detail = Verified, "the chain is empty: nothing to anchor"
	case anchored >= res.total:
		a.Status = Verified
		a.Detail = fmt.Sprintf("all %d entries are anchored in the log by seal %d (log index %d, tree size %d)", res.total, anchor.n, anchor.logIndex, anchor.treeSize)
		a.Where = fmt.Sprintf("seal %d", anchor.n)
	default:
		a.Status, a.Code = NotEvaluated, CodeNotAnchored
		a.Detail = fmt.Sprintf("%d entries after the last seal are not anchored in the log", res.total-anchored)
		if anchor != nil {
			a.Where = fmt.Sprintf("seal %d", anchor.n)
			a.Evidence = []string{fmt.Sprintf("last verified seal covers seq 0..%d", int64(anchored)-1)}
		}
	}
	return append(checks, a)
}

// firstCode is the code of the first check with the given status: what a summary of those
// checks reports as its own reason (CodeNotAnchored when none carries one).
func firstCode(checks []Check, status Status) Code {
	for _, c := range checks {
		if c.Status == status && c.Code != "" {
			return c.Code
		}
	}
	return CodeNotAnchored
}

// sealAnchor is a verified seal of a chain as the log holds it.
type sealAnchor struct {
	logIndex uint64  // the seal statement's index in the log
	cps      []cpKey // the verified checkpoints its receipts lead to
}

// chainCheckpoints sets each chain's Coverage.Checkpoints to the verified checkpoints that
// anchor its verified seals: a checkpoint a seal's receipt leads to, and every verified
// checkpoint of a larger tree than the seal's log index that verified consistency proofs
// show to be a prefix of that one (it then holds the seal statement too). An export cuts
// every receipt from the latest checkpoint and adds each seal's first checkpoint with a
// proof to the latest: counting only the receipts' would say "1 checkpoint" of a chain whose
// log check verifies one per seal. It runs after the log's consistency proofs are checked.
func (v *verifier) chainCheckpoints(rep *Report) {
	rev := map[cpKey][]cpKey{} // larger tree → the smaller trees shown to be its prefixes
	for a, bs := range v.links.edges {
		if _, ok := v.cps[a]; !ok {
			continue
		}
		for _, b := range bs {
			if _, ok := v.cps[b]; ok && a.size < b.size {
				rev[b] = append(rev[b], a)
			}
		}
	}
	for i := range rep.Chains {
		cr := &rep.Chains[i]
		anchors := v.anchors[cr.ID]
		if len(anchors) == 0 {
			continue
		}
		// The lowest log index of a seal whose receipt leads to each checkpoint.
		lowest := map[cpKey]uint64{}
		for _, a := range anchors {
			for _, c := range a.cps {
				if l, ok := lowest[c]; !ok || a.logIndex < l {
					lowest[c] = a.logIndex
				}
			}
		}
		counted := map[cpKey]bool{}
		for c, idx := range lowest {
			counted[c] = true
			seen := map[cpKey]bool{c: true}
			queue := []cpKey{c}
			for len(queue) > 0 {
				k := queue[0]
				queue = queue[1:]
				for _, p := range rev[k] {
					if seen[p] {
						continue
					}
					seen[p] = true
					queue = append(queue, p)
					if p.size > idx {
						counted[p] = true
					}
				}
			}
		}
		cr.Coverage.Checkpoints = uint64(len(counted))
	}
}
