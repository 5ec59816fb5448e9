//go:build unix

package verifier_test

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/verifier"
)

// unpackGenuine writes the corpus's genuine bundle into a directory and returns it.
func unpackGenuine(t *testing.T) string {
	t.Helper()
	zr, err := zip.OpenReader(filepath.Join(hostileDir, "genuine.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	dir := filepath.Join(t.TempDir(), "bundle")
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestHostileDirectories: the attacks only a directory bundle can carry, built here rather
// than committed. Each must be refused as ambiguous (broken, bundle_ambiguous naming the
// entry), and none may hang the verifier: a FIFO is never opened.
func TestHostileDirectories(t *testing.T) {
	entries := bundle.EntriesFile("ws-1")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, attack, where string
		make                func(t *testing.T, dir string)
	}{
		{"dir-control", "the genuine bundle unpacked", "", func(t *testing.T, dir string) {}},
		{"dir-symlink-file", "a listed file replaced by a symlink to a copy outside the bundle (same bytes today, whatever the target holds tomorrow)", bundle.WitnessPolicyFile,
			func(t *testing.T, dir string) {
				p := filepath.Join(dir, bundle.WitnessPolicyFile)
				b, err := os.ReadFile(p)
				must(err)
				out := filepath.Join(t.TempDir(), "policy")
				must(os.WriteFile(out, b, 0o644))
				must(os.Remove(p))
				must(os.Symlink(out, p))
			}},
		{"dir-symlink-dir", "the seals directory replaced by a symlink to a copy outside the bundle", "chains/ws-1/seals",
			func(t *testing.T, dir string) {
				p := filepath.Join(dir, "chains", "ws-1", "seals")
				out := filepath.Join(t.TempDir(), "seals")
				must(os.Rename(p, out))
				must(os.Symlink(out, p))
			}},
		{"dir-fifo-unlisted", "an unlisted FIFO beside the chain", "chains/ws-1/pipe",
			func(t *testing.T, dir string) {
				must(syscall.Mkfifo(filepath.Join(dir, "chains", "ws-1", "pipe"), 0o644))
			}},
		{"dir-fifo-listed", "a listed file replaced by a FIFO (reading it would block forever)", bundle.WitnessPolicyFile,
			func(t *testing.T, dir string) {
				p := filepath.Join(dir, bundle.WitnessPolicyFile)
				must(os.Remove(p))
				must(syscall.Mkfifo(p, 0o644))
			}},
		{"dir-case-collision", "ENTRIES.jsonl (altered) beside entries.jsonl: one file on a case-insensitive disk", "chains/ws-1/ENTRIES.jsonl",
			func(t *testing.T, dir string) {
				b, err := os.ReadFile(filepath.Join(dir, entries))
				must(err)
				must(os.WriteFile(filepath.Join(dir, "chains", "ws-1", "ENTRIES.jsonl"), bytes.Replace(b, []byte(`"n":4`), []byte(`"n":5`), 1), 0o644))
			}},
		{"dir-unlisted", "an extra file the manifest does not list", "chains/ws-1/extra.jsonl",
			func(t *testing.T, dir string) {
				must(os.WriteFile(filepath.Join(dir, "chains", "ws-1", "extra.jsonl"), []byte("{}\n"), 0o644))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := unpackGenuine(t)
			tc.make(t, dir)
			// Whatever happens, a reader blocked on a FIFO is released when the test ends.
			t.Cleanup(func() { releaseFIFOs(dir) })
			c := hostileCase{Name: tc.name, Attack: tc.attack, Pins: hostileTrust, Verdict: verifier.Broken, Codes: []verifier.Code{verifier.CodeAmbiguous}, Where: tc.where}
			if tc.where == "" {
				c.Verdict, c.Codes = verifier.Verified, nil
			}
			rep := runHostileTimeout(t, dir, c.Pins, releaseFIFOs)
			if rep != nil {
				checkHostile(t, rep, c)
			}
		})
	}
}

// releaseFIFOs opens every FIFO under dir for writing and closes it, so a reader blocked
// opening or reading one gets EOF.
func releaseFIFOs(dir string) {
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
			if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
		return nil
	})
}
