package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/evident-log/evident/client"
	"github.com/evident-log/evident/entryreceipt"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/verifier"
)

// newDemoCmd is `evident demo`.
func newDemoCmd(a *app) *cobra.Command {
	var keep, dir, evidentd string
	cmd := &cobra.Command{
		Use:   "demo [--keep DIR] [flags]",
		Short: "Run a CHAP support triage through a local evidentd, seal, export and verify it",
		Long: `Starts evidentd on loopback in a temporary directory, sends a CHAP support triage
in the reference Coordinator's wire form (ten signed calls by two humans and an agent, with a
review and an override), seals the chain into the transparency log, checks one envelope's entry receipt
with the trust file alone, exports the bundle and verifies it offline, then prints the report.

The temporary directory is removed when the demo ends, so the output names its files without
a path; with --keep DIR the data, bundle, trust file, receipt and reports stay in DIR, and the
output names them there.`,
		Example: `  evident demo
  evident demo --keep demo-out && evident verify --trust demo-out/*.trust.json demo-out/wsp_support_triage.evident.zip`,
		Args:              exactArgs(),
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	cmd.Flags().StringVar(&keep, "keep", "", "keep the working directory (data, bundle, trust file, receipt, reports) in this directory, created if needed")
	cmd.Flags().StringVar(&dir, "dir", "", "same as --keep")
	cmd.Flags().StringVar(&evidentd, "evidentd", "", "path of the evidentd binary (default: next to evident, then $PATH, then built from ./cmd/evidentd)")
	deprecatedAlias(cmd, "dir", "--keep DIR")
	cmd.MarkFlagDirname("keep")
	markFiles(cmd, "evidentd")
	cmd.RunE = a.action(func(cmd *cobra.Command, _ []string) int {
		if keep == "" {
			keep = dir
		}
		return runDemo(a.ctx, keep, evidentd, a.stdout, a.stderr)
	})
	return cmd
}

// runDemo runs the demo in keep (created if needed), or in a temporary directory removed
// when it ends, and says what remains.
func runDemo(ctx context.Context, keep, evidentd string, stdout, stderr io.Writer) int {
	work := keep
	if work != "" {
		if err := os.MkdirAll(work, 0o755); err != nil {
			fmt.Fprintln(stderr, "evident demo:", err)
			return exitFailure
		}
	} else {
		var err error
		if work, err = os.MkdirTemp("", "evident-demo-"); err != nil {
			fmt.Fprintln(stderr, "evident demo:", err)
			return exitFailure
		}
		defer os.RemoveAll(work)
	}
	code, err := demo(ctx, work, keep != "", evidentd, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "evident demo:", err)
		return exitFailure
	}
	if keep != "" {
		fmt.Fprintf(stdout, "\nEverything is kept in %s\n", work)
	} else {
		fmt.Fprintf(stdout, "\nThe demo's files were in a temporary directory, removed now; evident demo --keep DIR keeps them\n")
	}
	return code
}

