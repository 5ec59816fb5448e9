//go:build unix

package verifier

import "syscall"

// nonblock opens a named pipe without waiting for the other end.
const nonblock = syscall.O_NONBLOCK

// mkfifo makes a named pipe (FuzzVerifyBundleDir's 'p' records).
func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }
