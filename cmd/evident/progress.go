package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress reports how far a long command (submit, import, export) is, on standard error.
// On a terminal it redraws one live line at most ten times a second; elsewhere (a log, CI)
// it writes a plain line at each tenth of the work — or, with no known total, at each
// doubling of the work past one step (1 MiB of bytes, 1000 entries) and at least every
// plainEvery — and one line when the work ends. A nil *progress reports nothing (-q).
type progress struct {
	w     io.Writer
	what  string // e.g. "export wsp_acme"
	unit  string // "bytes", or what is counted: "records", "entries"
	total uint64 // 0: unknown
	live  bool   // w is a terminal
	now   func() time.Time

	start, last time.Time
	mark        uint64 // plain mode: the work at which the next line is due
	drawn       bool   // live mode: a line is on the screen
}

// plainEvery is the longest gap between two plain progress lines.
const plainEvery = 30 * time.Second

// newProgress starts reporting the progress of what, counted in unit, out of total (0:
// unknown), on w; it returns nil when quiet.
func newProgress(w io.Writer, quiet bool, what, unit string, total uint64) *progress {
	if quiet {
		return nil
	}
	p := &progress{w: w, what: what, unit: unit, total: total, live: isTerminal(w), now: time.Now}
	p.start = p.now()
	p.last = p.start
	p.mark = p.step()
	return p
}

// step is the first amount of work worth a plain line: a tenth of the total, or 1 MiB of
// bytes or 1000 of anything else when the total is unknown.
func (p *progress) step() uint64 {
	switch {
	case p.total > 0:
		return max(1, p.total/10)
	case p.unit == "bytes":
		return 1 << 20
	}
	return 1000
}

// Update reports that done units of the work are done.
func (p *progress) Update(done uint64) {
	if p == nil {
		return
	}
	t := p.now()
	if p.live {
		if t.Sub(p.last) < 100*time.Millisecond && p.drawn {
			return
		}
		p.last, p.drawn = t, true
		fmt.Fprintf(p.w, "\r\033[K%s", p.line(done, t))
		return
	}
	if done < p.mark && t.Sub(p.last) < plainEvery || p.total > 0 && done >= p.total {
		return // not due yet, or finished: Done says so
	}
	for p.mark <= done {
		if p.total > 0 {
			p.mark += p.step()
		} else {
			p.mark *= 2
		}
	}
	p.last = t
	fmt.Fprintln(p.w, p.line(done, t))
}

// Done ends the report with a line saying how much was done and how fast.
func (p *progress) Done(done uint64) {
	if p == nil {
		return
	}
	t := p.now()
	if p.live {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, "%s in %s\n", p.line(done, t), t.Sub(p.start).Round(time.Millisecond))
}

// Stop ends the report when the work failed: the live line stays, ended, so that the error
// printed next starts a line of its own.
func (p *progress) Stop() {
	if p != nil && p.live && p.drawn {
		fmt.Fprintln(p.w)
	}
}

// line says how far the work is at t: "export wsp: 12.0 MiB (8.1 MiB/s)",
// "import wsp: 5000/20000 entries (25%), 4100 entries/s".
func (p *progress) line(done uint64, t time.Time) string {
	rate := 0.0
	if d := t.Sub(p.start).Seconds(); d > 0 {
		rate = float64(done) / d
	}
	switch {
	case p.unit == "" && p.total > 0: // a stage of verify or replay
		return fmt.Sprintf("%s: %d/%d (%.0f%%)", p.what, done, p.total, 100*float64(done)/float64(p.total))
	case p.unit == "":
		return fmt.Sprintf("%s: %d", p.what, done)
	}
	if p.unit == "bytes" {
		return fmt.Sprintf("%s: %s (%s/s)", p.what, mib(float64(done)), mib(rate))
	}
	if p.total > 0 {
		return fmt.Sprintf("%s: %d/%d %s (%.0f%%), %.0f %s/s", p.what, done, p.total, p.unit, 100*float64(done)/float64(p.total), rate, p.unit)
	}
	return fmt.Sprintf("%s: %d %s, %.0f %s/s", p.what, done, p.unit, rate, p.unit)
}

func mib(n float64) string { return fmt.Sprintf("%.1f MiB", n/(1<<20)) }

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressPrinter is the live progress of verify and replay, which report stages (each
// with its own total) on a terminal only: one redrawn line, at most ten times a second.
func progressPrinter(w io.Writer) func(stage string, done, total uint64) {
	var cur *progress
	return func(stage string, done, total uint64) {
		if cur == nil || cur.what != stage || cur.total != total {
			cur = &progress{w: w, what: stage, total: total, live: true, now: time.Now}
			cur.start = cur.now()
		}
		cur.Update(done)
	}
}
