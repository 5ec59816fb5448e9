package main

import (
	"io"

	"github.com/evident-log/evident/bundle"
)

// exportProgress writes a downloaded bundle on to w and reports the download's progress on
// out: in entries against the total the service announced before the first byte
// (api.HeaderEntries, through start), counted as the bundle streams by (bundle.EntryCounter), or in
// bytes when the service gave no total (a case slice).
type exportProgress struct {
	w     io.Writer
	out   io.Writer
	quiet bool
	what  string // e.g. "export wsp_acme"

	p     *progress
	count *bundle.EntryCounter // nil: progress in bytes
	bytes uint64
}

// start switches the report to entries out of total; it runs before the first Write.
func (e *exportProgress) start(total uint64) {
	if e.quiet {
		return
	}
	e.count = bundle.NewEntryCounter()
	e.p = newProgress(e.out, e.quiet, e.what, "entries", total)
}

func (e *exportProgress) Write(b []byte) (int, error) {
	if e.p == nil {
		e.p = newProgress(e.out, e.quiet, e.what, "bytes", 0) // no total was announced
	}
	n, err := e.w.Write(b)
	e.bytes += uint64(n)
	if e.count == nil {
		e.p.Update(e.bytes)
		return n, err
	}
	e.count.Write(b[:n])
	e.p.Update(e.count.Count())
	return n, err
}

// end ends the report: how much was done and how fast, or, when the export failed, the
// live line ended so that the error starts a line of its own.
func (e *exportProgress) end(err error) {
	done := e.bytes
	if e.count != nil {
		done = e.count.Close()
	}
	if e.p == nil {
		e.p = newProgress(e.out, e.quiet, e.what, "bytes", 0)
	}
	if err != nil {
		e.p.Stop()
		return
	}
	e.p.Done(done)
}
