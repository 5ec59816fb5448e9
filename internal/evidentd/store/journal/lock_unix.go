//go:build unix

package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/evident-log/evident/internal/durable"
)

// ErrLocked is returned by Open when another process (or Ledger) has the journal open.
var ErrLocked = errors.New("journal: in use by another process")

// lockDir takes an exclusive lock on the journal directory dir (creating it), held until
// the returned function is called or the process ends.
func lockDir(dir string) (func() error, error) {
	if err := durable.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("journal directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("journal lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (%s)", ErrLocked, dir)
		}
		return nil, fmt.Errorf("journal lock: %w", err)
	}
	return f.Close, nil
}
