//go:build !unix

package journal

import (
	"errors"
	"fmt"

	"github.com/evident-log/evident/internal/durable"
)

// ErrLocked is returned by Open when another process (or Ledger) has the journal open.
var ErrLocked = errors.New("journal: in use by another process")

// lockDir creates dir; where flock is not available, nothing keeps a second process out.
func lockDir(dir string) (func() error, error) {
	if err := durable.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("journal directory: %w", err)
	}
	return func() error { return nil }, nil
}
