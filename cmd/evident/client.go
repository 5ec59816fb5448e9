package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/client"
	"github.com/evident-log/evident/internal/rawjson"
)

// serviceFlags are the flags of the commands that talk to an evidentd.
type serviceFlags struct {
	url     string
	token   string
	timeout time.Duration
}

func (s *serviceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.url, "url", envOr("EVIDENT_URL", "http://127.0.0.1:8080"), "evidentd base URL (env EVIDENT_URL)")
	fs.StringVar(&s.token, "token", os.Getenv("EVIDENT_TOKEN"), "bearer token for writes (env EVIDENT_TOKEN); none: evidentd accepts writes from loopback only")
	fs.DurationVar(&s.timeout, "timeout", 2*time.Minute, "give up on one request after this long")
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// client returns a client of the evidentd the flags name. Each command bounds its requests
// with -timeout through the context, not with the http.Client.
func (s *serviceFlags) client() (*client.Client, error) {
	return client.New(s.url, client.WithToken(s.token), client.WithHTTPClient(&http.Client{}))
}

// cmdSubmit streams records from files to a chain in batches.
func cmdSubmit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("evident submit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var svc serviceFlags
	svc.register(fs)
	chain := fs.String("chain", "", "chain id (CHAP: the workspace) — required")
	profile := fs.String("profile", "", "profile of a new chain (default: evidentd's, chap/0.3)")
	batch := fs.Int("batch", 1000, "records per request (each request is atomic)")
	quiet := fs.Bool("q", false, "no progress on standard error")
	fs.BoolVar(quiet, "quiet", false, "same as -q")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s\n\nSends records to evidentd: each FILE (or - for standard input) holds one JSON record, a JSON\narray of records, or JSON Lines. Records go in order, in atomic batches; the first refusal stops\nthe run and names the record.\n\nFlags:\n", synopsis(fs.Name()))
		fs.PrintDefaults()
	}
	if code, done := parseArgs(fs, args); done {
		return code
	}
	if code, ok := checkService(fs, *chain, *batch); !ok {
		return code
	}
	if fs.NArg() == 0 {
		return usageErr(fs, "missing FILE argument (records to send; - for standard input)")
	}
	var records [][]byte
	for _, name := range fs.Args() {
		recs, err := readRecords(name)
		if err != nil {
			fmt.Fprintln(stderr, "evident submit:", err)
			return exitFailure
		}
		records = append(records, recs...)
	}
	c, err := svc.client()
	if err != nil {
		return usageErr(fs, "-url: %v", err)
	}
	var p *progress
	if len(records) > 0 {
		p = newProgress(stderr, *quiet, "submit "+*chain, "records", uint64(len(records)))
	}
	sent, last, err := svc.sendBatches(ctx, c, *chain, *profile, records, *batch, func(sent int) { p.Update(uint64(sent)) })
	if err != nil {
		p.Stop()
		code := submitExit(err)
		fmt.Fprintf(stderr, "evident submit: records %d..%d: %v\n", sent, min(sent+*batch, len(records))-1, err)
		if code == exitBroken {
			fmt.Fprintf(stderr, "%d record(s) accepted before the refusal\n", sent)
		} else {
			fmt.Fprintf(stderr, "%d record(s) accepted before the error; nothing of this batch was refused as evidence\n", sent)
		}
		return code
	}
	p.Done(uint64(sent))
	if last == nil {
		last = &api.IngestResponse{} // nothing to send (an empty array)
	}
	fmt.Fprintf(stdout, "%d record(s) accepted into %s: size %d, head %s\n", sent, *chain, last.Size, last.Head)
	return 0
}

// checkService checks the flags every command that writes to a chain needs: -chain, and
// a -batch of at least one record.
func checkService(fs *flag.FlagSet, chain string, batch int) (int, bool) {
	switch {
	case chain == "":
		return usageErr(fs, "missing -chain (the chain id; CHAP: the workspace)"), false
	case batch < 1:
		return usageErr(fs, "-batch must be at least 1, not %d", batch), false
	}
	return 0, true
}

// submitExit is the exit code of a failed submission: broken when evidentd refused a
// record as evidence (the problem names the record: a bad signature, a fork, …) or found
// the Coordinator's evidence_head disagreeing with the chain; could not run for anything
// else (unreachable, timed out, unauthorized, overloaded, a closed chain or another
// profile's: where the records went, not what they are).
func submitExit(err error) int {
	var e *client.Error
	if !errors.As(err, &e) {
		return exitFailure
	}
	switch {
	case e.Code == api.CodeChainClosed || e.Code == api.CodeProfileMismatch:
		return exitFailure
	case e.Index != nil || e.Code == api.CodeEvidenceHeadMismatch:
		return exitBroken
	}
	return exitFailure
}

// call runs one request, bounded by -timeout.
func (s *serviceFlags) call(ctx context.Context, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return f(ctx)
}

// sendBatches submits records to chain in atomic batches of size batch, each request bounded
// by -timeout, reporting progress (records sent) after each when progress is set. It returns
// how many records were accepted, the answer to the last accepted batch (nil when none was
// sent), and the refusal that stopped it.
func (s *serviceFlags) sendBatches(ctx context.Context, c *client.Client, chain, profile string, records [][]byte, batch int, progress func(sent int)) (int, *api.IngestResponse, error) {
	sent := 0
	var last *api.IngestResponse
	for sent < len(records) {
		end := min(sent+batch, len(records))
		err := s.call(ctx, func(ctx context.Context) error {
			res, err := c.Submit(ctx, chain, records[sent:end], client.WithProfile(profile))
			if err == nil {
				last = res
			}
			return err
		})
		if err != nil {
			return sent, last, err
		}
		sent = end
		if progress != nil {
			progress(sent)
		}
	}
	return sent, last, nil
}

