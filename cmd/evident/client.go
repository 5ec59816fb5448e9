package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/client"
	"github.com/evident-log/evident/internal/rawjson"
)

// serviceFlags are the flags of the commands that talk to an evidentd.
type serviceFlags struct {
	url     string
	token   string
	timeout time.Duration
	flags   *pflag.FlagSet
}

// register declares --url, --token and --timeout. Their environment variables are read when
// the command runs (fromEnv), so that the help and the generated reference never show a token.
func (s *serviceFlags) register(f *pflag.FlagSet) {
	s.flags = f
	f.StringVar(&s.url, "url", "http://127.0.0.1:8080", "evidentd base URL (env EVIDENT_URL)")
	f.StringVar(&s.token, "token", "", "bearer token for writes (env EVIDENT_TOKEN); none: evidentd accepts writes from loopback only")
	f.DurationVar(&s.timeout, "timeout", 2*time.Minute, "give up on one request after this long")
}

// fromEnv takes EVIDENT_URL and EVIDENT_TOKEN for the flags not given on the command line.
func (s *serviceFlags) fromEnv() {
	if !s.flags.Changed("url") {
		s.url = envOr("EVIDENT_URL", s.url)
	}
	if !s.flags.Changed("token") {
		s.token = envOr("EVIDENT_TOKEN", s.token)
	}
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
	s.fromEnv()
	return client.New(s.url, client.WithToken(s.token), client.WithHTTPClient(&http.Client{}))
}

// newSubmitCmd is `evident submit --chain C FILE...`.
func newSubmitCmd(a *app) *cobra.Command {
	var (
		svc            serviceFlags
		format         formatFlag
		chain, profile string
		batch          int
		quiet          bool
	)
	cmd := &cobra.Command{
		Use:   "submit --chain C [flags] FILE...",
		Short: "Send records (JSON, JSON array or JSON Lines) to evidentd in atomic batches",
		Long: `Sends records to evidentd: each FILE (or - for standard input) holds one JSON record, a JSON
array of records, or JSON Lines. Records go in order, in atomic batches; the first refusal stops
the run and names the record. Records the chain already holds at their position (a retried
submission) are counted as already logged, not as new.`,
		Example: `  evident submit --chain wsp_acme records.jsonl
  evident submit --url https://evident.example --chain wsp_acme --format json - < records.json`,
		Args:              minArgs("missing FILE argument (records to send; - for standard input)"),
		ValidArgsFunction: fileArgs,
	}
	f := cmd.Flags()
	svc.register(f)
	f.StringVar(&chain, "chain", "", "chain id (CHAP: the workspace) — required")
	f.StringVar(&profile, "profile", "", "profile of a new chain (default: evidentd's, chap/0.3)")
	f.IntVar(&batch, "batch", 1000, "records per request (each request is atomic)")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress on standard error")
	addFormat(cmd, &format)
	cmd.RunE = a.action(func(cmd *cobra.Command, args []string) int {
		return runSubmit(a.ctx, cmd, &svc, &format, chain, profile, batch, quiet, args, a.stdout, a.stderr)
	})
	return cmd
}

// submitOutput is what `evident submit --format json` writes.
type submitOutput struct {
	Chain string `json:"chain"`
	// Records is how many records were read and sent; New of them were appended to the chain,
	// AlreadyLogged were already in it at their position (a retried submission: nothing written).
	Records       int    `json:"records"`
	New           int    `json:"new"`
	AlreadyLogged int    `json:"already_logged"`
	Size          uint64 `json:"size"` // entries in the chain after the last batch
	Head          string `json:"head"`
}

