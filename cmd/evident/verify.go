package main

import (
	"context"
	"crypto"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/misbehaviour"
	"github.com/evident-log/evident/trustfile"
	"github.com/evident-log/evident/verifier"
	"github.com/evident-log/evident/verifier/htmlreport"
)

// defaultStoryMaxEntries is the largest chain whose story evident verify replays for its
// text and JSON reports by default: the replay reads the chain twice more and keeps its tasks
// (BENCHMARKS.md: at 50,000 entries verify peaks well within its 128 MiB target; replaying a
// million would pass it).
const defaultStoryMaxEntries = 50000

// newVerifyCmd is `evident verify BUNDLE`.
func newVerifyCmd(a *app) *cobra.Command {
	var (
		format             formatFlag
		output, trustFile  string
		issuerKeys, misDir string
		quiet, requirePQ   bool
		storyMax           uint64
		maxEntries         int
		extra              checkpointFiles
		maxAge             time.Duration
		logKeys            []string
		limits             recordLimits
		htmlDir            string
	)
	cmd := &cobra.Command{
		Use:   "verify [flags] BUNDLE",
		Short: "Verify an exported bundle offline (directory or .zip); no network",
		Long: `Verifies an Evident bundle (directory or .zip) offline: chain replay, signatures with
key history, seals and their lineage, receipts, checkpoint signatures. Never uses the network.
Pin the operator's keys (--trust FILE from evident trust fetch URL, or --log-key and --issuer-keys):
without a pin the verdict is at best not evaluated (exit 2).`,
		Example: `  evident verify --trust operator.trust.json case.evident.zip
  evident verify --format json -q case.evident.zip > report.json
  evident verify --format html -o report.html --trust operator.trust.json case.evident.zip`,
		Args:              exactArgs("BUNDLE"),
		ValidArgsFunction: fileArgs,
	}
	f := cmd.Flags()
	addFormat(cmd, &format, "text", "json", "html")
	f.Lookup("format").Usage = "report format: text, json or html (one self-contained file with the CHAP timeline)"
	f.StringVarP(&output, "output", "o", "", "write the report to this file instead of standard output")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress, even on a terminal")
	f.Uint64Var(&storyMax, "story-max-entries", defaultStoryMaxEntries, "text and json: replay the story (CHAP replay findings) of chains of at most this many entries; a larger chain's story is reported not evaluated (evident replay and --format html replay every chain; 0: no bound)")
	f.StringVar(&htmlDir, "html-dir", "", "write the HTML report as a folder: DIR/index.html (the page --format html writes) and every entry and task on linked pages (implies --format html)")
	f.IntVar(&maxEntries, "max-entries", htmlreport.DefaultMaxEntries, "html: timeline rows (and task sections) shown per chain; refused, broken and flagged entries are always shown (0: all)")
	f.Var(&extra, "checkpoint", "an extra checkpoint gathered elsewhere to cross-check: a checkpoint as served (a witness's /<hex sha256(origin)>/checkpoint, evidentd's /log/checkpoint), one from another bundle, a tlog-witness add-checkpoint body with its proof, or a proof of misbehaviour, a witness's /<hex sha256(origin)>/forks answer or an evidentd witness refusal (their checkpoints and proofs); repeatable")
	f.DurationVar(&maxAge, "witness-max-age", 0, "count only witness cosignatures at most this old toward the quorum (0: any age)")
	f.StringArrayVar(&logKeys, "log-key", nil, "pin the log's checkpoint keys: an Ed25519 or ML-DSA-44 signed-note vkey, a file holding vkeys (keys/log.vkey, GET /log/vkey, GET /log/mldsa.vkey) or a trust file (its log keys); repeatable")
	f.StringVar(&trustFile, "trust", "", "pin the operator's trust file (evident trust fetch URL saves it): log keys, service keys and witness policy; without any pin the verdict is at best not_evaluated")
	f.StringVar(&issuerKeys, "issuer-keys", "", "pin the service's statement and receipt keys: a COSE_KeySet (GET /.well-known/scitt-keys), a COSE_Key or a PEM public key")
	f.StringVar(&misDir, "misbehaviour-dir", ".", "when the log is found to have signed two histories (a fork, or an inconsistent consistency proof), write each proof of misbehaviour into this directory as misbehaviour-<origin id>-<size1>-<size2>.json, never over another file; \"\": do not write them")
	limits.register(f)
	f.BoolVar(&requirePQ, "require-pq", false, "require post-quantum signatures: checkpoints without the log's ML-DSA-44 signature, and witness quorums not met by ML-DSA-44 cosignatures alone, are not evaluated (an invalid ML-DSA-44 signature is broken either way)")
	markFiles(cmd, "output", "checkpoint", "trust", "issuer-keys", "log-key")
	cmd.MarkFlagDirname("misbehaviour-dir")
	cmd.MarkFlagDirname("html-dir")
	cmd.RunE = a.action(func(cmd *cobra.Command, args []string) int {
		return runVerify(a.ctx, cmd, args[0], verifyFlags{format: format.value, output: output, trustFile: trustFile, issuerKeys: issuerKeys,
			misDir: misDir, quiet: quiet, requirePQ: requirePQ, storyMax: storyMax, maxEntries: maxEntries, extra: extra, maxAge: maxAge,
			logKeys: logKeys, limits: limits, htmlDir: htmlDir}, a.stdout, a.stderr)
	})
	return cmd
}

