package daemon

import (
	"context"
	"log/slog"
)

// migrateLegacy is filled in with the legacy reader.
func migrateLegacy(ctx context.Context, data, dir string, log *slog.Logger) error { return nil }
