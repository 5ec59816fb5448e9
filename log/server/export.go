package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/store"
	evlog "github.com/evident-log/evident/log"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/verifier/bundle"
	"github.com/fxamacker/cbor/v2"
)

func (s *Server) handleExport(w http.ResponseWriter, r *http.Request) {
	chain := r.URL.Query().Get("chain")
	if chain == "" {
		problem(w, http.StatusBadRequest, "bad_query", "export needs ?chain=<id>", -1)
		return
	}
	h, err := s.c.Pipeline.Head(r.Context(), chain)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", bundle.ChainDir(chain)+".evident.zip"))
	if err := s.Export(r.Context(), w, chain, h.Size); err != nil {
		// Headers are gone; the truncated zip fails to open, which the client notices.
		s.c.Logger.Error("export failed", "chain", chain, "err", err)
		return
	}
	s.m.exports.Add(1)
}

// Export writes the offline bundle of chain up to size entries to w.
func (s *Server) Export(ctx context.Context, w io.Writer, chain string, size uint64) error {
	h, err := s.c.Pipeline.Head(ctx, chain)
	if err != nil {
		return err
	}
	bw := bundle.NewWriter(w)
	l := s.c.Service.Log()
	if err := bw.WriteFile(bundle.LogKeyFile, []byte(l.VerifierKey()+"\n")); err != nil {
		return err
	}
	if wp := l.WitnessPolicy(); wp != nil {
		if err := bw.WriteFile(bundle.WitnessPolicyFile, []byte(wp.String())); err != nil {
			return err
		}
	}
	ck, err := receipts.COSEKey(s.c.Service.Signer().Public())
	if err != nil {
		return err
	}
	ks, err := cbor.Marshal([]cbor.RawMessage{ck})
	if err != nil {
		return err
	}
	if err := s.exportKeyHistory(bw, &ks); err != nil { // scitt keys: every key, retired ones kept (exportkeys.go)
		return err
	}
	if err := bw.WriteFile(bundle.IssuersFile, ks); err != nil {
		return err
	}
	dir := bundle.ChainDir(chain)
	ew, err := bw.Create(bundle.EntriesFile(dir))
	if err != nil {
		return err
	}
	buf := bufio.NewWriterSize(ew, 1<<16)
	enc := json.NewEncoder(buf)
	var n uint64
	var head ledger.Link
	tree := ledger.NewTree()
	for n < size {
		es, err := s.c.Store.Entries(ctx, chain, store.Filter{From: n, Limit: 5000})
		if err != nil {
			return err
		}
		if len(es) == 0 {
			break
		}
		for _, e := range es {
			if e.Seq >= size {
				break
			}
			if err := enc.Encode(bundle.EntryLine{Seq: e.Seq, Prev: e.Prev, Link: e.Link, Arrival: ledger.Timestamp(e.Arrival), Record: e.Record}); err != nil {
				return err
			}
			head = e.Link
			tree.Append(e.Link)
			n = e.Seq + 1
		}
	}
	if err := buf.Flush(); err != nil {
		return err
	}
	seals, err := s.c.Store.Seals(ctx, chain)
	if err != nil {
		return err
	}
	// Every receipt is cut afresh from the latest checkpoint, so one checkpoint anchors all
	// the seals of the bundle and no consistency proof between checkpoints is needed.
	cp, err := l.Checkpoint(ctx)
	if err != nil {
		return fmt.Errorf("latest checkpoint: %w", err)
	}
	c, err := evlog.VerifyCheckpoint(cp, l.VerifierKey())
	if err != nil {
		return fmt.Errorf("latest checkpoint: %w", err)
	}
	wroteCP := false
	for _, sl := range seals {
		if !sl.Registered || sl.Size > n || sl.LogIndex >= c.Size {
			continue
		}
		rcpt, err := s.c.Service.Receipt(ctx, sl.LogIndex, cp)
		if err != nil {
			return fmt.Errorf("seal %d: %w", sl.N, err)
		}
		ts, err := receipts.AttachReceipts(sl.Statement, rcpt)
		if err != nil {
			return fmt.Errorf("seal %d: %w", sl.N, err)
		}
		if err := bw.WriteFile(bundle.SealFile(dir, sl.N), ts); err != nil {
			return err
		}
		wroteCP = true
	}
	if wroteCP {
		if err := bw.WriteFile(bundle.CheckpointFile(c.Size), cp); err != nil {
			return err
		}
	}
	return bw.Close(bundle.Manifest{
		Producer: s.c.Producer,
		Created:  ledger.Timestamp(time.Now()),
		Scope:    bundle.Scope{Chain: chain},
		Log:      bundle.LogInfo{Origin: l.Origin()},
		Chains:   []bundle.ChainRef{{ID: chain, Dir: dir, Profile: h.Profile, Size: n, Head: head, Root: ledger.RootString(tree.Root())}},
	})
}
