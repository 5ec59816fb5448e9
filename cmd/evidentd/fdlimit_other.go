//go:build !unix

package main

// fileLimit reports no limit on open files where there is no RLIMIT_NOFILE to read.
func fileLimit() (uint64, bool) { return 0, false }
