package main

import (
	"errors"
	"flag"
	"fmt"
)

// Exit codes of evident-witness: 0 after a clean stop or -help, 64 when it was started wrong
// (a flag or an environment variable), 1 when it could not run or failed.
const (
	exitFailed = 1
	exitUsage  = 64 // EX_USAGE
)

// usageError is an error in how evident-witness was started: a flag or an environment
// variable. It stops evident-witness with exitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usageErrorf formats a usageError.
func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitCode is the process exit code of run's error.
func exitCode(err error) int {
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		return exitUsage
	}
	return exitFailed
}

// helpRequested reports whether the arguments ask for help (-h, -help, --help).
func helpRequested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "--h", "-help", "--help":
			return true
		}
	}
	return false
}
