package journal

import (
	"errors"
	"fmt"
	"path/filepath"

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
	unlock, err := durable.Lock(filepath.Join(dir, "LOCK"), 0o644)
	if errors.Is(err, durable.ErrLocked) {
		return nil, fmt.Errorf("%w (%s)", ErrLocked, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return unlock, nil
}
