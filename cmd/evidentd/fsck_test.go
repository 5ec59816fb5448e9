package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	tessera "github.com/transparency-dev/tessera/api"
	"github.com/transparency-dev/tessera/client"
	"github.com/transparency-dev/tessera/fsck"

	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/trustfile"
)

// fsckChildEnv, set in the environment of this package's test binary, makes it run
// Tessera's fsck on the log an fsckTarget (JSON) names and exit instead of running the
// tests. fsck runs in a child process because its entry-bundle stream leaves a goroutine
// that logs through klog's process-wide logger after Check returns, while evidentd's serve,
// which this package's tests call in process, replaces that logger: the race detector
// rightly reports the two.
const fsckChildEnv = "EVIDENT_TEST_FSCK_CHILD"

// fsckTarget names a log for fsck: its tlog-tiles root URL, origin and verifier key.
type fsckTarget struct {
	Root   string `json:"root"`
	Origin string `json:"origin"`
	VKey   string `json:"vkey"`
}

func TestMain(m *testing.M) {
	if target := os.Getenv(fsckChildEnv); target != "" {
		os.Exit(fsckChild(target))
	}
	os.Exit(m.Run())
}

// fsckChild runs fsck on the log target names and returns the exit code: 0 when the log
// is clean, after printing its size on stdout.
func fsckChild(target string) int {
	var tg fsckTarget
	if err := json.Unmarshal([]byte(target), &tg); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", fsckChildEnv, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	size, err := runFsck(ctx, tg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fsck:", err)
		return 1
	}
	fmt.Printf("fsck clean: size %d\n", size)
	return 0
}

// runFsck checks the log of tg with Tessera's fsck: it rebuilds every tile and the root
// from the entry bundles and compares them with the tiles served and with the checkpoint,
// which must verify with tg's key. It returns the size of that checkpoint.
func runFsck(ctx context.Context, tg fsckTarget) (uint64, error) {
	hc := &http.Client{Timeout: 30 * time.Second}
	f, v, err := logClient(tg.Root, tg.VKey, hc)
	if err != nil {
		return 0, err
	}
	cp, _, _, err := client.FetchCheckpoint(ctx, f.ReadCheckpoint, v, tg.Origin)
	if err != nil {
		return 0, fmt.Errorf("checkpoint: %w", err)
	}
	if err := fsck.New(tg.Origin, v, f, leafHashes, fsck.Opts{N: 2}).Check(ctx); err != nil {
		return 0, err
	}
	return cp.Size, nil
}

// fsckLog runs Tessera's fsck, in a child process, on the log served by replica i's
// tile-log endpoints, pinned to the log key of trust. A log that is not clean, or that
// shrank below minSize, is an error.
func fsckLog(ctx context.Context, c *cluster, i int, trust *trustfile.File, minSize uint64) error {
	return fsckAt(ctx, c.addrs[i], trust, minSize)
}

// fsckAt runs Tessera's fsck, in a child process, on the log the evidentd at addr serves,
// pinned to the log key of trust; as fsckLog.
func fsckAt(ctx context.Context, addr string, trust *trustfile.File, minSize uint64) error {
	if len(trust.LogKeys) == 0 {
		return fmt.Errorf("the trust file names no log key")
	}
	target, err := json.Marshal(fsckTarget{Root: "http://" + addr + "/log/", Origin: trust.Origin, VKey: trust.LogKeys[0]})
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), fsckChildEnv+"="+string(target))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%w\n%s", err, tailLines([]byte(stderr.String()), 20))
	}
	var size uint64
	if _, err := fmt.Sscanf(string(out), "fsck clean: size %d\n", &size); err != nil {
		return fmt.Errorf("fsck said %q: %w", out, err)
	}
	if size < minSize {
		return fmt.Errorf("fsck checked a log of %d entries; %d were read before", size, minSize)
	}
	return nil
}

// leafHashes is fsck's bundle hasher: the RFC 6962 leaf hashes of an entry bundle's entries.
func leafHashes(b []byte) ([][]byte, error) {
	var eb tessera.EntryBundle
	if err := eb.UnmarshalText(b); err != nil {
		return nil, fmt.Errorf("entry bundle: %w", err)
	}
	out := make([][]byte, len(eb.Entries))
	for k, e := range eb.Entries {
		out[k] = log.LeafHash(e)
	}
	return out, nil
}
