//go:build !unix

package durable

import (
	"fmt"
	"os"
)

// Lock creates the file at path (mode perm). Where flock is not available, nothing keeps a
// second process out: the returned function only closes the file.
func Lock(path string, perm os.FileMode) (unlock func() error, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, perm)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f.Close, nil
}
