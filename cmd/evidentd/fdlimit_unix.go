//go:build unix

package main

import "syscall"

// fileLimit is the process's limit on open file descriptors (RLIMIT_NOFILE, the soft limit,
// which the Go runtime raises to the hard one at start), and whether it could be read.
func fileLimit() (uint64, bool) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, false
	}
	return l.Cur, true
}
