//go:build unix

package bundle

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestDirPipe: a named pipe where a listed file should be would block a reader forever; the
// bundle is refused before anything is opened.
func TestDirPipe(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte(manifestFor(genuine, entriesName, "trust/log.vkey")), 0o644)
	os.MkdirAll(filepath.Join(dir, "trust"), 0o755)
	os.WriteFile(filepath.Join(dir, "trust/log.vkey"), []byte(genuine[1].data), 0o644)
	os.MkdirAll(filepath.Join(dir, "chains/ws"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(dir, entriesName), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	_, err := Open(dir)
	wantAmbiguous(t, "a pipe", err, entriesName, "not a regular file")
}
