// Package durable writes files so that a crash (kill -9, power loss) leaves either the old
// content or the new, never a mix, and never loses what was reported written: the data goes
// to a temporary file in the target's directory, is fsynced, is renamed (or linked) into
// place, and the directory is fsynced. Temporary files are named ".tmp-<name>-*", so a
// reader that lists the directory can skip or remove what a crash left behind.
package durable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// TempPrefix starts the name of every temporary file this package makes.
const TempPrefix = ".tmp-"

// IsTemp says whether a directory entry's name is one of this package's temporary files.
func IsTemp(name string) bool { return strings.HasPrefix(name, TempPrefix) }

// WriteFile replaces path with data (mode perm).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, false)
}

// CreateFile creates path with data (mode perm); it fails with an error wrapping
// fs.ErrExist, and changes nothing, if path exists.
func CreateFile(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, true)
}

func write(path string, data []byte, perm os.FileMode, exclusive bool) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, TempPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // fails harmlessly once renamed; after a link it drops the second name
	err = errors.Join(f.Chmod(perm), writeSync(f, data))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if exclusive {
		err = os.Link(tmp, path)
	} else {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return SyncDir(dir)
}

func writeSync(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Sync()
}

// Mkdir creates dir (mode perm) unless it exists, and fsyncs its parent so that the new
// entry survives a crash. The parent must exist.
func Mkdir(dir string, perm os.FileMode) error {
	if err := os.Mkdir(dir, perm); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	return SyncDir(filepath.Dir(dir))
}

// SyncDir fsyncs a directory, making the entries created or renamed in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}