// runSubmit reads the records of the files and sends them to chain.
func runSubmit(ctx context.Context, cmd *cobra.Command, svc *serviceFlags, format *formatFlag, chain, profile string, batch int, quiet bool, files []string, stdout, stderr io.Writer) int {
	if code, ok := format.check(cmd); !ok {
		return code
	}
	if code, ok := checkService(cmd, chain, batch); !ok {
		return code
	}
	var records [][]byte
	for _, name := range files {
		recs, err := readRecords(name)
		if err != nil {
			fmt.Fprintln(stderr, "evident submit:", err)
			return exitFailure
		}
		records = append(records, recs...)
	}
	c, err := svc.client()
	if err != nil {
		return usageErr(cmd, "-url: %v", err)
	}
	var p *progress
	if len(records) > 0 {
		p = newProgress(stderr, quiet, "submit "+chain, "records", uint64(len(records)))
	}
	res, err := svc.sendBatches(ctx, c, chain, profile, records, batch, func(sent int) { p.Update(uint64(sent)) })
	sent := res.sent
	if err != nil {
		p.Stop()
		code := submitExit(err)
		fmt.Fprintf(stderr, "evident submit: records %d..%d: %v\n", sent, min(sent+batch, len(records))-1, err)
		if code == exitBroken {
			fmt.Fprintf(stderr, "%d record(s) accepted before the refusal (%d new, %d already logged)\n", sent, sent-res.duplicates, res.duplicates)
		} else {
			fmt.Fprintf(stderr, "%d record(s) accepted before the error (%d new, %d already logged); nothing of this batch was refused as evidence\n", sent, sent-res.duplicates, res.duplicates)
		}
		return code
	}
	p.Done(uint64(sent))
	last := res.last
	if last == nil {
		last = &api.IngestResponse{} // nothing to send (an empty array)
	}
	out := submitOutput{Chain: chain, Records: sent, New: sent - res.duplicates, AlreadyLogged: res.duplicates, Size: last.Size, Head: last.Head.String()}
	if format.json() {
		err = writeJSON(stdout, out)
	} else {
		_, err = fmt.Fprintf(stdout, "%d record(s) accepted into %s: %d new, %d already logged; size %d, head %s\n", out.Records, chain, out.New, out.AlreadyLogged, out.Size, out.Head)
	}
	if err != nil {
		fmt.Fprintln(stderr, "evident submit:", err)
		return exitFailure
	}
	return 0
}

