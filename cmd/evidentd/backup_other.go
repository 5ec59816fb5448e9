//go:build !unix

package main

import "os"

// backupSignals returns no channel: there is no SIGUSR1 here.
func backupSignals() (<-chan os.Signal, func()) { return nil, func() {} }
