package cop

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/evident-log/evident/internal/rawjson"
)

// LedgerScan is what ScanLedger read of a COP Ledger.
type LedgerScan struct {
	Records     int          // records that verified, before the broken one if any
	First, Last LedgerRecord // the first and the last record that verified
	// Broken is the 1-based number of the record that failed (blank lines are not
	// counted), 0 when none did; Err says why (Detail of a *LedgerError, else the error).
	Broken int
	Err    error
}

// ScanLedger reads a COP Ledger (JSON Lines, one record per line, §9.6) from r and checks
// each record with chk, after limit (the record limits: a ledger line is a record). It stops
// at the first record that fails, reported in the scan; the error is for a ledger that
// could not be read, or ctx done.
func ScanLedger(ctx context.Context, r io.Reader, chk *LedgerCheck, limit func([]byte) error) (LedgerScan, error) {
	var s LedgerScan
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		if err := ctx.Err(); err != nil {
			return s, err
		}
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			return s, nil
		}
		if err != nil && err != io.EOF {
			return s, err
		}
		line = []byte(strings.TrimRight(string(line), "\r\n"))
		if len(line) == 0 {
			continue
		}
		cerr := limit(line)
		if cerr == nil {
			cerr = chk.Next(line)
		}
		if cerr != nil {
			s.Broken, s.Err = s.Records+1, cerr
			return s, nil
		}
		if s.Records == 0 {
			s.First = chk.Last
		}
		s.Last = chk.Last
		s.Records++
		if err == io.EOF {
			return s, nil
		}
	}
}

// BrokenDetail returns what a person reads of why a record failed: the Detail of a
// *LedgerError, else the error's text.
func BrokenDetail(err error) string {
	var le *LedgerError
	if errors.As(err, &le) {
		return le.Detail
	}
	return err.Error()
}

// ReadEvents reads COP Events from JSON Lines, keyed by event id: raw events, or entry lines
// of a bundle's entries.jsonl carrying the event as "record". name names the input in
// errors; maxLine bounds a line.
func ReadEvents(r io.Reader, name string, maxLine int) (map[string][]byte, error) {
	out := map[string][]byte{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), maxLine)
	for i := 1; sc.Scan(); i++ {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		rec := append([]byte(nil), line...)
		if m, ok, err := rawjson.Member(line, "record"); err == nil && ok && len(m) > 0 { // not encoding/json: deep records
			rec = append([]byte(nil), m...)
		}
		e, err := Parse(rec)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", name, i, err)
		}
		out[e.ID] = rec
	}
	return out, sc.Err()
}
