package verifier

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/receipts"
)

// verifySlice checks a case slice (docs/bundle.md, "Case slices"): the seals as for a whole
// chain; then each included entry on its own — its link recomputed from its record and
// prev, its chain receipt proving that link at its seq in the tree whose root the slice's
// seal commits to, signed by an issuer key — and the included signatures replayed with
// the key history the included key records build. Completeness is never verified: the
// omitted entries are reported as not_evaluated.
func (v *verifier) verifySlice(ref bundle.ChainRef) (ChainReport, []Check, error) {
	cr := ChainReport{ID: ref.ID, Profile: ref.Profile, Participants: []Participant{}, Size: ref.Size, Head: ref.Head.String(), Root: ref.Root}
	seals, checks := v.readSeals(ref)
	var anchor *sealInfo
	sum := Check{Name: CheckSeals, Chain: ref.ID, Status: Verified}
	for _, s := range seals {
		cr.Coverage.SealsTotal++
		for _, p := range s.problems {
			p.Chain = ref.ID
			checks = append(checks, p)
			if p.Status == Broken {
				sum.Status = Broken
			}
		}
		if s.verified() {
			cr.Coverage.SealsVerified++
		}
		if s.n == ref.Slice.Seal {
			anchor = s
		}
	}
	switch {
	case len(seals) == 0:
		sum.Status, sum.Code, sum.Detail = NotEvaluated, CodeNotAnchored, "the bundle holds no seal for this chain"
	case sum.Status == Verified && cr.Coverage.SealsVerified < cr.Coverage.SealsTotal:
		sum.Status = NotEvaluated
		fallthrough
	case sum.Status != Verified:
		sum.Code = firstCode(checks, sum.Status)
		sum.Detail = fmt.Sprintf("%d of %d seal(s) verified (see the seal.* checks)", cr.Coverage.SealsVerified, cr.Coverage.SealsTotal)
	default:
		sum.Detail = fmt.Sprintf("%d seal(s): issuer signatures, payloads, lineage, receipts and log checkpoints verified (their chain states are proven through the slice's receipts, not by a replay)", len(seals))
	}
	checks = append(checks, sum)
	state := Check{Name: CheckSliceSeal, Chain: ref.ID, Where: fmt.Sprintf("seal %d", ref.Slice.Seal)}
	switch {
	case anchor == nil || !anchor.hasSeal:
		state.Status, state.Code, state.Detail = Broken, CodeMissing, "the seal the slice's receipts are cut against is not in the bundle"
	case !anchor.verified():
		state.Status, state.Code, state.Detail = NotEvaluated, CodeSliceProof, "the seal the slice's receipts are cut against did not verify (see the seal.* checks): the entries' inclusion is not anchored"
	case anchor.seal.Size != ref.Size || anchor.seal.Head != ref.Head || anchor.seal.Root != ref.Root:
		state.Status, state.Code, state.Detail = Broken, CodeStateMismatch, "the manifest's chain state is not the sealed state the slice names"
		state.Evidence = []string{fmt.Sprintf("sealed: size %d head %s root %s", anchor.seal.Size, anchor.seal.Head, anchor.seal.Root),
			fmt.Sprintf("manifest: size %d head %s root %s", ref.Size, ref.Head, ref.Root)}
	default:
		state.Status = Verified
		state.Detail = fmt.Sprintf("seal %d (size %d, root %s) is registered in the log and is the state the slice's receipts prove against", anchor.n, ref.Size, ref.Root)
	}
	checks = append(checks, state)
	var root []byte
	if state.Status == Verified {
		l, _ := ledger.ParseLink(ref.Root)
		root = l[:]
	}
	sc := v.sliceEntries(ref, root)
	checks = append(checks, sc.checks...)
	cr.Coverage.EntriesTotal = ref.Size
	cr.Coverage.EntriesChecked = sc.proven
	cr.Coverage.EntriesUnchecked = ref.Size - min(sc.proven, ref.Size)
	cr.Coverage.SignaturesVerified = sc.sigOK
	cr.Coverage.Unsigned = sc.unsigned
	cr.Coverage.Unsignable = sc.unsignable
	if sc.state != nil {
		if p := participants(sc.state); p != nil {
			cr.Participants = p
		}
	}
	omitted := ref.Size - min(sc.lines, ref.Size)
	checks = append(checks, Check{Name: CheckSliceCompleteness, Chain: ref.ID, Status: NotEvaluated, Code: CodeSliceIncomplete,
		Detail: fmt.Sprintf("a case slice: %d of the sealed chain's %d entries are included (%d selected for %s, %d key records); %d omitted entries are not evaluated, so nothing is said about what else the chain holds",
			sc.lines, ref.Size, ref.Slice.Selected, scopeText(&v.r.Manifest.Scope), ref.Slice.Context, omitted)})
	return cr, checks, nil
}

