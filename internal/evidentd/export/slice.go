package export

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/receipts"
)

// Slice is what a case slice selects: one task or one logical artefact of a chain.
type Slice struct {
	Task      string // CHAP task_id
	LogicalID string // CHAP logical_id
}

// Errors of Exporter.Slice a caller answers with 4xx.
var (
	// ErrSliceProfile: slices are defined for the profiles that name their key records
	// (ledger.Sliceable), the context a verifier needs to check the included signatures.
	ErrSliceProfile = errors.New("case slices are defined for chap/0.3 chains")
	// ErrSliceUnsealed: the chain has no registered seal to prove inclusion against; seal it first.
	ErrSliceUnsealed = errors.New("the chain has no registered seal: seal it, then export the slice")
	// ErrSliceEmpty: no entry of the sealed chain matches.
	ErrSliceEmpty = errors.New("no sealed entry matches the slice")
)

// maxSliceEntries bounds the entries of one slice (each carries an O(log n) receipt).
const maxSliceEntries = 100000

// Slice writes a case slice of chain (docs/bundle.md, "Case slices"): the entries of
// one task or logical artefact and every key-lifecycle record, each with a chain receipt
// proving its link at its seq in the chain tree of the latest registered seal, that
// seal (with its predecessors, for the lineage) and its log receipt. Entries after that
// seal are not in the slice. One pass over the sealed chain's links computes every proof
// (O(n) time, O(k log n) memory for k included entries).
func (x *Exporter) Slice(ctx context.Context, w io.Writer, chain string, sl Slice) error {
	h, err := x.c.Pipeline.Head(ctx, chain)
	if err != nil {
		return err
	}
	prof, _ := x.c.Profiles.Lookup(h.Profile)
	keys, ok := prof.(ledger.Sliceable)
	if !ok {
		return fmt.Errorf("chain %q is %s: %w", chain, h.Profile, ErrSliceProfile)
	}
	l := x.c.Service.Log()
	cp, c, err := x.latestCheckpoint(ctx)
	if err != nil {
		return err
	}
	seals, err := x.c.Store.Seals(ctx, chain)
	if err != nil {
		return err
	}
	var written []store.Seal
	for _, se := range seals {
		if !se.Registered || se.LogIndex >= c.Size {
			break
		}
		written = append(written, se)
	}
	if len(written) == 0 || written[len(written)-1].Size == 0 {
		return ErrSliceUnsealed
	}
	top := written[len(written)-1]
	sealed, err := sealPayload(top.Statement)
	if err != nil {
		return err
	}
	size := top.Size

	// What the slice holds: the matching entries and the key records, in chain order.
	sel := map[string][]string{}
	if sl.Task != "" {
		sel[ledger.AttrTask] = []string{sl.Task}
	}
	if sl.LogicalID != "" {
		sel[ledger.AttrLogicalID] = []string{sl.LogicalID}
	}
	picked := map[uint64]store.Entry{}
	var selected, context uint64
	collect := func(f store.Filter, isContext bool) error {
		for f.From < size {
			f.Limit = pageSize
			es, err := x.c.Store.Entries(ctx, chain, f)
			if err != nil {
				return err
			}
			for _, e := range es {
				if e.Seq >= size {
					return nil
				}
				if _, dup := picked[e.Seq]; !dup {
					picked[e.Seq] = e
					if !isContext {
						selected++
					}
				}
				if len(picked) > maxSliceEntries {
					return fmt.Errorf("slice over %d entries", maxSliceEntries)
				}
			}
			if len(es) < f.Limit {
				return nil
			}
			f.From = es[len(es)-1].Seq + 1
		}
		return nil
	}
	if err := collect(store.Filter{Attrs: sel}, false); err != nil {
		return err
	}
	if selected == 0 {
		return ErrSliceEmpty
	}
	for _, m := range keys.KeyMethods() {
		if err := collect(store.Filter{Method: m}, true); err != nil {
			return err
		}
	}
	seqs := make([]uint64, 0, len(picked))
	for q, e := range picked {
		seqs = append(seqs, q)
		// Context counts the included key records that took effect (a recorded refusal,
		// {"outcome",…} in canonical form, did not), whether or not they also match.
		if keys.KeyRecord(&ledger.Admission{Method: e.Method, Canonical: e.Record}) {
			context++
		}
	}
	slices.Sort(seqs)

	// The inclusion proofs, from one pass over the sealed links.
	paths, root, err := x.chainInclusion(ctx, chain, size, sealed.Root, seqs)
	if err != nil {
		return err
	}
	rs, err := x.signChainRoot(chain, root)
	if err != nil {
		return err
	}

	bw, exported := x.newBundle(w)
	if err := x.writeTrust(bw); err != nil {
		return err
	}
	dir := bundle.ChainDir(chain)
	ew, err := bw.Create(bundle.SliceFile(dir))
	if err != nil {
		return err
	}
	lines := bufio.NewWriterSize(ew, entriesBuffer)
	var line []byte
	for _, q := range seqs {
		e := picked[q]
		if line, err = writeLine(lines, line, &e); err != nil {
			return err
		}
	}
	if err := lines.Flush(); err != nil {
		return err
	}
	for _, q := range seqs {
		rc, err := receipts.NewInclusionReceipt(rs, receipts.InclusionProof{TreeSize: size, LeafIndex: q, Path: paths[q]}, nil)
		if err != nil {
			return err
		}
		if err := bw.WriteFile(bundle.EntryProofFile(dir, q), rc); err != nil {
			return err
		}
	}
	for _, se := range written {
		if err := x.writeSeal(ctx, bw, dir, se, cp); err != nil {
			return err
		}
	}
	if err := bw.WriteFile(bundle.CheckpointFile(c.Size), cp); err != nil {
		return err
	}
	return bw.Close(bundle.Manifest{
		Producer: x.c.Producer,
		Created:  ledger.Timestamp(exported),
		Scope:    bundle.Scope{Chain: chain, Task: sl.Task, LogicalID: sl.LogicalID},
		Log:      bundle.LogInfo{Origin: l.Origin()},
		Chains: []bundle.ChainRef{{ID: chain, Dir: dir, Profile: h.Profile, Size: size, Head: sealed.Head, Root: sealed.Root,
			Slice: &bundle.SliceRef{Seal: top.N, Selected: selected, Context: context}}},
	})
}
