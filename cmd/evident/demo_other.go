//go:build !linux

package main

import "os/exec"

// dieWithParent is a no-op where the kernel offers no parent-death signal: the deferred
// shutdown of the demo still stops evidentd on every ordinary exit.
func dieWithParent(cmd *exec.Cmd) {}