func scopeText(s *bundle.Scope) string {
	switch {
	case s.Task != "" && s.LogicalID != "":
		return fmt.Sprintf("task %.80q and logical_id %.80q", s.Task, s.LogicalID)
	case s.Task != "":
		return fmt.Sprintf("task %.80q", s.Task)
	case s.LogicalID != "":
		return fmt.Sprintf("logical_id %.80q", s.LogicalID)
	}
	return "an unnamed scope"
}

type sliceResult struct {
	checks     []Check
	lines      uint64
	proven     uint64
	sigOK      uint64
	unsigned   uint64
	unsignable uint64 // recorded refusals: unsigned by design (ledger.Admission.Unsignable)
	keys       uint64 // key-lifecycle records (not refusals) included
	state      ledger.ProfileState
}

// sliceable returns the registry's adapter of a profile whose chains can be cut into case
// slices (ledger.Sliceable), and the names of every such profile.
func (v *verifier) sliceable(name string) (ledger.Profile, ledger.Sliceable, []string) {
	var names []string
	for _, p := range v.registry().All() {
		if _, ok := p.(ledger.Sliceable); ok {
			names = append(names, p.Name())
		}
	}
	prof, ok := v.registry().Lookup(name)
	if !ok {
		return nil, nil, names
	}
	sl, _ := prof.(ledger.Sliceable)
	return prof, sl, names
}

// sliceEntries replays slice.jsonl; root is the sealed chain root (nil when the seal did
// not verify: inclusion is then not evaluated).
func (v *verifier) sliceEntries(ref bundle.ChainRef, root []byte) sliceResult {
	var res sliceResult
	file := bundle.SliceFile(ref.Dir)
	entries := Check{Name: CheckSliceEntries, Chain: ref.ID, Where: file}
	sigs := Check{Name: CheckSliceSignatures, Chain: ref.ID}
	fail := func(c *Check, code Code, where, format string, args ...any) {
		if c.Status != Broken {
			c.Status, c.Code, c.Where, c.Detail = Broken, code, where, fmt.Sprintf(format, args...)
		}
	}
	prof, sl, names := v.sliceable(ref.Profile)
	if sl == nil {
		v.state(file).interpreted = true
		res.checks = append(res.checks, Check{Name: CheckSliceEntries, Chain: ref.ID, Status: NotEvaluated, Code: CodeUnknownProfile,
			Detail: fmt.Sprintf("case slices are defined for %s; this one is %.40q", strings.Join(names, ", "), ref.Profile)})
		return res
	}
	st, err := prof.NewState(nil)
	if err != nil {
		fail(&entries, CodeUnknownProfile, file, "%v", err)
		return sliceResult{checks: []Check{entries}}
	}
	res.state = st
	f, err := v.open(file)
	if err != nil {
		fail(&entries, CodeMissing, file, "%v", err)
		return sliceResult{checks: []Check{entries}}
	}
	defer f.Close()
	br := NewLines(f, MaxLineSize(v.o.Limits))
	var last ledger.Link
	var lastSeq uint64
	for {
		line, tooLong, rerr := br.Next()
		if tooLong {
			fail(&entries, CodeEntryTooLong, file, "line %d: %s", res.lines+1, br.TooLong())
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			if rerr != nil && rerr != io.EOF {
				fail(&entries, CodeRead, file, "cannot read: %v", rerr)
			}
			if rerr != nil {
				break
			}
			continue
		}
		res.lines++
		where := fmt.Sprintf("%s:%d", file, res.lines)
		e, err := parseEntryLine(bytes.TrimRight(line, "\n"))
		if err != nil {
			fail(&entries, CodeEntryMalformed, where, "not an entry line: %v", err)
			break
		}
		if res.lines > 1 && e.Seq <= lastSeq || e.Seq >= ref.Size {
			fail(&entries, CodeSliceOrder, where, "seq %d: slice entries go in strictly increasing seq order within the sealed size %d", e.Seq, ref.Size)
			break
		}
		if e.Seq == 0 && e.Prev != ledger.Genesis || res.lines > 1 && e.Seq == lastSeq+1 && e.Prev != last {
			fail(&entries, CodeEntryPrev, where, "seq %d: prev %s is not the link of the entry before it", e.Seq, e.Prev)
			break
		}
		// The profile's rules with the entry's own predecessor as the head: the named
		// prev_hash, the workspace, the key history built from the included key records, and
		// the entry's meta (a Coordinator audit entry's seq and prev_hash).
		adm, err := ledger.AdmitStored(st, ref.Profile, ledger.Position{Chain: ref.ID, Head: e.Prev, Seq: e.Seq, Replay: true}, append([]byte(nil), e.Record...), bytes.Clone(e.Meta))
		if err != nil {
			code := ledger.CodeMalformed
			var re *ledger.RecordError
			if errors.As(err, &re) {
				code = re.Code
			}
			fail(&entries, code, where, "seq %d: record refused by %s: %v", e.Seq, ref.Profile, err)
			break
		}
		link := ledger.NextLink(adm.Canonical, e.Prev)
		if link != e.Link {
			fail(&entries, CodeEntryLink, where, "seq %d: link %s is not the recomputed link %s (the record was altered)", e.Seq, e.Link, link)
			break
		}
		last, lastSeq = link, e.Seq
		if root != nil {
			if err := v.checkEntryProof(ref, e.Seq, link, root); err != nil {
				fail(&entries, CodeSliceProof, bundle.EntryProofFile(ref.Dir, e.Seq), "seq %d: %v", e.Seq, err)
				break
			}
			res.proven++
		}
		if sl.KeyRecord(adm) {
			res.keys++
		}
		// An unsigned record may still have something to verify (a CHAP join resolving a
		// pending workspace.create): it is checked, but counted unsigned, as in the chain replay.
		if adm.Verify != nil {
			if err := adm.Verify(); err != nil {
				fail(&sigs, ledger.CodeBadSignature, fmt.Sprintf("seq %d", e.Seq), "seq %d: %v", e.Seq, err)
			} else if adm.Signed {
				res.sigOK++
			}
		}
		switch {
		case adm.Signed:
		case adm.Unsignable:
			res.unsignable++
		default:
			res.unsigned++
		}
		if rerr != nil {
			break
		}
	}
	if entries.Status != Broken && res.keys != ref.Slice.Context {
		fail(&entries, CodeManifest, file, "the slice holds %d key record(s), the manifest says %d were included: key records were added or withheld", res.keys, ref.Slice.Context)
	}
	if entries.Status != Broken {
		if root == nil {
			entries.Status, entries.Code = NotEvaluated, CodeSliceProof
			entries.Detail = fmt.Sprintf("%d entries replayed (links recomputed, profile rules applied); their inclusion in the sealed chain is not evaluated (see slice.seal)", res.lines)
		} else {
			entries.Status = Verified
			entries.Detail = fmt.Sprintf("%d included entries each sit in the sealed chain at their seq: link recomputed from record and prev, chain receipt verified against seal %d's root with the service key", res.lines, ref.Slice.Seal)
		}
	}
	if sigs.Status != Broken {
		if res.sigOK > 0 {
			sigs.Status = Verified
			sigs.Detail = fmt.Sprintf("%d record signature(s) verified with the signer's key valid at the record's time, from the key history the included key records build (a key record withheld from the slice cannot be noticed: see slice.completeness)", res.sigOK)
		} else {
			sigs.Status, sigs.Code, sigs.Detail = NotEvaluated, CodeUnsigned, "no signed record was replayed"
		}
	}
	res.checks = append(res.checks, entries, sigs)
	if res.unsigned > 0 {
		res.checks = append(res.checks, Check{Name: CheckSliceUnsigned, Chain: ref.ID, Status: NotEvaluated, Code: CodeUnsigned,
			Detail: fmt.Sprintf("unsigned: %d included record(s) carry no signature; who wrote them is not evaluated", res.unsigned)})
	}
	return res
}

