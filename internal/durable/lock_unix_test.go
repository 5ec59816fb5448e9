//go:build unix

package durable

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestLock: a second Lock of a locked file fails with ErrLocked, and succeeds once the first
// is released.
func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "LOCK")
	unlock, err := Lock(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(path, 0o600); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock: %v, want ErrLocked", err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	again, err := Lock(path, 0o600)
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	again()
}
