// Package wait pauses a goroutine for a while unless its context ends first: the one
// sleep of retry loops and polls across the module.
package wait

import (
	"context"
	"time"
)

// Sleep waits d, or returns ctx's error if ctx ends first. A d of zero or less returns at
// once (with ctx's error if it has ended).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
