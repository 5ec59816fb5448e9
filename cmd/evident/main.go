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
	"runtime/debug"
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

// defaultMemoryLimit is the soft memory limit evident runs under when GOMEMLIMIT does not set
// one: the garbage collector works harder as the heap nears it instead of letting it grow to
// twice what is live, so that verifying a chain of a million entries and writing its report
// stays within about 128 MiB (BENCHMARKS.md, "Issue 36"). A replay that needs more live
// memory still runs to the end, with more of its time spent collecting.
const defaultMemoryLimit = 100 << 20

// applyMemoryLimit sets defaultMemoryLimit unless GOMEMLIMIT (read through getenv) set a
// limit of its own, which the Go runtime has already applied.
func applyMemoryLimit(getenv func(string) string) {
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
}

func main() {
	applyMemoryLimit(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