// checkService checks the flags every command that writes to a chain needs: -chain, and
// a -batch of at least one record.
func checkService(cmd *cobra.Command, chain string, batch int) (int, bool) {
	switch {
	case chain == "":
		return usageErr(cmd, "missing -chain (the chain id; CHAP: the workspace)"), false
	case batch < 1:
		return usageErr(cmd, "-batch must be at least 1, not %d", batch), false
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

// batchResult is how far sendBatches got: records accepted (sent), how many of them the
// chain already held at their position (duplicates: evidentd wrote nothing for them), and
// the answer to the last accepted batch (nil when none was sent).
type batchResult struct {
	sent, duplicates int
	last             *api.IngestResponse
}

// sendBatches submits records to chain in atomic batches of size batch, each request bounded
// by -timeout, reporting progress (records sent) after each when progress is set. It returns
// how far it got and the refusal that stopped it.
func (s *serviceFlags) sendBatches(ctx context.Context, c *client.Client, chain, profile string, records [][]byte, batch int, progress func(sent int)) (batchResult, error) {
	var r batchResult
	for r.sent < len(records) {
		end := min(r.sent+batch, len(records))
		err := s.call(ctx, func(ctx context.Context) error {
			res, err := c.Submit(ctx, chain, records[r.sent:end], client.WithProfile(profile))
			if err == nil {
				r.last = res
				for _, e := range res.Accepted {
					if e.Duplicate {
						r.duplicates++
					}
				}
			}
			return err
		})
		if err != nil {
			return r, err
		}
		r.sent = end
		if progress != nil {
			progress(r.sent)
		}
	}
	return r, nil
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

// newSealCmd is `evident seal --chain C`.
func newSealCmd(a *app) *cobra.Command {
	var (
		svc        serviceFlags
		format     formatFlag
		chain, out string
		closeChain bool
	)
	cmd := &cobra.Command{
		Use:   "seal --chain C [--close] [-o FILE] [flags]",
		Short: "Seal a chain into the transparency log now and print the seal",
		Long:  "Seals the chain's head and Merkle root into the transparency log and waits for the receipt.",
		Example: `  evident seal --chain wsp_acme
  evident seal --chain wsp_acme --close -o seal.cose --format json`,
		Args:              exactArgs(),
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	f := cmd.Flags()
	svc.register(f)
	f.StringVar(&chain, "chain", "", "chain id — required")
	f.BoolVar(&closeChain, "close", false, "close the chain: nothing is accepted after this seal")
	f.StringVarP(&out, "output", "o", "", "also write the transparent seal statement (COSE, receipt in header 394) to this file")
	addFormat(cmd, &format)
	markFiles(cmd, "output")
	cmd.RunE = a.action(func(cmd *cobra.Command, _ []string) int {
		return runSeal(a.ctx, cmd, &svc, &format, chain, closeChain, out, a.stdout, a.stderr)
	})
	return cmd
}

// sealOutput is what `evident seal --format json` writes.
type sealOutput struct {
	Chain    string `json:"chain"`
	Seal     uint64 `json:"seal"` // the seal's ordinal in the chain, from 0
	Size     uint64 `json:"size"`
	Head     string `json:"head"`
	Root     string `json:"root"`
	Closed   bool   `json:"closed"`
	SealedAt string `json:"sealed_at"`
	LogIndex uint64 `json:"log_index"`
	// StatementFile is where the transparent seal statement was written (-o), "" if nowhere.
	StatementFile string `json:"statement_file"`
}

// runSeal seals chain and reports the seal.
func runSeal(ctx context.Context, cmd *cobra.Command, svc *serviceFlags, format *formatFlag, chain string, closeChain bool, out string, stdout, stderr io.Writer) int {
	if code, ok := format.check(cmd); !ok {
		return code
	}
	if code, ok := checkService(cmd, chain, 1); !ok {
		return code
	}
	c, err := svc.client()
	if err != nil {
		return usageErr(cmd, "-url: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, svc.timeout)
	defer cancel()
	r, err := c.Seal(ctx, chain, closeChain)
	if err != nil {
		fmt.Fprintln(stderr, "evident seal:", err)
		return exitFailure
	}
	statement, err := r.TransparentStatement()
	if err != nil {
		fmt.Fprintln(stderr, "evident seal:", err)
		return exitFailure
	}
	if out != "" {
		if err := os.WriteFile(out, statement, 0o644); err != nil {
			fmt.Fprintln(stderr, "evident seal: writing the seal statement:", err)
			return exitFailure
		}
	}
	if format.json() {
		err = writeJSON(stdout, sealOutput{Chain: chain, Seal: r.N, Size: r.Seal.Size, Head: r.Seal.Head.String(), Root: r.Seal.Root,
			Closed: r.Seal.Closed, SealedAt: r.Seal.SealedAt, LogIndex: r.LogIndex, StatementFile: out})
	} else {
		_, err = fmt.Fprintf(stdout, "seal %d of %s: size %d, root %s, closed %v, log index %d\n", r.N, chain, r.Seal.Size, r.Seal.Root, r.Seal.Closed, r.LogIndex)
	}
	if err != nil {
		fmt.Fprintln(stderr, "evident seal:", err)
		return exitFailure
	}
	return 0
}

// newExportCmd is `evident export --chain C`.
func newExportCmd(a *app) *cobra.Command {
	var (
		svc                       serviceFlags
		format                    formatFlag
		chain, task, logical, out string
		quiet                     bool
	)
	cmd := &cobra.Command{
		Use:   "export --chain C [--task T | --logical-id L] [-o FILE] [flags]",
		Short: "Download a chain's (or one case's) offline bundle",
		Long: `Downloads the offline bundle of a chain (or of one case) for evident verify. The bundle is
written beside its final name and renamed into place: a failed export leaves nothing behind.`,
		Example: `  evident export --chain wsp_acme -o acme.evident.zip
  evident export --chain wsp_acme --task tsk_42 --format json`,
		Args:              exactArgs(),
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	f := cmd.Flags()
	svc.register(f)
	f.StringVar(&chain, "chain", "", "chain id — required")
	f.StringVar(&task, "task", "", "export only this task's case slice (CHAP task_id)")
	f.StringVar(&logical, "logical-id", "", "export only this artefact's case slice (CHAP logical_id)")
	f.StringVarP(&out, "output", "o", "", "bundle file to write (default <chain>.evident.zip)")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress on standard error")
	addFormat(cmd, &format)
	markFiles(cmd, "output")
	cmd.RunE = a.action(func(cmd *cobra.Command, _ []string) int {
		return runExport(a.ctx, cmd, &svc, &format, chain, task, logical, out, quiet, a.stdout, a.stderr)
	})
	return cmd
}

// exportOutput is what `evident export --format json` writes.
type exportOutput struct {
	Chain     string `json:"chain"`
	Task      string `json:"task,omitempty"`
	LogicalID string `json:"logical_id,omitempty"`
	File      string `json:"file"`
	Bytes     int64  `json:"bytes"`
}

// runExport downloads the bundle of chain (or of one of its cases) into a file.
func runExport(ctx context.Context, cmd *cobra.Command, svc *serviceFlags, format *formatFlag, chain, task, logical, out string, quiet bool, stdout, stderr io.Writer) int {
	if code, ok := format.check(cmd); !ok {
		return code
	}
	if code, ok := checkService(cmd, chain, 1); !ok {
		return code
	}
	if task != "" && logical != "" {
		return usageErr(cmd, "-task and -logical-id name two different case slices: give one")
	}
	c, err := svc.client()
	if err != nil {
		return usageErr(cmd, "-url: %v", err)
	}
	name := out
	if name == "" {
		name = strings.NewReplacer("/", "_", ":", "_").Replace(chain) + ".evident.zip"
	}
	ctx, cancel := context.WithTimeout(ctx, max(svc.timeout, 30*time.Minute)) // a large chain takes a while to stream
	defer cancel()
	report := &exportProgress{out: stderr, quiet: quiet, what: "export " + chain}
	n, err := exportTo(ctx, c, client.ExportQuery{Chains: []string{chain}, TaskID: task, LogicalID: logical}, name, report)
	if err != nil {
		fmt.Fprintln(stderr, "evident export:", err)
		return exitFailure
	}
	if format.json() {
		err = writeJSON(stdout, exportOutput{Chain: chain, Task: task, LogicalID: logical, File: name, Bytes: n})
	} else {
		_, err = fmt.Fprintf(stdout, "wrote %s (%d bytes); check it with: evident verify %s\n", name, n, name)
	}
	if err != nil {
		fmt.Fprintln(stderr, "evident export:", err)
		return exitFailure
	}
	return 0
}

// exportTo streams the bundle into a temporary file beside name and renames it into place,
// so a failed export leaves no partial bundle (and no clobbered older one) behind. The
// download's progress goes to report (entries against the service's count, else bytes),
// unless report is nil.
//
// A directory that does not exist is said so plainly, before anything is downloaded.
func exportTo(ctx context.Context, c *client.Client, q client.ExportQuery, name string, report *exportProgress) (n int64, err error) {
	dir := filepath.Dir(name)
	switch st, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return 0, fmt.Errorf("cannot write %s: the directory %s does not exist", name, dir)
	case err != nil:
		return 0, fmt.Errorf("cannot write %s: %w", name, err)
	case !st.IsDir():
		return 0, fmt.Errorf("cannot write %s: %s is not a directory", name, dir)
	}
	f, err := os.CreateTemp(dir, ".evident-export-*")
	if err != nil {
		return 0, fmt.Errorf("cannot write %s: %w", name, err)
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
		return 0, fmt.Errorf("cannot write %s: %w", name, err)
	}
	return n, nil
}
