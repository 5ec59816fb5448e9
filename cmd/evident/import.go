package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/client"
	"github.com/evident-log/evident/internal/rawjson"
)

// cmdImport takes a CHAP Coordinator's audit.read dump into a chain, resuming where the chain
// stands, and hands evidentd the Coordinator's evidence_head to check.
func cmdImport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("evident import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var svc serviceFlags
	svc.register(fs)
	chain := fs.String("chain", "", "chain id: the Coordinator's workspace — required")
	profile := fs.String("profile", "", "profile of a new chain (default: evidentd's, chap/0.3)")
	batch := fs.Int("batch", 500, "entries per request (each request is atomic)")
	describe := fs.String("describe", "", "the Coordinator's workspace.describe result (file, JSON): its evidence_head and audit_count are checked against the chain and kept for export")
	quiet := fs.Bool("q", false, "no progress on standard error")
	fs.BoolVar(quiet, "quiet", false, "same as -q")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: %s

Takes a CHAP Coordinator's audit log into a chain, as audit.read returns it: each FILE (or - for
standard input) holds an audit.read result {"entries": [...], "next_seq": n} (bare or as the
JSON-RPC response's result), a JSON array of entries, or JSON Lines of entries
{seq, arrived, envelope | request+outcome, prev_hash?}. Entries the chain already holds (seq below
its size) are skipped, so an interrupted import resumes where it stopped; evidentd checks that
each entry's seq and prev_hash continue the chain. With -describe, the Coordinator's
evidence_head is checked against the chain and kept for export.

Flags:
`, synopsis(fs.Name()))
		fs.PrintDefaults()
	}
	if code, done := parseArgs(fs, args); done {
		return code
	}
	if code, ok := checkService(fs, *chain, *batch); !ok {
		return code
	}
	if fs.NArg() == 0 {
		return usageErr(fs, "missing FILE argument (the audit.read dump; - for standard input)")
	}
	var entries []auditEntry
	for _, name := range fs.Args() {
		es, err := readAuditEntries(name)
		if err != nil {
			fmt.Fprintln(stderr, "evident import:", err)
			return exitFailure
		}
		entries = append(entries, es...)
	}
	var head *api.EvidenceHeadRequest
	if *describe != "" {
		h, err := readEvidenceHead(*describe)
		if err != nil {
			fmt.Fprintln(stderr, "evident import:", err)
			return exitFailure
		}
		head = h
	}
	c, err := svc.client()
	if err != nil {
		return usageErr(fs, "-url: %v", err)
	}
	var size uint64
	err = svc.call(ctx, func(ctx context.Context) error {
		h, err := c.Head(ctx, *chain)
		if err == nil {
			size = h.Size
		}
		return err
	})
	if err != nil && !client.IsCode(err, api.CodeNoSuchChain) {
		fmt.Fprintln(stderr, "evident import:", err)
		return exitFailure
	}
	var todo [][]byte
	skipped := 0
	for i, e := range entries {
		switch {
		case e.Seq < size:
			skipped++
		case e.Seq != size+uint64(len(todo)):
			fmt.Fprintf(stderr, "evident import: entry %d has seq %d where seq %d is next: the dump has a gap or is out of order\n", i, e.Seq, size+uint64(len(todo)))
			return exitFailure
		default:
			todo = append(todo, e.raw)
		}
	}
	var p *progress
	if len(todo) > 0 {
		p = newProgress(stderr, *quiet, "import "+*chain, "entries", uint64(len(todo)))
	}
	sent, last, err := svc.sendBatches(ctx, c, *chain, *profile, todo, *batch, func(sent int) { p.Update(uint64(sent)) })
	if err != nil {
		p.Stop()
		end := min(sent+*batch, len(todo))
		fmt.Fprintf(stderr, "evident import: entries seq %d..%d: %v\n", size+uint64(sent), size+uint64(end-1), err)
		code := submitExit(err)
		what := "refusal"
		if code != exitBroken {
			what = "error"
		}
		fmt.Fprintf(stderr, "%d entries imported before the %s; run again to resume from seq %d\n", sent, what, size+uint64(sent))
		var ce *client.Error
		if errors.As(err, &ce) && ce.Limit != nil && ce.Index != nil {
			fmt.Fprintf(stderr, "seq %d is over evidentd's %s limit of %d: restart evidentd with %s (or %s) raised, then run this import again; nothing from seq %d on was taken\n",
				size+uint64(sent+*ce.Index), ce.Limit.Name, ce.Limit.Value, ce.Limit.Flag, ce.Limit.Env, size+uint64(sent))
		}
		return code
	}
	p.Done(uint64(sent))
	if last != nil {
		fmt.Fprintf(stdout, "%d entries imported into %s (%d already there): size %d, head %s\n", sent, *chain, skipped, last.Size, last.Head)
	} else {
		fmt.Fprintf(stdout, "nothing to import: %s already holds all %d entries\n", *chain, skipped)
	}
	if head == nil {
		return 0
	}
	var rep *api.EvidenceHeadResponse
	err = svc.call(ctx, func(ctx context.Context) error {
		var err error
		rep, err = c.ReportEvidenceHead(ctx, *chain, head.EvidenceHead, head.AuditCount)
		return err
	})
	if err != nil {
		fmt.Fprintln(stderr, "evident import: evidence head:", err)
		return submitExit(err) // 422 evidence_head_mismatch: the chain and the Coordinator disagree
	}
	fmt.Fprintf(stdout, "the Coordinator's evidence_head %s at audit_count %d: %s (chain size %d)\n", rep.EvidenceHead, rep.AuditCount, rep.Status, rep.Size)
	return 0
}

// auditEntry is one entry of an audit.read dump: its seq and its bytes.
type auditEntry struct {
	Seq uint64
	raw []byte
}

// readAuditEntries reads an audit.read dump from a file or standard input.
func readAuditEntries(name string) ([]auditEntry, error) {
	b, err := readInput(name)
	if err != nil {
		return nil, err
	}
	t := bytes.TrimSpace(b)
	if len(t) > 0 && t[0] == '{' && rawjson.Valid(t) {
		// An audit.read result, bare or as a JSON-RPC response's result; split without
		// encoding/json, whose scanner refuses records nested past 10,000 levels.
		page := t
		if res, ok, err := rawjson.Member(t, "result"); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		} else if ok && len(res) > 0 && res[0] == '{' {
			page = res
		}
		entries, ok, err := rawjson.Member(page, "entries")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if ok {
			raws, err := rawjson.Elements(entries, 0)
			if err != nil {
				return nil, fmt.Errorf("%s: entries: %w", name, err)
			}
			return parseAuditEntries(name, raws)
		}
	}
	recs, err := parseRecords(name, b)
	if err != nil {
		return nil, err
	}
	return parseAuditEntries(name, recs)
}

func parseAuditEntries(name string, raws [][]byte) ([]auditEntry, error) {
	out := make([]auditEntry, len(raws))
	for i, r := range raws {
		v, ok, err := rawjson.Member(r, "seq")
		var seq uint64
		if err == nil && ok {
			seq, err = strconv.ParseUint(string(v), 10, 64)
		}
		if err != nil || !ok {
			return nil, fmt.Errorf("%s: entry %d is not a Coordinator audit entry {seq, arrived, envelope, prev_hash?}", name, i)
		}
		out[i] = auditEntry{Seq: seq, raw: r}
	}
	return out, nil
}

// readEvidenceHead reads evidence_head and audit_count from a workspace.describe result,
// bare or as a JSON-RPC response's result.
func readEvidenceHead(name string) (*api.EvidenceHeadRequest, error) {
	b, err := readInput(name)
	if err != nil {
		return nil, err
	}
	req, err := api.ParseEvidenceHead(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &req, nil
}

// readInput reads a file, or standard input for "-".
func readInput(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(name)
}
