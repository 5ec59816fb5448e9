// Command evident is Evident's offline verifier and toolkit: it verifies exported bundles
// with no network (verify), and runs the whole flow end to end on loopback (demo).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/evident-log/evident/internal/buildinfo"
)

// Exit codes shared by every subcommand.
const (
	exitVerified     = 0
	exitBroken       = 1
	exitNotEvaluated = 2
	exitFailure      = 3  // could not run (I/O, service unreachable)
	exitUsage        = 64 // EX_USAGE
)

const usage = `Usage: evident <command> [flags]

Commands:
  verify BUNDLE   verify an exported bundle offline (directory or .zip); no network
  trust fetch URL download an operator's trust file (URL/.well-known/evident-trust) to pin with verify --trust
  replay BUNDLE   rebuild a CHAP chain's timeline (or one task's, --task), answer CHAP §9.3, flag impossible histories
  receipt verify  verify RFC 9942 receipts (any SCITT service's) for a statement or a transparent statement
  statement       make SCITT signed statements to register: keygen, policy, sign
  keys            generate, show, thumbprint and rotate service keys
  cop-ledger verify LEDGER --key K   verify a COP Ledger (§9.6) offline: Evident's or another COP node's
  misbehaviour check FILE --log-key K   check a proof that the log signed two histories (exit 1 when it holds)
  submit -chain C FILE...   send records (JSON, JSON array or JSON Lines) to evidentd in atomic batches
  import -chain C FILE...   take a CHAP Coordinator's audit.read dump into a chain (resumes; -describe checks its evidence_head)
  seal -chain C             seal a chain into the transparency log now and print the seal
  export -chain C [-task T] download a chain's (or one case's) offline bundle
  version         print the build: module version, VCS revision and time, Go version (also --version)
  demo            run a CHAP support triage through a local evidentd, seal, export and verify it

Exit codes (every command):
  0   verified, or the command did what was asked (help included)
  1   broken: the evidence is wrong (a check failed, a record was refused, the bundle is ambiguous,
      a proof of misbehaviour holds)
  2   not evaluated: nothing broken, but something could not be checked
  3   could not run: a file unreadable or not a bundle at all, evidentd unreachable
      or failing, an interrupted run
  64  usage: an unknown command or flag, a missing or malformed argument

Run 'evident <command> --help' (or 'evident help <command>') for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	if args[0] == "help" && len(args) > 1 {
		args = []string{args[1], "-help"}
	}
	if helpRequested(args[1:]) {
		stderr = stdout // help asked for is an answer, not an error
	}
	switch args[0] {
	case "verify":
		return cmdVerify(ctx, args[1:], stdout, stderr)
	case "replay":
		return cmdReplay(ctx, args[1:], stdout, stderr)
	case "demo":
		return cmdDemo(ctx, args[1:], stdout, stderr)
	case "submit":
		return cmdSubmit(ctx, args[1:], stdout, stderr)
	case "import":
		return cmdImport(ctx, args[1:], stdout, stderr)
	case "seal":
		return cmdSeal(ctx, args[1:], stdout, stderr)
	case "export":
		return cmdExport(ctx, args[1:], stdout, stderr)
	case "receipt":
		return cmdReceipt(ctx, args[1:], stdout, stderr)
	case "keys":
		return cmdKeys(ctx, args[1:], stdout, stderr)
	case "statement":
		return cmdStatement(ctx, args[1:], stdout, stderr)
	case "cop-ledger":
		return cmdCOPLedger(ctx, args[1:], stdout, stderr)
	case "trust":
		return cmdTrust(ctx, args[1:], stdout, stderr)
	case "misbehaviour":
		return cmdMisbehaviour(ctx, args[1:], stdout, stderr)
	case "-version", "--version", "version":
		fmt.Fprintln(stdout, buildinfo.Read().Program("evident"))
		return 0
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "evident: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
}
