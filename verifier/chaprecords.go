package verifier

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile/chap"
)

// EachCHAPRecord reads the entries of the CHAP chain ref of bundle r in order and gives each
// record, with the metadata its submitter sent beside it (a Coordinator's arrival time), to
// add; tick (nil: none) is told the count read every 4,096 entries. The replays of `evident
// replay` and of the HTML report read a chain through it.
func EachCHAPRecord(ctx context.Context, r *bundle.Reader, ref bundle.ChainRef, lim canonical.Limits, tick func(uint64), add func(uint64, *chap.Record)) error {
	f, err := r.OpenFile(bundle.EntriesFile(ref.Dir))
	if err != nil {
		return err
	}
	defer f.Close()
	br := NewLines(f, MaxLineSize(lim))
	var n uint64
	for {
		line, tooLong, err := br.Next()
		if tooLong {
			return fmt.Errorf("%s: line %d: %s", ref.ID, n+1, br.TooLong())
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			seq, record, meta, lerr := EntryRecord(line)
			if lerr != nil {
				return fmt.Errorf("%s: line %d: %w", ref.ID, n+1, lerr)
			}
			var rec *chap.Record
			var perr error
			if meta != nil { // a Coordinator's audit entry: its seq and arrival time beside the record
				rec, perr = chap.ParseStored(record, meta)
			} else {
				rec, perr = chap.Parse(record)
			}
			if perr != nil {
				return fmt.Errorf("%s: seq %d: %w", ref.ID, seq, perr)
			}
			add(seq, rec)
			n++
			if n%4096 == 0 {
				if tick != nil {
					tick(n)
				}
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
