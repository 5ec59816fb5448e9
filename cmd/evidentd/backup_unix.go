//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// backupSignals returns the channel of the signal that asks for a backup (SIGUSR1) and the
// function that stops it.
func backupSignals() (<-chan os.Signal, func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR1)
	return c, func() { signal.Stop(c) }
}