// verifyFlags are the flags of evident verify.
type verifyFlags struct {
	format, output, trustFile, issuerKeys, misDir string
	quiet, requirePQ                              bool
	storyMax                                      uint64
	maxEntries                                    int
	extra                                         checkpointFiles
	maxAge                                        time.Duration
	logKeys                                       []string
	limits                                        recordLimits
	htmlDir                                       string
}

// runVerify verifies the bundle at path and writes the report.
func runVerify(ctx context.Context, cmd *cobra.Command, path string, fl verifyFlags, stdout, stderr io.Writer) int {
	format, output, quiet := &fl.format, &fl.output, &fl.quiet
	trustFile, issuerKeys, misDir := &fl.trustFile, &fl.issuerKeys, &fl.misDir
	storyMax, maxEntries, maxAge, requirePQ := &fl.storyMax, &fl.maxEntries, &fl.maxAge, &fl.requirePQ
	extra, logKeys, limits := fl.extra, fl.logKeys, fl.limits
	if fl.htmlDir != "" {
		if *output != "" {
			return usageErr(cmd, "--html-dir writes DIR/index.html and its pages; -o is not taken with it")
		}
		*format = "html"
	}
	if *format != "text" && *format != "json" && *format != "html" {
		return usageErr(cmd, "-format must be text, json or html, not %q", *format)
	}
	if *maxEntries < 0 {
		return usageErr(cmd, "-max-entries must be 0 (all) or more, not %d", *maxEntries)
	}
	lim, code, ok := limits.get(cmd)
	if !ok {
		return code
	}
	var issuers []crypto.PublicKey
	if *issuerKeys != "" {
		keys, err := readKeys(*issuerKeys)
		if err != nil {
			fmt.Fprintln(stderr, "evident verify: -issuer-keys:", err)
			return exitUsage
		}
		for _, k := range keys {
			issuers = append(issuers, k.Public)
		}
	}
	pinnedLog, err := readVKeys(logKeys)
	if err != nil {
		fmt.Fprintln(stderr, "evident verify: -log-key:", err)
		return exitUsage
	}
	var trust *trustfile.File
	if *trustFile != "" {
		if trust, err = readTrustFile(*trustFile); err != nil {
			fmt.Fprintln(stderr, "evident verify: --trust:", err)
			return exitUsage
		}
	}
	rep, r, code := verifyBundle(ctx, "evident verify", path, *quiet, stderr, func(o *verifier.Options) {
		o.Checkpoints, o.WitnessMaxAge, o.RequirePQ = extra.list, *maxAge, *requirePQ
		o.TrustedLogKeys, o.TrustedIssuers, o.Trust = pinnedLog, issuers, trust
		o.Limits = lim
	})
	if rep == nil {
		return code
	}
	if r != nil {
		defer r.Close()
	}
	out := stdout
	if *output != "" {
		f, err := os.Create(*output)
		if err != nil {
			fmt.Fprintln(stderr, "evident verify:", err)
			return exitFailure
		}
		defer f.Close()
		out = f
	}
	if r != nil && *format != "html" {
		// The story's findings beside the integrity verdict (writeHTML replays for its timeline).
		if _, err := replayStories(ctx, rep, r, storyOptions{lim: lim, storyOnly: true, maxEntries: *storyMax}); err != nil {
			fmt.Fprintln(stderr, "evident verify:", err)
			return exitFailure
		}
	}
	switch *format {
	case "html":
		err = htmlreport.WriteBundle(ctx, out, rep, r, htmlreport.BundleOptions{MaxEntries: *maxEntries, Dir: fl.htmlDir, Limits: lim})
	case "json":
		err = rep.WriteJSON(out)
	default:
		err = rep.WriteText(out)
	}
	if err != nil {
		fmt.Fprintln(stderr, "evident verify: writing report:", err)
		return exitFailure
	}
	if *misDir != "" {
		// The verdict stands whether or not the proofs could be written: a failure to write
		// them is a warning, never an exit code that hides a broken log.
		if err := writeProofs(*misDir, rep.Misbehaviour, logKeyHint(logKeys), stderr); err != nil {
			fmt.Fprintf(stderr, "evident verify: could not write the proof of misbehaviour: %v; the report carries it in JSON (--format json)\n", err)
		}
	}
	return rep.ExitCode()
}

