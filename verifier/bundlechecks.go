package verifier

import (
	"errors"
	"fmt"
	"io"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
)

// bundleChecks runs the checks a chain's profile makes on files of its own the bundle carries
// beside the entries (ledger.BundleChecker: the COP Ledger).
func (v *verifier) bundleChecks(ref bundle.ChainRef) []Check {
	prof, ok := v.registry().Lookup(ref.Profile)
	if !ok {
		return nil
	}
	bc, ok := prof.(ledger.BundleChecker)
	if !ok {
		return nil
	}
	var checks []Check
	for _, vd := range bc.CheckBundle(v.ctx, &bundleChain{v: v, ref: ref}) {
		c := Check{Name: vd.Check, Chain: ref.ID, Status: Verified, Code: vd.Code, Where: vd.Where, Detail: vd.Detail, Evidence: vd.Evidence}
		switch vd.Severity {
		case ledger.Critical:
			c.Status = Broken
		case ledger.Notice:
			c.Status = NotEvaluated
		}
		checks = append(checks, c)
	}
	return checks
}

// bundleChain is one chain of the bundle as a ledger.BundleChecker reads it: through the
// verifier's file tracking, so digests are compared and read files count as interpreted.
type bundleChain struct {
	v   *verifier
	ref bundle.ChainRef
}

func (b *bundleChain) ID() string              { return b.ref.ID }
func (b *bundleChain) Dir() string             { return b.ref.Dir }
func (b *bundleChain) Listed(name string) bool { return b.v.listed(name) }
func (b *bundleChain) ReadFile(name string, max int64) ([]byte, error) {
	return b.v.readSmall(name, max)
}
func (b *bundleChain) MarkRead(name string) { b.v.state(name).interpreted = true }

func (b *bundleChain) Lines(name string) (ledger.LineReader, error) {
	f, err := b.v.open(name)
	if err != nil {
		return nil, err
	}
	return &lineReader{f: f, br: NewLines(f, MaxLineSize(b.v.o.Limits))}, nil
}

func (b *bundleChain) Entries() (ledger.EntryReader, error) {
	lr, err := b.Lines(bundle.EntriesFile(b.ref.Dir))
	if err != nil {
		return nil, err
	}
	return &entryReader{lr.(*lineReader)}, nil
}

// lineReader reads a bundle file line by line (readJSONLine).
type lineReader struct {
	f  io.Closer
	br *Lines
}

func (l *lineReader) Next() ([]byte, error) { return readJSONLine(l.br) }
func (l *lineReader) Close() error          { return l.f.Close() }

// entryReader reads entries.jsonl; a line that is not an entry wraps ledger.ErrNotEntry.
type entryReader struct{ *lineReader }

func (e *entryReader) Next() (ledger.Entry, error) {
	line, err := e.lineReader.Next()
	if err != nil {
		return ledger.Entry{}, err
	}
	el, err := parseEntryLine(line)
	if err != nil {
		return ledger.Entry{}, fmt.Errorf("%w: %w", ledger.ErrNotEntry, err)
	}
	return ledger.Entry{Seq: el.Seq, Record: el.Record, Arrival: el.Arrival, Prev: el.Prev, Link: el.Link}, nil
}

// readJSONLine reads one newline-terminated line (without the newline), refusing lines over
// MaxLineSize; io.EOF only when nothing is left.
func readJSONLine(br *Lines) ([]byte, error) {
	line, tooLong, err := br.Next()
	if tooLong {
		return nil, errors.New(br.TooLong())
	}
	if len(line) == 0 && err != nil {
		return nil, err
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	if line[len(line)-1] == '\n' {
		line = line[:len(line)-1]
	}
	return line, nil
}
