// Package htmlreport renders a verification report (and, for CHAP chains, the replayed
// timeline) as one self-contained HTML file a regulator can open offline: inline CSS, no
// script, no external asset of any kind (no font, image, stylesheet or link that loads
// anything), every value from the bundle escaped. A Content-Security-Policy meta tag forbids
// loading anything even if a future template forgot.
//
// The page reads top down: the verdict, a summary (what was verified, not evaluated or
// broken, the replay's findings in full, chains, seals, witnesses, keys, and whether the keys
// were pinned), an index (every section, each chain with its counts, its tasks with their
// verdicts), then the detail. A chain's timeline is cut to a number of rows (Input.MaxEntries)
// so that a chain of millions of entries still gives a page a browser renders at once;
// refused entries, entries a check found broken and entries with a replay finding are always
// shown. WriteDir writes the same page as the index of a folder that also holds every entry
// and every task, on pages of bounded size.
//
// The page is written as it goes: the events of a timeline can stream from a replay
// (Input.Entries) and are never held, so memory grows with the tasks and findings of a chain,
// not with its entries.
package htmlreport

import (
	"bufio"
	"embed"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"

	"github.com/evident-log/evident/ledger/profile/chap/replay"
	"github.com/evident-log/evident/verifier"
)

// DefaultMaxEntries is how many timeline rows of each chain a report shows when
// Input.MaxEntries is zero.
const DefaultMaxEntries = 2000

//go:embed report.html.tmpl
var files embed.FS

var tmpl = template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
	"upper": func(s verifier.Status) string { return strings.ToUpper(string(s)) },
	"mark":  mark,
	"orDash": func(s string) string {
		if s == "" {
			return "–"
		}
		return s
	},
	"join":  strings.Join,
	"name":  name,
	"hash":  hash,
	"num":   num,
	"plain": plainStatus,
	"deref": func(b *bool) bool { return b != nil && *b },
}).ParseFS(files, "report.html.tmpl"))

// Input is what the report shows.
type Input struct {
	Report    *verifier.Report
	Timelines []*replay.Timeline // CHAP timelines; may be empty
	// MaxEntries bounds the timeline rows shown per chain (and the task sections per chain):
	// 0 means DefaultMaxEntries, a negative value shows every row. Refused entries, entries a
	// check found broken and entries with a replay finding are shown whatever the bound.
	MaxEntries int
	// Entries, when set, gives each event of Timelines[i] to each, in chain order, for
	// timelines that keep none (replay.Builder.EachEvent, then a spool): the report reads them
	// as it writes them, more than once (to count, to write; a folder also for its pages), and
	// never holds them. Nil: the events are Timelines[i].Events.
	Entries func(i int, each func(*replay.Event) error) error

	dir bool // WriteDir: the page is a folder's index
}

// events gives the events of timeline i to f, in order.
func (in *Input) events(i int, f func(*replay.Event) error) error {
	if in.Entries != nil {
		return in.Entries(i, f)
	}
	evs := in.Timelines[i].Events
	for j := range evs {
		if err := f(&evs[j]); err != nil {
			return err
		}
	}
	return nil
}

// Write renders the report as one self-contained HTML file.
func Write(w io.Writer, in Input) error {
	if in.Report == nil {
		return fmt.Errorf("htmlreport: no report")
	}
	p, err := build(in)
	if err != nil {
		return fmt.Errorf("htmlreport: %w", err)
	}
	if err := p.write(w, &in); err != nil {
		return fmt.Errorf("htmlreport: %w", err)
	}
	return nil
}

// write writes the page section by section; the rows of each timeline stream between its
// head and its end.
func (p *page) write(w io.Writer, in *Input) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := tmpl.ExecuteTemplate(bw, "top", p); err != nil {
		return err
	}
	for i := range p.Timelines {
		tv := &p.Timelines[i]
		if err := tmpl.ExecuteTemplate(bw, "timeline", tv); err != nil {
			return err
		}
		if err := tv.writeRows(bw, in); err != nil {
			return err
		}
		if err := tmpl.ExecuteTemplate(bw, "timelineEnd", tv); err != nil {
			return err
		}
	}
	if err := tmpl.ExecuteTemplate(bw, "bottom", p); err != nil {
		return err
	}
	return bw.Flush()
}

