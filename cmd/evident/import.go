package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/client"
	"github.com/evident-log/evident/internal/rawjson"
)

// newImportCmd is `evident import --chain WORKSPACE FILE...`.
func newImportCmd(a *app) *cobra.Command {
	var (
		svc                      serviceFlags
		format                   formatFlag
		chain, profile, describe string
		batch                    int
		quiet                    bool
	)
	cmd := &cobra.Command{
		Use:   "import --chain WORKSPACE [--describe FILE] [flags] FILE...",
		Short: "Take a CHAP Coordinator's audit.read dump into a chain (resumes; --describe checks its evidence_head)",
		Long: `Takes a CHAP Coordinator's audit log into a chain, as audit.read returns it: each FILE (or - for
standard input) holds an audit.read result {"entries": [...], "next_seq": n} (bare or as the
JSON-RPC response's result), a JSON array of entries, or JSON Lines of entries
{seq, arrived, envelope | request+outcome, prev_hash?}. Entries the chain already holds (seq below
its size) are skipped, so an interrupted import resumes where it stopped; evidentd checks that
each entry's seq and prev_hash continue the chain. With --describe, the Coordinator's
evidence_head is checked against the chain and kept for export.`,
		Example: `  evident import --chain wsp_acme audit.json
  evident import --chain wsp_acme --describe describe.json --format json audit.json`,
		Args:              minArgs("missing FILE argument (the audit.read dump; - for standard input)"),
		ValidArgsFunction: fileArgs,
	}
	f := cmd.Flags()
	svc.register(f)
	f.StringVar(&chain, "chain", "", "chain id: the Coordinator's workspace — required")
	f.StringVar(&profile, "profile", "", "profile of a new chain (default: evidentd's, chap/0.3)")
	f.IntVar(&batch, "batch", 500, "entries per request (each request is atomic)")
	f.StringVar(&describe, "describe", "", "the Coordinator's workspace.describe result (file, JSON): its evidence_head and audit_count are checked against the chain and kept for export")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress on standard error")
	addFormat(cmd, &format)
	markFiles(cmd, "describe")
	cmd.RunE = a.action(func(cmd *cobra.Command, args []string) int {
		return runImport(a.ctx, cmd, &svc, &format, chain, profile, describe, batch, quiet, args, a.stdout, a.stderr)
	})
	return cmd
}

// importOutput is what `evident import --format json` writes.
type importOutput struct {
	Chain string `json:"chain"`
	// Imported entries were sent (New of them appended, AlreadyLogged found at their
	// position); Skipped were below the chain's size before the run and not sent.
	Imported      int    `json:"imported"`
	New           int    `json:"new"`
	AlreadyLogged int    `json:"already_logged"`
	Skipped       int    `json:"skipped"`
	Size          uint64 `json:"size"`
	Head          string `json:"head,omitempty"`
	// EvidenceHead is evidentd's answer to --describe's evidence_head, absent without it.
	EvidenceHead *api.EvidenceHeadResponse `json:"evidence_head,omitempty"`
}

// runImport reads the dump in files and sends the entries the chain lacks.
func runImport(ctx context.Context, cmd *cobra.Command, svc *serviceFlags, format *formatFlag, chain, profile, describe string, batch int, quiet bool, files []string, stdout, stderr io.Writer) int {
	if code, ok := format.check(cmd); !ok {
		return code
	}
	if code, ok := checkService(cmd, chain, batch); !ok {
		return code
	}
	var entries []auditEntry
	for _, name := range files {
		es, err := readAuditEntries(name)
		if err != nil {
			fmt.Fprintln(stderr, "evident import:", err)
			return exitFailure
		}
		entries = append(entries, es...)
	}
	var head *api.EvidenceHeadRequest
	if describe != "" {
		h, err := readEvidenceHead(describe)
		if err != nil {
			fmt.Fprintln(stderr, "evident import:", err)
			return exitFailure
		}
		head = h
	}
	c, err := svc.client()
	if err != nil {
		return usageErr(cmd, "-url: %v", err)
	}
	var size uint64
	err = svc.call(ctx, func(ctx context.Context) error {
		h, err := c.Head(ctx, chain)
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
		p = newProgress(stderr, quiet, "import "+chain, "entries", uint64(len(todo)))
	}
	res, err := svc.sendBatches(ctx, c, chain, profile, todo, batch, func(sent int) { p.Update(uint64(sent)) })
	sent, last := res.sent, res.last
	if err != nil {
		p.Stop()
		end := min(sent+batch, len(todo))
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
	out := importOutput{Chain: chain, Imported: sent, New: sent - res.duplicates, AlreadyLogged: res.duplicates, Skipped: skipped, Size: size}
	if last != nil {
		out.Size, out.Head = last.Size, last.Head.String()
	}
	if !format.json() {
		if last != nil {
			fmt.Fprintf(stdout, "%d entries imported into %s (%d already there): size %d, head %s; %d new, %d already logged\n", sent, chain, skipped, last.Size, last.Head, out.New, out.AlreadyLogged)
		} else {
			fmt.Fprintf(stdout, "nothing to import: %s already holds all %d entries\n", chain, skipped)
		}
	}
	if head != nil {
		err = svc.call(ctx, func(ctx context.Context) error {
			var err error
			out.EvidenceHead, err = c.ReportEvidenceHead(ctx, chain, head.EvidenceHead, head.AuditCount)
			return err
		})
		if err != nil {
			fmt.Fprintln(stderr, "evident import: evidence head:", err)
			return submitExit(err) // 422 evidence_head_mismatch: the chain and the Coordinator disagree
		}
		if rep := out.EvidenceHead; !format.json() {
			fmt.Fprintf(stdout, "the Coordinator's evidence_head %s at audit_count %d: %s (chain size %d)\n", rep.EvidenceHead, rep.AuditCount, rep.Status, rep.Size)
		}
	}
	if format.json() {
		if err := writeJSON(stdout, out); err != nil {
			fmt.Fprintln(stderr, "evident import:", err)
			return exitFailure
		}
	}
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