// verifyBundle opens and verifies a bundle, showing progress on a terminal. It returns the
// open reader, which the caller closes, so that whatever it shows besides the report (the
// replay, the HTML timeline) reads the very bytes that were verified. A bundle refused at
// open (ambiguous, or beyond a limit) gets its report and a nil reader: nothing else may read it.
// who names the command in its error messages ("evident replay").
func verifyBundle(ctx context.Context, who, path string, quiet bool, stderr io.Writer, opts ...func(*verifier.Options)) (*verifier.Report, *bundle.Reader, int) {
	var o verifier.Options
	for _, f := range opts {
		f(&o)
	}
	r, err := bundle.Open(path)
	if err != nil {
		if rep := verifier.RefusedReport(err, o); rep != nil {
			rep.Bundle = path
			return rep, nil, rep.ExitCode()
		}
		fmt.Fprintf(stderr, "%s: %v\n", who, err)
		return nil, nil, exitFailure // unreadable, or not a bundle at all (bundle.ErrFormat)
	}
	if !quiet && isTerminal(stderr) {
		o.Progress = progressPrinter(stderr)
	}
	rep, err := verifier.Verify(ctx, r, o)
	if o.Progress != nil {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if err != nil {
		r.Close()
		fmt.Fprintf(stderr, "%s: %v\n", who, err)
		return nil, nil, exitFailure
	}
	rep.Bundle = path
	return rep, r, rep.ExitCode()
}

// checkpointFiles is the repeatable --checkpoint flag: each file is read when the flag is parsed.
type checkpointFiles struct{ list []verifier.ExtraCheckpoint }

func (c *checkpointFiles) String() string { return "" }

// Type names the flag's value in the help.
func (c *checkpointFiles) Type() string { return "file" }

func (c *checkpointFiles) Set(name string) error {
	b, err := readAtMost(name, misbehaviour.MaxSize)
	if err != nil {
		return err
	}
	if len(b) > misbehaviour.MaxSize {
		return fmt.Errorf("%s: over %d bytes, neither a checkpoint nor proofs of misbehaviour", name, misbehaviour.MaxSize)
	}
	c.list = append(c.list, verifier.ExtraCheckpoint{Name: name, Data: b})
	return nil
}

// readAtMost reads a file, but no more than max+1 bytes of it, so that a file (or a pipe or
// device) larger than max is known to be so without reading it whole.
func readAtMost(name string, max int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return b, nil
}

// markFiles makes the shell complete the named flags' values with file names.
func markFiles(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		cmd.MarkFlagFilename(n)
	}
}
