package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/tilelog"
	tlog "github.com/transparency-dev/formats/log"
)

// Slice is what a case slice selects: one task or one logical artefact of a chain.
type Slice struct {
	Task      string // CHAP task_id
	LogicalID string // CHAP logical_id
}

// Errors of ExportSlice a caller answers with 4xx.
var (
	// ErrSliceProfile: slices are defined for chap/0.3 chains only (the context records a
	// verifier needs are the profile's key records).
	ErrSliceProfile = errors.New("case slices are defined for chap/0.3 chains")
	// ErrSliceUnsealed: the chain has no registered seal to prove inclusion against; seal it first.
	ErrSliceUnsealed = errors.New("the chain has no registered seal: seal it, then export the slice")
	// ErrSliceEmpty: no entry of the sealed chain matches.
	ErrSliceEmpty = errors.New("no sealed entry matches the slice")
)

// keyMethods are the CHAP records that shape the key history; every one of them travels
// with a slice so the verifier can check the included signatures.
var keyMethods = []string{"participant.join", "participant.rotate_key", "participant.revoke_key"}

// maxSliceEntries bounds the entries of one slice (each carries an O(log n) receipt).
const maxSliceEntries = 100000

func (s *Server) handleSliceExport(w http.ResponseWriter, r *http.Request, chain string, sl Slice) {
	// The bundle streams through a pipe, so that an error found before its first byte
	// (wrong profile, no seal, nothing matches) is still answered with a problem.
	pr, pw := io.Pipe()
	defer pr.Close()
	go func() { pw.CloseWithError(s.ExportSlice(r.Context(), pw, chain, sl)) }()
	first := make([]byte, 1)
	n, err := io.ReadFull(pr, first)
	if err != nil {
		switch {
		case errors.Is(err, ErrSliceProfile), errors.Is(err, ErrSliceEmpty):
			problem(w, http.StatusBadRequest, api.CodeBadQuery, err.Error(), -1)
		case errors.Is(err, ErrSliceUnsealed):
			problem(w, http.StatusConflict, api.CodeNotSealed, err.Error(), -1)
		default:
			s.fail(w, r, err)
		}
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", bundle.ChainDir(chain)+".slice.evident.zip"))
	w.Write(first[:n])
	if _, err := io.Copy(w, pr); err != nil {
		// Headers are gone; the truncated zip fails to open, which the client notices.
		s.c.Logger.Error("slice export failed", "chain", chain, "err", err)
		return
	}
	s.m.exports.Add(1)
}

// ExportSlice writes a case slice of chain (docs/bundle.md, "Case slices"): the entries of
// one task or logical artefact and every key-lifecycle record, each with a chain receipt
// proving its link at its seq in the chain tree of the latest registered seal, that
// seal (with its predecessors, for the lineage) and its log receipt. Entries after that
// seal are not in the slice. One pass over the sealed chain's links computes every proof
// (O(n) time, O(k log n) memory for k included entries).
func (s *Server) ExportSlice(ctx context.Context, w io.Writer, chain string, sl Slice) error {
	h, err := s.c.Pipeline.Head(ctx, chain)
	if err != nil {
		return err
	}
	if h.Profile != chap.Profile {
		return fmt.Errorf("chain %q is %s: %w", chain, h.Profile, ErrSliceProfile)
	}
	l := s.c.Service.Log()
	cp, c, err := s.latestCheckpoint(ctx)
	if err != nil {
		return err
	}
	seals, err := s.c.Store.Seals(ctx, chain)
	if err != nil {
		return err
	}
	var written []store.Seal
	for _, x := range seals {
		if !x.Registered || x.LogIndex >= c.Size {
			break
		}
		written = append(written, x)
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
			f.Limit = 5000
			es, err := s.c.Store.Entries(ctx, chain, f)
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
	for _, m := range keyMethods {
		if err := collect(store.Filter{Method: m}, true); err != nil {
			return err
		}
	}
	seqs := make([]uint64, 0, len(picked))
	for q, e := range picked {
		seqs = append(seqs, q)
		// Context counts the included key records that took effect (a recorded refusal,
		// {"outcome",…} in canonical form, did not), whether or not they also match.
		if slices.Contains(keyMethods, e.Method) && !bytes.HasPrefix(e.Record, []byte(`{"outcome"`)) {
			context++
		}
	}
	slices.Sort(seqs)

	// The inclusion proofs, from one pass over the sealed links.
	paths, root, err := s.chainInclusion(ctx, chain, size, sealed.Root, seqs)
	if err != nil {
		return err
	}
	rs, err := receipts.SignRoot(s.c.Service.Signer(), receipts.Claims{Issuer: s.c.Service.Issuer(), Subject: chain, IssuedAt: time.Now().Unix()}, root)
	if err != nil {
		return err
	}

	bw := bundle.NewWriter(w)
	if err := s.writeTrust(bw); err != nil {
		return err
	}
	dir := bundle.ChainDir(chain)
	ew, err := bw.Create(bundle.SliceFile(dir))
	if err != nil {
		return err
	}
	buf := bufio.NewWriterSize(ew, 1<<16)
	enc := json.NewEncoder(buf)
	for _, q := range seqs {
		e := picked[q]
		if err := enc.Encode(bundle.EntryLine{Seq: e.Seq, Prev: e.Prev, Link: e.Link, Arrival: ledger.Timestamp(e.Arrival), Record: e.Record}); err != nil {
			return err
		}
	}
	if err := buf.Flush(); err != nil {
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
	for _, x := range written {
		rcpt, err := s.c.Service.Receipt(ctx, x.LogIndex, cp)
		if err != nil {
			return fmt.Errorf("seal %d: %w", x.N, err)
		}
		ts, err := receipts.AttachReceipts(x.Statement, rcpt)
		if err != nil {
			return fmt.Errorf("seal %d: %w", x.N, err)
		}
		if err := bw.WriteFile(bundle.SealFile(dir, x.N), ts); err != nil {
			return err
		}
	}
	if err := bw.WriteFile(bundle.CheckpointFile(c.Size), cp); err != nil {
		return err
	}
	return bw.Close(bundle.Manifest{
		Producer: s.c.Producer,
		Created:  ledger.Timestamp(time.Now()),
		Scope:    bundle.Scope{Chain: chain, Task: sl.Task, LogicalID: sl.LogicalID},
		Log:      bundle.LogInfo{Origin: l.Origin()},
		Chains: []bundle.ChainRef{{ID: chain, Dir: dir, Profile: h.Profile, Size: size, Head: sealed.Head, Root: sealed.Root,
			Slice: &bundle.SliceRef{Seal: top.N, Selected: selected, Context: context}}},
	})
}

// sealPayload reads the seal JSON out of a stored seal statement.
func sealPayload(stmt []byte) (ledger.Seal, error) {
	st, err := receipts.ParseStatement(stmt)
	if err != nil {
		return ledger.Seal{}, fmt.Errorf("stored seal statement: %w", err)
	}
	return ledger.ParseSeal(st.Payload)
}

// writeTrust writes the trust files every bundle carries: the log key, the witness
// policy, the issuers' key set and the key history.
func (s *Server) writeTrust(bw *bundle.Writer) error {
	l := s.c.Service.Log()
	if err := bw.WriteFile(bundle.LogKeyFile, []byte(l.VerifierKey()+"\n")); err != nil {
		return err
	}
	if wp := l.WitnessPolicy(); wp != nil {
		if err := bw.WriteFile(bundle.WitnessPolicyFile, []byte(wp.String())); err != nil {
			return err
		}
	}
	if err := s.exportPQKey(bw); err != nil { // trust/log-mldsa.vkey (exportproofs.go)
		return err
	}
	ck, err := receipts.COSEKey(s.c.Service.Signer().Public())
	if err != nil {
		return err
	}
	ks, err := cbor.Marshal([]cbor.RawMessage{ck})
	if err != nil {
		return err
	}
	if err := s.exportKeyHistory(bw, &ks); err != nil { // every key, retired ones kept (exportkeys.go)
		return err
	}
	return bw.WriteFile(bundle.IssuersFile, ks)
}

// latestCheckpoint returns the log's latest checkpoint, verified, with its parsed form.
func (s *Server) latestCheckpoint(ctx context.Context) ([]byte, *tlog.Checkpoint, error) {
	l := s.c.Service.Log()
	cp, err := l.Checkpoint(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("latest checkpoint: %w", err)
	}
	c, err := tilelog.VerifyCheckpoint(cp, l.VerifierKey())
	if err != nil {
		return nil, nil, fmt.Errorf("latest checkpoint: %w", err)
	}
	return cp, c, nil
}