// readRecords reads one JSON value, a JSON array or JSON Lines from a file or standard input.
func readRecords(name string) ([][]byte, error) {
	b, err := readInput(name)
	if err != nil {
		return nil, err
	}
	return parseRecords(name, b)
}

// parseRecords splits b, read from name, into records: one JSON value, a JSON array's
// elements, or JSON Lines.
func parseRecords(name string, b []byte) ([][]byte, error) {
	t := bytes.TrimSpace(b)
	switch {
	case len(t) == 0:
		return nil, fmt.Errorf("%s: empty", name)
	case t[0] == '[':
		// Split without encoding/json, whose scanner refuses records nested past 10,000 levels.
		out, err := rawjson.Elements(t, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return out, nil
	case rawjson.Valid(t):
		return [][]byte{t}, nil
	}
	var out [][]byte
	for i, line := range bytes.Split(t, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if !rawjson.Valid(line) {
			return nil, fmt.Errorf("%s: line %d is not JSON", name, i+1)
		}
		out = append(out, line)
	}
	return out, nil
}

// cmdSeal asks evidentd to seal a chain now and prints the seal.
func cmdSeal(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("evident seal", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var svc serviceFlags
	svc.register(fs)
	chain := fs.String("chain", "", "chain id — required")
	closeChain := fs.Bool("close", false, "close the chain: nothing is accepted after this seal")
	out := fs.String("o", "", "also write the transparent seal statement (COSE, receipt in header 394) to this file")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s\n\nSeals the chain's head and Merkle root into the transparency log and waits for the receipt.\n\nFlags:\n", synopsis(fs.Name()))
		fs.PrintDefaults()
	}
	if code, done := parseArgs(fs, args); done {
		return code
	}
	if code, ok := checkService(fs, *chain, 1); !ok {
		return code
	}
	if code, ok := checkArgs(fs); !ok {
		return code
	}
	c, err := svc.client()
	if err != nil {
		return usageErr(fs, "-url: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, svc.timeout)
	defer cancel()
	r, err := c.Seal(ctx, *chain, *closeChain)
	if err != nil {
		fmt.Fprintln(stderr, "evident seal:", err)
		return exitFailure
	}
	statement, err := r.TransparentStatement()
	if err != nil {
		fmt.Fprintln(stderr, "evident seal:", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "seal %d of %s: size %d, root %s, closed %v, log index %d\n", r.N, *chain, r.Seal.Size, r.Seal.Root, r.Seal.Closed, r.LogIndex)
	if *out != "" {
		if err := os.WriteFile(*out, statement, 0o644); err != nil {
			fmt.Fprintln(stderr, "evident seal:", err)
			return exitFailure
		}
	}
	return 0
}

// cmdExport downloads a bundle.
func cmdExport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("evident export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var svc serviceFlags
	svc.register(fs)
	chain := fs.String("chain", "", "chain id — required")
	task := fs.String("task", "", "export only this task's case slice (CHAP task_id)")
	logical := fs.String("logical-id", "", "export only this artefact's case slice (CHAP logical_id)")
	out := fs.String("o", "", "bundle file to write (default <chain>.evident.zip)")
	quiet := fs.Bool("q", false, "no progress on standard error")
	fs.BoolVar(quiet, "quiet", false, "same as -q")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s\n\nDownloads the offline bundle of a chain (or of one case) for evident verify.\n\nFlags:\n", synopsis(fs.Name()))
		fs.PrintDefaults()
	}
	if code, done := parseArgs(fs, args); done {
		return code
	}
	if code, ok := checkService(fs, *chain, 1); !ok {
		return code
	}
	if code, ok := checkArgs(fs); !ok {
		return code
	}
	if *task != "" && *logical != "" {
		return usageErr(fs, "-task and -logical-id name two different case slices: give one")
	}
	c, err := svc.client()
	if err != nil {
		return usageErr(fs, "-url: %v", err)
	}
	name := *out
	if name == "" {
		name = strings.NewReplacer("/", "_", ":", "_").Replace(*chain) + ".evident.zip"
	}
	ctx, cancel := context.WithTimeout(ctx, max(svc.timeout, 30*time.Minute)) // a large chain takes a while to stream
	defer cancel()
	report := &exportProgress{out: stderr, quiet: *quiet, what: "export " + *chain}
	n, err := exportTo(ctx, c, client.ExportQuery{Chains: []string{*chain}, TaskID: *task, LogicalID: *logical}, name, report)
	if err != nil {
		fmt.Fprintln(stderr, "evident export:", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "wrote %s (%d bytes); check it with: evident verify %s\n", name, n, name)
	return 0
}

// exportTo streams the bundle into a temporary file beside name and renames it into place,
// so a failed export leaves no partial bundle (and no clobbered older one) behind. The
// download's progress goes to report (entries against the service's count, else bytes),
// unless report is nil.
func exportTo(ctx context.Context, c *client.Client, q client.ExportQuery, name string, report *exportProgress) (n int64, err error) {
	f, err := os.CreateTemp(filepath.Dir(name), ".evident-export-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name()) // fails harmlessly once renamed
	if report == nil {
		report = &exportProgress{quiet: true}
	}
	report.w = f
	q.Entries = report.start
	defer func() { report.end(err) }()
	n, err = c.Export(ctx, q, report)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	if err := os.Rename(f.Name(), name); err != nil {
		return 0, err
	}
	return n, nil
}
