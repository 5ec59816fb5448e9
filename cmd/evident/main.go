// Command evident is Evident's offline verifier and toolkit: it verifies exported bundles
// with no network (verify), and runs the whole flow end to end on loopback (demo).
//
// The commands are built with cobra (cli.go): typed flags, shell completion (evident
// completion bash|zsh|fish) and a generated command reference (docs/cli/).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes shared by every subcommand.
const (
	exitVerified     = 0
	exitBroken       = 1
	exitNotEvaluated = 2
	exitFailure      = 3  // could not run (I/O, service unreachable)
	exitUsage        = 64 // EX_USAGE
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