// demo runs the scenario in work. kept says whether work outlives the demo: when it does
// not, the output names the demo's files without their path, which would be gone.
func demo(ctx context.Context, work string, kept bool, daemonPath string, stdout, stderr io.Writer) (int, error) {
	show := func(path string) string {
		if kept {
			return path
		}
		return filepath.Base(path)
	}
	bin, err := findEvidentd(ctx, daemonPath, work)
	if err != nil {
		return 0, err
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		return 0, err
	}
	logFile, err := os.Create(filepath.Join(work, "evidentd.log"))
	if err != nil {
		return 0, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "--data", filepath.Join(work, "data"), "--listen", addr, "--checkpoint-interval", "200ms", "--seal-interval", "0", "--seal-every", "0")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	dieWithParent(cmd)
	// The parent-death signal follows the OS thread that started the child: keep this
	// goroutine on it while starting (a thread Go keeps running afterwards).
	runtime.LockOSThread()
	err = cmd.Start()
	runtime.UnlockOSThread()
	if err != nil {
		return 0, fmt.Errorf("starting evidentd: %w", err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
	}()
	base := "http://" + addr
	c := &http.Client{Timeout: 30 * time.Second}
	where := "data in a temporary directory"
	if kept {
		where = "data in " + filepath.Join(work, "data")
	}
	fmt.Fprintf(stdout, "1. evidentd started on %s (%s)\n", base, where)
	if err := waitReady(ctx, c, base+"/readyz", 20*time.Second); err != nil {
		if !kept {
			if b, rerr := os.ReadFile(logFile.Name()); rerr == nil {
				stderr.Write(b) // the log is removed with the directory: show it now
			}
			return 0, fmt.Errorf("evidentd did not become ready (its log is above): %w", err)
		}
		return 0, fmt.Errorf("evidentd did not become ready (see %s): %w", logFile.Name(), err)
	}

	const ws = "wsp_support_triage"
	b, cast, err := chapscenario.SupportTriageReference(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(stdout, "\n2. A CHAP Coordinator streams the %d signed envelopes of workspace %s as it records them\n   (JSON-RPC, routing fields in params, sig over the canonical envelope):\n", len(b.Records()), ws)
	for _, p := range cast {
		fmt.Fprintf(stdout, "   %-34s %-12s key %s\n", p.URI, p.Role, p.Kid)
	}
	ec, err := client.New(base, client.WithHTTPClient(c))
	if err != nil {
		return 0, err
	}
	for _, rec := range b.Records() {
		// One envelope per request, as a Coordinator sends them.
		res, err := ec.Submit(ctx, ws, [][]byte{rec})
		if err != nil {
			return 0, err
		}
		var env struct {
			Method string
			Params struct{ From string }
		}
		json.Unmarshal(rec, &env)
		fmt.Fprintf(stdout, "   seq %2d  %-34s %-22s %s…\n", res.Accepted[0].Seq, env.Params.From, env.Method, res.Accepted[0].Link.String()[:23])
	}

	start := time.Now()
	seal, err := ec.Seal(ctx, ws, false)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(stdout, "\n3. Sealed: chain size %d, root %s\n   registered at log index %d, receipt after %v, checkpoint:\n", seal.Seal.Size, seal.Seal.Root, seal.LogIndex, time.Since(start).Round(time.Millisecond))
	for _, line := range strings.Split(strings.TrimSpace(seal.Checkpoint), "\n") {
		fmt.Fprintf(stdout, "   | %s\n", line)
	}

	bundlePath := filepath.Join(work, ws+".evident.zip")
	if _, err := exportTo(ctx, ec, client.ExportQuery{Chains: []string{ws}}, bundlePath, nil); err != nil {
		return 0, err
	}
	fmt.Fprintf(stdout, "\n4. Exported the offline bundle: %s\n", show(bundlePath))

	// The regulator pins the operator's published trust file; without it nothing verifies.
	tf, raw, err := fetchTrustFile(ctx, base+trustPath, 30*time.Second)
	if err != nil {
		return 0, err
	}
	trustFile := filepath.Join(work, trustFileName(tf.Origin))
	if err := os.WriteFile(trustFile, raw, 0o644); err != nil {
		return 0, err
	}
	fmt.Fprintf(stdout, "\n5. Fetched the operator's trust file (evident trust fetch %s), saved to %s:\n", base, show(trustFile))
	for _, line := range tf.Summary() {
		fmt.Fprintf(stdout, "   %s\n", line)
	}

	// One envelope's own receipt: what a CHAP Coordinator's audit.submit_to_scitt returns
	// through the adapters (integrations/), checked with the trust file alone.
	const receiptSeq = 4
	er, err := ec.EntryReceiptObject(ctx, ws, receiptSeq, "")
	if err != nil {
		return 0, err
	}
	erJSON, err := er.Marshal()
	if err != nil {
		return 0, err
	}
	receiptFile := filepath.Join(work, fmt.Sprintf("receipt-seq%d.json", receiptSeq))
	if err := os.WriteFile(receiptFile, erJSON, 0o644); err != nil {
		return 0, err
	}
	trust, err := entryreceipt.TrustFrom(tf)
	if err != nil {
		return 0, err
	}
	v, err := entryreceipt.Verify(er, trust)
	if err != nil {
		return 0, fmt.Errorf("the entry receipt of seq %d does not verify: %w", receiptSeq, err)
	}
	fmt.Fprintf(stdout, "\n6. One envelope's own receipt, what audit.submit_to_scitt hands a participant through the CHAP\n   adapters (GET /v1/chains/%s/entries/%d/entry-receipt), saved to %s and checked with\n   the trust file alone (evident receipt verify --trust %s %s):\n", ws, receiptSeq, show(receiptFile), filepath.Base(trustFile), filepath.Base(receiptFile))
	fmt.Fprintf(stdout, "   VERIFIED entry %d (link %s…) under seal root %s… (size %d), log entry %d of checkpoint size %d\n",
		v.Seq, v.Link.String()[:23], v.Seal.Root[:23], v.Seal.Size, v.LogIndex, v.TreeSize)

	fmt.Fprintf(stdout, "\n7. Offline verification (what a regulator runs: evident verify --trust %s %s):\n\n", filepath.Base(trustFile), filepath.Base(bundlePath))
	rep, r, code := verifyBundle(ctx, "evident demo", bundlePath, true, stderr, func(o *verifier.Options) { o.Trust = tf })
	if rep == nil {
		return code, nil
	}
	if r != nil {
		r.Close()
	}
	rep.Bundle = show(bundlePath)
	if err := rep.WriteText(stdout); err != nil {
		return 0, err
	}
	jf, err := os.Create(filepath.Join(work, "report.json"))
	if err == nil {
		rep.WriteJSON(jf)
		jf.Close()
	}
	return code, nil
}

// findEvidentd locates the evidentd binary: the flag, next to this executable, $PATH, or
// built from the source tree in the current directory.
func findEvidentd(ctx context.Context, flagPath, work string) (string, error) {
	if flagPath != "" {
		return flagPath, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "evidentd")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath("evidentd"); err == nil {
		return p, nil
	}
	if _, err := os.Stat(filepath.Join("cmd", "evidentd", "main.go")); err == nil {
		if goBin, err := exec.LookPath("go"); err == nil {
			out := filepath.Join(work, "evidentd")
			b := exec.CommandContext(ctx, goBin, "build", "-o", out, "./cmd/evidentd")
			b.Stderr = os.Stderr
			if err := b.Run(); err != nil {
				return "", fmt.Errorf("building evidentd: %w", err)
			}
			return out, nil
		}
	}
	return "", errors.New("evidentd not found: install it (go install ./cmd/...) or pass --evidentd PATH")
}

func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func waitReady(ctx context.Context, c *http.Client, url string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("status %s", resp.Status)
			}
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
