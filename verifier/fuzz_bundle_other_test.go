//go:build !unix

package verifier

import "errors"

const nonblock = 0

// mkfifo is not supported here: FuzzVerifyBundleDir skips 'p' records.
func mkfifo(string) error { return errors.New("no named pipes on this system") }