// checkEntryProof verifies the chain receipt of entry seq: inclusion of link at seq in the
// chain tree of the sealed size, leading to root, signed by an issuer key for this chain.
func (v *verifier) checkEntryProof(ref bundle.ChainRef, seq uint64, link ledger.Link, root []byte) error {
	name := bundle.EntryProofFile(ref.Dir, seq)
	raw, err := v.readSmall(name, receipts.MaxReceiptSize)
	if err != nil {
		return err
	}
	r0, err := receipts.ParseReceipt(raw)
	if err != nil {
		return err
	}
	if len(r0.Inclusion) != 1 || r0.Inclusion[0].LeafIndex != seq || r0.Inclusion[0].TreeSize != ref.Size {
		return fmt.Errorf("the receipt is not one inclusion proof of seq %d in the chain tree of size %d", seq, ref.Size)
	}
	if r0.Claims.Subject != ref.ID {
		return fmt.Errorf("the receipt's subject %.80q is not the chain", r0.Claims.Subject)
	}
	keys := v.keysFor(r0.KeyID)
	if len(keys) == 0 {
		return fmt.Errorf("the receipt's kid is not in %s", bundle.IssuersFile)
	}
	leaf := ledger.Hasher.HashLeaf(link[:])
	for _, k := range keys {
		got, _, err := receipts.VerifyInclusion(raw, leaf, k.pub)
		if err != nil {
			continue
		}
		if !bytes.Equal(got, root) {
			return errors.New("the receipt proves inclusion in another tree than the sealed one")
		}
		return v.keyWindow(r0.KeyID, r0.Claims.IssuedAt)
	}
	return errors.New("the receipt does not verify for this entry's link with the issuer key")
}
