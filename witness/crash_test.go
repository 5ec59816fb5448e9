package witness

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	tlog "github.com/transparency-dev/formats/log"
)

// buildWitness compiles cmd/evident-witness into dir.
func buildWitness(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "evident-witness")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/evident-log/evident/cmd/evident-witness").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startWitness starts the binary on a loopback port and returns its base URL.
func startWitness(t *testing.T, bin, state string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-state", state, "-name", "witness.test/crash")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if i := strings.Index(sc.Text(), "addr=http://"); i >= 0 && !sent {
				addr <- strings.Fields(sc.Text()[i+len("addr="):])[0]
				sent = true
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case a := <-addr:
		return cmd, a
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("witness did not start")
	}
	return nil, ""
}

// TestKill9NeverCosignsAFork kills a real evident-witness process with SIGKILL while two
// forks of one log race to get cosigned, restarts it on the same state, several times, and
// checks (1) no cosignature was ever returned for both sides of the fork and (2) the state
// after each restart is at least the largest checkpoint cosigned before the kill (no rollback).
func TestKill9NeverCosignsAFork(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a subprocess")
	}
	dir := t.TempDir()
	bin := buildWitness(t, dir)
	state := filepath.Join(dir, "state")
	const common, extra = 4, 400
	a := newTestLog(t, "log.test/crash")
	a.grow(common, "main")
	b := a.fork()
	a.grow(extra, "main")
	b.grow(extra, "evil")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "logs.conf"), []byte("log "+a.origin+" "+a.vkey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	var mu sync.Mutex
	maxCosigned := map[string]uint64{}
	cosignedCount := 0
	for round := 0; round < 4; round++ {
		cmd, url := startWitness(t, bin, state)
		if round > 0 {
			// No rollback: the monitor view holds at least what was cosigned before the kill.
			resp, err := client.Get(url + "/" + OriginID(a.origin) + "/checkpoint")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var cp tlog.Checkpoint
			if _, err := cp.Unmarshal(body); err != nil {
				t.Fatalf("round %d: held checkpoint unreadable: %v (%q)", round, err, body)
			}
			mu.Lock()
			for branch, sz := range maxCosigned {
				if cp.Size < sz {
					t.Errorf("round %d: held size %d is below %d cosigned for branch %s before the kill", round, cp.Size, sz, branch)
				}
			}
			mu.Unlock()
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for g := 0; g < 6; g++ {
			lg, branch := a, "a"
			if g%2 == 1 {
				lg, branch = b, "b"
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				var old uint64
				for size := uint64(common + 1 + g + round*80); size <= common+extra && ctx.Err() == nil; size += 5 {
					for attempt := 0; attempt < 4 && old <= size && ctx.Err() == nil; attempt++ {
						req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/add-checkpoint", bytes.NewReader(lg.request(t, old, size)))
						resp, err := client.Do(req)
						if err != nil {
							return // killed
						}
						body, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						if resp.StatusCode == http.StatusConflict && resp.Header.Get("Content-Type") == ContentTypeTlogSize {
							fmt.Sscanf(string(body), "%d", &old)
							continue
						}
						if resp.StatusCode == http.StatusOK {
							if _, err := SplitCosignatures(body); err != nil || len(body) == 0 {
								t.Errorf("200 without cosignature: %q", body)
							}
							old = size
							mu.Lock()
							cosignedCount++
							if size > maxCosigned[branch] {
								maxCosigned[branch] = size
							}
							mu.Unlock()
						}
						break
					}
				}
			}()
		}
		time.Sleep(time.Duration(150+50*round) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		cancel()
		wg.Wait()
		mu.Lock()
		if maxCosigned["a"] > common && maxCosigned["b"] > common {
			t.Fatalf("round %d: cosigned both sides of the fork: a up to %d, b up to %d", round, maxCosigned["a"], maxCosigned["b"])
		}
		mu.Unlock()
	}
	if cosignedCount == 0 {
		t.Fatal("nothing was cosigned: the test exercised nothing")
	}
	t.Logf("%d cosignatures over 4 kill -9 rounds; largest cosigned sizes %v", cosignedCount, maxCosigned)
}
