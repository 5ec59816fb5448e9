package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel stop the child with SIGTERM when evident dies before it
// could (SIGKILL, or SIGPIPE when its output is cut short), so no evidentd is left behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
