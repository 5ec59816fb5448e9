package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	tlog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/internal/evidentd/daemon"
	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/misbehaviour"
	"github.com/evident-log/evident/trustfile"
)

var proofWritten = regexp.MustCompile(`(?m)^proof of misbehaviour written to (\S+): check it with evident misbehaviour check (\S+) --log-key (\S+)$`)

// TestVerifyWritesMisbehaviour runs the evident binary against a bundle exported by a real
// evidentd: the checkpoint evidentd serves at /log/checkpoint is taken as --checkpoint and
// cross-checked; a checkpoint of the same size with another root, signed with the log's own
// key, makes the verdict broken and writes a proof of misbehaviour (into --misbehaviour-dir,
// or the current directory) that misbehaviour.Check proves under the pinned log key; a
// second run never overwrites the first file, and --misbehaviour-dir "" writes nothing.
func TestVerifyWritesMisbehaviour(t *testing.T) {
	bin := buildTools(t)
	evident := filepath.Join(bin, "evident")
	data := t.TempDir()
	srv := startDaemonWith(t, daemon.Config{Data: data})
	dir := t.TempDir()
	const ws = "wsp_fork"
	recs := triageFile(t, dir, ws)
	zip := filepath.Join(dir, "case.zip")
	trust := filepath.Join(dir, "operator.trust.json")
	for _, args := range [][]string{
		{"submit", "-url", srv.URL, "-chain", ws, recs},
		{"seal", "-url", srv.URL, "-chain", ws},
		{"export", "-url", srv.URL, "-chain", ws, "-o", zip},
		{"trust", "fetch", srv.URL, "-o", trust},
	} {
		if code, out, errs := run1(t, evident, args...); code != 0 {
			t.Fatalf("%v: %d\n%s\n%s", args, code, out, errs)
		}
	}
	served := httpGet(t, srv.URL+"/log/checkpoint")
	servedPath := writeTemp(t, "served.checkpoint", served)
	var cp tlog.Checkpoint
	if _, err := cp.Unmarshal(served[:bytes.Index(served, []byte("\n\n"))+1]); err != nil {
		t.Fatalf("served checkpoint: %v\n%s", err, served)
	}
	signer, _, err := log.LoadOrCreateKey(filepath.Join(data, "keys"), cp.Origin)
	if err != nil {
		t.Fatal(err)
	}
	other := sha256.Sum256([]byte("another history"))
	forged, err := note.Sign(&note.Note{Text: string(tlog.Checkpoint{Origin: cp.Origin, Size: cp.Size, Hash: other[:]}.Marshal())}, signer)
	if err != nil {
		t.Fatal(err)
	}
	forgedPath := writeTemp(t, "forged.checkpoint", forged)
	tb, err := os.ReadFile(trust)
	if err != nil {
		t.Fatal(err)
	}
	tf, err := trustfile.Parse(tb)
	if err != nil {
		t.Fatal(err)
	}
	originID := sha256.Sum256([]byte(cp.Origin))
	wantName := regexp.MustCompile(`^misbehaviour-` + hex.EncodeToString(originID[:])[:12] + `-` + strconv.FormatUint(cp.Size, 10) + `-` + strconv.FormatUint(cp.Size, 10) + `(-[0-9]+)?\.json$`)

	// The checkpoint as served is cross-checked; nothing is written.
	out := t.TempDir()
	code, stdout, stderr := runIn(t, out, evident, "verify", "-q", "--trust", trust, "--checkpoint", servedPath, zip)
	if code != exitVerified || !strings.Contains(stdout, "✓ log.extra_checkpoint") || proofWritten.MatchString(stderr) {
		t.Fatalf("served checkpoint: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Fatalf("files written for a log without a fork: %v", entries)
	}

	check := func(t *testing.T, path string) []byte {
		t.Helper()
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		p, err := misbehaviour.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if res := misbehaviour.Check(p, misbehaviour.Keys{LogKeys: tf.LogKeys}); !res.Proven || p.Kind != misbehaviour.KindSameSize {
			t.Fatalf("%s: %s proven %v: %s", path, p.Kind, res.Proven, res.Reason)
		}
		return raw
	}
	fork := func(t *testing.T, wd string, extra ...string) (string, []string) {
		t.Helper()
		args := append(append([]string{"verify", "-q", "--trust", trust, "--checkpoint", forgedPath}, extra...), zip)
		code, stdout, stderr := runIn(t, wd, evident, args...)
		if code != exitBroken || !strings.Contains(stdout, "log.fork @ tree size "+strconv.FormatUint(cp.Size, 10)+" (log_fork)") {
			t.Fatalf("forked checkpoint: exit %d\n%s\n%s", code, stdout, stderr)
		}
		var paths []string
		for _, m := range proofWritten.FindAllStringSubmatch(stderr, -1) {
			if m[1] != m[2] || m[3] != "KEY" || !wantName.MatchString(filepath.Base(m[1])) {
				t.Errorf("stderr line %q", m[0])
			}
			paths = append(paths, m[1])
		}
		return stderr, paths
	}

	t.Run("into a directory", func(t *testing.T) {
		misDir := t.TempDir()
		_, paths := fork(t, out, "--misbehaviour-dir", misDir)
		if len(paths) != 1 || filepath.Dir(paths[0]) != misDir {
			t.Fatalf("proofs written: %v", paths)
		}
		first := check(t, paths[0])
		// Again: the first file is kept as it was; the new proof (another observed time) is
		// that file when it has the same bytes, else a file with a suffix.
		_, again := fork(t, out, "--misbehaviour-dir", misDir)
		if len(again) != 1 {
			t.Fatalf("second run wrote %v", again)
		}
		check(t, again[0])
		if now, _ := os.ReadFile(paths[0]); !bytes.Equal(now, first) {
			t.Fatalf("%s overwritten", paths[0])
		}
	})
	t.Run("into the current directory", func(t *testing.T) {
		wd := t.TempDir()
		_, paths := fork(t, wd)
		if len(paths) != 1 || filepath.Dir(paths[0]) != "." {
			t.Fatalf("proofs written: %v", paths)
		}
		check(t, filepath.Join(wd, paths[0]))
	})
	t.Run("directory not writable", func(t *testing.T) {
		// A path under a regular file cannot be created, even by root: the proof is not
		// written, and the broken verdict is still the exit code, with a warning.
		notDir := writeTemp(t, "not-a-directory", []byte("x"))
		wd := t.TempDir()
		stderr, paths := fork(t, wd, "--misbehaviour-dir", filepath.Join(notDir, "sub"))
		if len(paths) != 0 || !strings.Contains(stderr, "could not write the proof of misbehaviour: ") ||
			!strings.Contains(stderr, "the report carries it in JSON (--format json)") {
			t.Fatalf("unwritable --misbehaviour-dir: %v\n%s", paths, stderr)
		}
	})
	t.Run("not written", func(t *testing.T) {
		wd := t.TempDir()
		stderr, paths := fork(t, wd, "--misbehaviour-dir", "")
		if entries, _ := os.ReadDir(wd); len(paths) != 0 || len(entries) != 0 {
			t.Fatalf("--misbehaviour-dir \"\": %v %v\n%s", paths, entries, stderr)
		}
	})
}

// runIn runs the evident binary in directory wd: exit code, standard output, standard error.
func runIn(t *testing.T, wd, bin string, args ...string) (int, string, string) {
	t.Helper()
	c := exec.Command(bin, args...)
	c.Dir = wd
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	code := exitCode(c)
	if code < 0 {
		t.Fatalf("%s %v did not run", bin, args)
	}
	return code, out.String(), errb.String()
}

func httpGet(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d %v", url, resp.StatusCode, err)
	}
	return b
}
