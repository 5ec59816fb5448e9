package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/evident-log/evident/internal/evidentd/daemon"
)

// takeBackups writes a backup of the data directory into its backups folder at each signal
// received on sig, until ctx ends (docs/operations.md, "Backup").
func takeBackups(ctx context.Context, d *daemon.Daemon, data string, sig <-chan os.Signal, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
		}
		dest := filepath.Join(data, daemon.BackupDir, time.Now().UTC().Format("20060102T150405.000Z"))
		start := time.Now()
		log.Info("backup started", "dir", dest)
		if err := d.Backup(ctx, dest); err != nil {
			log.Error("backup failed", "dir", dest, "err", err)
			continue
		}
		log.Info("backup written", "dir", dest, "took", time.Since(start).Round(time.Millisecond))
	}
}