// writeRows writes the rows the page shows of a timeline: the first MaxEntries events, then
// the flagged ones, each run left out as one gap row (in a folder, linked to its page).
func (v *timelineView) writeRows(w *bufio.Writer, in *Input) error {
	var gap row
	gapAt := 0 // the index of the gap's first event
	idx := 0
	flush := func() {
		if gap.Gap == 0 {
			return
		}
		w.WriteString(`<tr class="gap"><td colspan="7">… `)
		w.WriteString(num(gap.Gap))
		w.WriteString(` entries not shown (seq `)
		w.WriteString(strconv.FormatUint(gap.GapLo, 10))
		w.WriteString("–")
		w.WriteString(strconv.FormatUint(gap.GapHi, 10))
		w.WriteString(`)`)
		if v.Dir {
			w.WriteString(`, on <a href="`)
			w.WriteString(v.entryHref(gap.GapLo, gapAt))
			w.WriteString(`">the entry pages</a>`)
		}
		w.WriteString(" …</td></tr>\n")
		gap = row{}
	}
	err := in.events(v.N-1, func(ev *replay.Event) error {
		i := idx
		idx++
		flag := v.flag(ev)
		if v.MaxEntries >= 0 && i >= v.MaxEntries && flag == "" {
			if gap.Gap == 0 {
				gap.GapLo, gapAt = ev.Seq, i
			}
			gap.Gap++
			gap.GapHi = ev.Seq
			return nil
		}
		flush()
		v.writeRow(w, ev, flag)
		return nil
	})
	flush()
	return err
}

// entryHref is the link to the entry at seq, the i-th of the timeline, on the entry pages.
func (v *timelineView) entryHref(seq uint64, i int) string {
	return entryPageFile(v.N, i/entriesPerPage) + "#c" + strconv.Itoa(v.N) + "-" + strconv.FormatUint(seq, 10)
}

// writeRow writes one event as a table row, every value from the bundle escaped.
func (v *timelineView) writeRow(w *bufio.Writer, ev *replay.Event, flag string) {
	seq := strconv.FormatUint(ev.Seq, 10)
	w.WriteString(`<tr id="c`)
	w.WriteString(strconv.Itoa(v.N))
	w.WriteString("-")
	w.WriteString(seq)
	w.WriteString(`"`)
	if flag != "" {
		w.WriteString(` class="f-`)
		w.WriteString(flag)
		w.WriteString(`"`)
	}
	w.WriteString(`><td class="n">`)
	w.WriteString(seq)
	w.WriteString(`</td><td class="mono nw">`)
	escape(w, ev.TS)
	w.WriteString(`</td><td class="mono nw">`)
	escape(w, ev.Method)
	w.WriteString(`</td><td class="name">`)
	w.WriteString(string(name(ev.From)))
	if ev.Role != "" {
		w.WriteString(" (")
		escape(w, ev.Role)
		w.WriteString(")")
	}
	w.WriteString(`</td><td class="name">`)
	w.WriteString(string(name(ev.Kid)))
	w.WriteString(`</td><td>`)
	escape(w, ev.Mode)
	w.WriteString(`</td><td>`)
	if ev.Refusal {
		w.WriteString(`<span class="s s-broken">refused</span> `)
	}
	escape(w, ev.Summary)
	if b := v.broken[ev.Seq]; b != "" {
		w.WriteString(`<div class="s-broken"><b>broken:</b> `)
		escape(w, b)
		w.WriteString(`</div>`)
	}
	w.WriteString("</td></tr>\n")
}

// escape writes s escaped for HTML text and attribute values, as html/template does.
func escape(w *bufio.Writer, s string) {
	if !strings.ContainsAny(s, "<>&'\"\x00") {
		w.WriteString(s)
		return
	}
	w.WriteString(template.HTMLEscapeString(s))
}

func mark(s verifier.Status) string {
	switch s {
	case verifier.Verified:
		return "✓"
	case verifier.Broken:
		return "✗"
	}
	return "?"
}

func plainStatus(s verifier.Status) string { return strings.ReplaceAll(string(s), "_", " ") }
