package htmlreport

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/ledger/profile/chap/replay"
	"github.com/evident-log/evident/verifier"
)

// BundleOptions say what WriteBundle shows and how it reads the bundle.
type BundleOptions struct {
	// MaxEntries bounds the timeline rows (and task rows) of the page, as Input.MaxEntries
	// does, except that 0 shows every row (evident verify --max-entries 0).
	MaxEntries int
	// Dir, when set, writes the report as a folder there (WriteDir) instead of one page to w.
	Dir string
	// Limits are the record limits the bundle was verified with.
	Limits canonical.Limits
}

// WriteBundle writes the HTML report of rep, made from the open bundle r (nil for a bundle
// refused at open: the report alone). It replays every CHAP chain of r, in the replay's two
// passes, and sets rep.Story to what each replay found. The second pass keeps each chain's
// tasks and findings and spools its events to a temporary file, which the page reads back as
// it writes its rows: memory grows with the tasks and findings, not with the entries.
func WriteBundle(ctx context.Context, w io.Writer, rep *verifier.Report, r *bundle.Reader, o BundleOptions) error {
	in := Input{Report: rep, MaxEntries: o.MaxEntries}
	if o.MaxEntries == 0 {
		in.MaxEntries = -1
	}
	if r != nil {
		var spools []*spool
		defer func() {
			for _, s := range spools {
				s.remove()
			}
		}()
		rep.Story = nil
		for _, ref := range r.Manifest.Chains {
			if ref.Profile != chap.Profile {
				continue
			}
			if ref.Slice != nil {
				// A case slice holds the entries of one case and the key records, not the chain:
				// a history needs every entry.
				rep.Story = append(rep.Story, verifier.Story{Chain: ref.ID, Codes: []verifier.StoryCode{},
					NotReplayed: fmt.Sprintf("a case slice (%s holds some of the chain's %d entries): a story is told from the whole chain, so evident replay of a bundle of the whole chain tells it", bundle.SliceFile(ref.Dir), ref.Size)})
				continue
			}
			sp, err := newSpool()
			if err != nil {
				return err
			}
			spools = append(spools, sp)
			tl, err := replayChain(ctx, r, ref, o.Limits, sp)
			if err == nil {
				err = sp.done()
			}
			if err != nil {
				if cerr := ctx.Err(); cerr != nil {
					return cerr
				}
				if errors.Is(err, errSpool) {
					return err
				}
				// A chain the verifier found broken may not replay; its story says why.
				rep.Story = append(rep.Story, verifier.Story{Chain: ref.ID, Codes: []verifier.StoryCode{},
					Error: fmt.Sprintf("the chain does not replay: %v", err)})
				spools = spools[:len(spools)-1]
				sp.remove()
				continue
			}
			if len(tl.Answers) > 7 {
				tl.Answers[7].Answer = []string{fmt.Sprintf("evident verify: %s (%d checks verified, %d not evaluated, %d broken)", rep.Verdict,
					rep.Count(verifier.Verified), rep.Count(verifier.NotEvaluated), rep.Count(verifier.Broken))}
			}
			notes := make([]verifier.StoryNote, len(tl.NotEvaluated))
			for i, n := range tl.NotEvaluated {
				notes[i] = verifier.StoryNote{Seq: n.Seq, Task: n.Task, Code: n.Code, Detail: n.Detail}
			}
			rep.Story = append(rep.Story, verifier.StoryOf(tl, notes))
			in.Timelines = append(in.Timelines, tl)
		}
		in.Entries = func(i int, each func(*replay.Event) error) error { return spools[i].each(each) }
	}
	if o.Dir != "" {
		return WriteDir(o.Dir, in)
	}
	return Write(w, in)
}

// replayChain replays a chain's entries.jsonl in the replay's two passes (the first finds which
// ids the log binds to which creations), the second giving its events to sp. It trusts the
// verifier for integrity and only reads the records: a malformed line is an error.
func replayChain(ctx context.Context, r *bundle.Reader, ref bundle.ChainRef, lim canonical.Limits, sp *spool) (*replay.Timeline, error) {
	ix := replay.NewIndex()
	if err := verifier.EachCHAPRecord(ctx, r, ref, lim, nil, ix.Add); err != nil {
		return nil, err
	}
	b := replay.New(ref.ID, "", ix.Bind())
	b.EachEvent(sp.add)
	if err := verifier.EachCHAPRecord(ctx, r, ref, lim, nil, b.Add); err != nil {
		return nil, err
	}
	return b.Timeline(), nil
}

// errSpool marks a failure of the temporary file, not of the chain.
var errSpool = errors.New("htmlreport: spool")

// spool is a temporary file of a timeline's events, each a uvarint seq, a refusal byte and
// eight strings (uvarint length, bytes), written once and read back as often as the page needs.
type spool struct {
	f   *os.File
	w   *bufio.Writer
	err error
	buf []byte
}

func newSpool() (*spool, error) {
	f, err := os.CreateTemp("", "evident-report-*.events")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errSpool, err)
	}
	return &spool{f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

func (s *spool) add(ev replay.Event) {
	if s.err != nil {
		return
	}
	s.buf = binary.AppendUvarint(s.buf[:0], ev.Seq)
	if ev.Refusal {
		s.buf = append(s.buf, 1)
	} else {
		s.buf = append(s.buf, 0)
	}
	for _, str := range [...]string{ev.TS, ev.Method, ev.From, ev.Role, ev.Kid, ev.Task, ev.Mode, ev.Summary} {
		s.buf = binary.AppendUvarint(s.buf, uint64(len(str)))
		s.buf = append(s.buf, str...)
	}
	_, s.err = s.w.Write(s.buf)
}

// done ends the writing.
func (s *spool) done() error {
	if s.err == nil {
		s.err = s.w.Flush()
	}
	if s.err != nil {
		return fmt.Errorf("%w: %v", errSpool, s.err)
	}
	return nil
}

// each reads the events back, in order, and gives each to f.
func (s *spool) each(f func(*replay.Event) error) error {
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("%w: %v", errSpool, err)
	}
	r := bufio.NewReaderSize(s.f, 256<<10)
	var ev replay.Event
	var strs [8]string
	for {
		seq, err := binary.ReadUvarint(r)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %v", errSpool, err)
		}
		refusal, err := r.ReadByte()
		if err != nil {
			return fmt.Errorf("%w: %v", errSpool, err)
		}
		for i := range strs {
			n, err := binary.ReadUvarint(r)
			if err != nil {
				return fmt.Errorf("%w: %v", errSpool, err)
			}
			if cap(s.buf) < int(n) {
				s.buf = make([]byte, n)
			}
			b := s.buf[:n]
			if _, err := io.ReadFull(r, b); err != nil {
				return fmt.Errorf("%w: %v", errSpool, err)
			}
			if strs[i] != string(b) { // the few senders, methods, keys and modes repeat: keep one copy
				strs[i] = string(b)
			}
		}
		ev = replay.Event{Seq: seq, Refusal: refusal == 1, TS: strs[0], Method: strs[1], From: strs[2], Role: strs[3], Kid: strs[4], Task: strs[5], Mode: strs[6], Summary: strs[7]}
		if err := f(&ev); err != nil {
			return err
		}
	}
}

func (s *spool) remove() {
	s.f.Close()
	os.Remove(s.f.Name())
}
