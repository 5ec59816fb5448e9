package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/evident-log/evident/internal/durable"
	"github.com/evident-log/evident/internal/evidentd/store/embedded"
)

// BackupDir is the folder of the data directory that backups taken while evidentd runs go
// into (evidentd writes one on SIGUSR1).
const BackupDir = "backups"

// ErrNoBackup is returned by Backup when the daemon's store is not the embedded one: the
// distributed mode's database is backed up by the database's own tools.
var ErrNoBackup = errors.New("backups are taken of the embedded store only; back up the distributed mode's database with its own tools")

// Backup writes a consistent copy of the data directory into dest, which must not exist,
// while the daemon goes on serving: first a checkpoint of the ledger store as of now (every
// write acknowledged before the call), then the keys, the transparency log and the other
// files, which only grow or are replaced whole, so that the copy's log holds at least every
// seal and registration the copy's store names. It is written into dest+".partial" and
// renamed to dest once whole and synced. Restore by starting evidentd on a copy of dest.
func (d *Daemon) Backup(ctx context.Context, dest string) error {
	st, ok := d.store.(*embedded.Store)
	if !ok {
		return ErrNoBackup
	}
	if _, err := os.Stat(dest); err == nil {
		return fmt.Errorf("backup: %s exists", dest)
	}
	partial := dest + ".partial"
	if err := os.RemoveAll(partial); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := os.MkdirAll(partial, 0o700); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	err := st.Checkpoint(ctx, filepath.Join(partial, embedded.Dir))
	if err == nil {
		err = copyData(ctx, d.cfg.Data, partial)
	}
	if err != nil {
		os.RemoveAll(partial) // a failed backup leaves nothing behind
		return fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(partial, dest); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := durable.SyncDir(filepath.Dir(dest)); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}

// copyData copies the files of the data directory src into dst, but for the ledger store
// (copied by its checkpoint), backups, the old store's files and lock files; a file that
// vanishes while it is copied (a temporary file renamed into place) is skipped.
func copyData(ctx context.Context, src, dst string) error {
	skip := map[string]bool{embedded.Dir: true, BackupDir: true, LegacyDir: true, embedded.Dir + ".migrating": true}
	var dirs []string
	err := filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if skip[rel] {
			return filepath.SkipDir
		}
		name := e.Name()
		switch {
		case e.IsDir():
			dirs = append(dirs, filepath.Join(dst, rel))
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		case !e.Type().IsRegular(), durable.IsTemp(name), strings.HasSuffix(name, ".lock"), name == "LOCK":
			return nil
		}
		return copyFile(path, filepath.Join(dst, rel))
	})
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		if err := durable.SyncDir(dir); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies the regular file src to dst, with its mode, and syncs it; a src that no
// longer exists is skipped.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return errors.Join(out.Sync(), out.Close())
}
