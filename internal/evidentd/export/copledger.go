package export

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger/profile/cop"
)

// ErrNoCOPNode is returned by COPLedger when no COP node key is configured.
var ErrNoCOPNode = errors.New("export: no COP node key")

// COPLedger writes the COP Ledger (COP 1.0 §9.6) records of a COP Topic's first size entries
// to w as JSON Lines, signed by the node key, and returns how many it wrote.
func (x *Exporter) COPLedger(ctx context.Context, w io.Writer, chain string, size uint64) (uint64, error) {
	if x.c.COPNode == nil {
		return 0, ErrNoCOPNode
	}
	lw := cop.NewLedgerWriter(*x.c.COPNode)
	buf := bufio.NewWriterSize(w, 1<<16)
	var n uint64
	for n < size {
		es, err := x.c.Store.Entries(ctx, chain, store.Filter{From: n, Limit: pageSize})
		if err != nil {
			return n, err
		}
		if len(es) == 0 {
			break
		}
		for _, e := range es {
			if e.Seq >= size {
				break
			}
			if e.Seq != n {
				return n, fmt.Errorf("cop ledger: entry %d where %d was expected", e.Seq, n)
			}
			line, err := lw.Append(e.Record, e.Arrival)
			if err != nil {
				return n, fmt.Errorf("cop ledger: entry %d: %w", e.Seq, err)
			}
			buf.Write(line)
			if err := buf.WriteByte('\n'); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, buf.Flush()
}

// exportCOPLedger adds a COP Topic's ledger (its first size entries) and, once per bundle,
// the node key file to a bundle. It does nothing for other profiles or without a node key.
func (x *Exporter) exportCOPLedger(ctx context.Context, bw *bundle.Writer, chain, profile string, size uint64, wroteKeys *bool) error {
	if profile != cop.Profile || x.c.COPNode == nil {
		return nil
	}
	lf, err := bw.Create(bundle.COPLedgerFile(bundle.ChainDir(chain)))
	if err != nil {
		return err
	}
	if n, err := x.COPLedger(ctx, lf, chain, size); err != nil {
		return err
	} else if n != size {
		return fmt.Errorf("cop ledger of %s: %d records for %d entries", chain, n, size)
	}
	if *wroteKeys {
		return nil
	}
	*wroteKeys = true
	kb, err := cop.MarshalNodeKeys([]cop.NodeKey{{NodeID: x.c.COPNode.ID, KeyID: x.c.COPNode.KeyID, Public: x.c.COPNode.Signer.Public()}})
	if err != nil {
		return err
	}
	return bw.WriteFile(bundle.COPNodesFile, kb)
}
