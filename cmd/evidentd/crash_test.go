package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/chapscenario"
)

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// testClient bounds every request of these tests: a wedged evidentd fails the test instead
// of hanging it.
var testClient = &http.Client{Timeout: 30 * time.Second}

func startEvidentd(t *testing.T, bin, data, addr string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "--data", data, "--listen", addr, "--checkpoint-interval", "100ms", "--seal-interval", "0", "--seal-every", "0")
	logf, _ := os.OpenFile(filepath.Join(data+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := testClient.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			return cmd
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("evidentd did not start: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestKillNineLosesNothing streams batches of envelopes, kills evidentd with SIGKILL
// in the middle, restarts it on the same data directory, and checks that every envelope
// acknowledged with a 201 is in the chain at the seq it was given, that the chain carries on,
// and that an export of it verifies offline.
func TestKillNineLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a real evidentd")
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir, ".", "evidentd")
	data := filepath.Join(dir, "data")
	addr := freeAddr(t)
	cmd := startEvidentd(t, bin, data, addr)

	const ws = "wsp_crash"
	b, err := chapscenario.Long(ws, 4000, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := b.Records()
	// Only what got a 201 counts as acknowledged.
	post := func(body []byte) (map[uint64]string, int) {
		resp, err := testClient.Post("http://"+addr+"/v1/chains/"+ws+"/entries", "application/jsonl", bytes.NewReader(body))
		if err != nil {
			return nil, 0
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusCreated {
			return nil, resp.StatusCode
		}
		var r struct {
			Accepted []struct {
				Seq  uint64 `json:"seq"`
				Link string `json:"link"`
			} `json:"accepted"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, 0 // a torn answer is no acknowledgement
		}
		got := map[uint64]string{}
		for _, a := range r.Accepted {
			got[a.Seq] = a.Link
		}
		return got, resp.StatusCode
	}
	acked := map[uint64]string{}
	var mu sync.Mutex
	if got, code := post(bytes.Join(recs[:4], []byte("\n"))); code != http.StatusCreated {
		t.Fatalf("joins: %d", code)
	} else {
		for k, v := range got {
			acked[k] = v
		}
	}
	// Batches of 20 follow, in order, until the server dies under the writer. The last record
	// is never sent before the kill, so that the chain can always carry on after the restart
	// however far the writer got.
	streamed := recs[:len(recs)-1]
	next := 4
	var wg sync.WaitGroup
	stop := make(chan struct{})
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for next < len(streamed) {
			select {
			case <-stop:
				return
			default:
			}
			end := min(next+20, len(streamed))
			got, code := post(bytes.Join(streamed[next:end], []byte("\n")))
			if code != http.StatusCreated {
				return // the server died under us
			}
			mu.Lock()
			for k, v := range got {
				acked[k] = v
			}
			mu.Unlock()
			next = end
		}
	}()
	// Kill once a few hundred envelopes are acknowledged (or the writer ran out, or 20 s
	// passed): mid-stream on any machine, fast or loaded.
	deadline := time.Now().Add(20 * time.Second)
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-time.After(10 * time.Millisecond):
			mu.Lock()
			waiting = len(acked) < 300 && time.Now().Before(deadline)
			mu.Unlock()
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	close(stop)
	wg.Wait()
	mu.Lock()
	n := len(acked)
	mu.Unlock()
	if n <= 4 {
		t.Fatalf("only %d envelopes acknowledged before the kill: the test proves nothing", n)
	}
	t.Logf("%d envelopes acknowledged before SIGKILL", n)
	// They went through the ledger store's write-ahead log (Pebble's *.log files), which
	// the restart replays.
	wals, err := filepath.Glob(filepath.Join(data, "ledger", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var logged int64
	for _, w := range wals {
		if fi, err := os.Stat(w); err == nil {
			logged += fi.Size()
		}
	}
	if logged == 0 {
		t.Fatalf("the ledger store's write-ahead log holds nothing after %d acknowledged envelopes", n)
	}
	t.Logf("write-ahead log at the kill: %d bytes in %d files", logged, len(wals))

	cmd = startEvidentd(t, bin, data, addr)
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	resp, err := testClient.Get(fmt.Sprintf("http://%s/v1/chains/%s", addr, ws))
	if err != nil {
		t.Fatal(err)
	}
	var head struct{ Size uint64 }
	err = json.NewDecoder(resp.Body).Decode(&head)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("chain head after restart: %v", err)
	}
	if head.Size < uint64(n) {
		t.Fatalf("chain size %d after restart, %d acknowledged", head.Size, n)
	}
	// Every acknowledged entry is there, at its seq, with its link.
	for from := uint64(0); from < head.Size; from += 1000 {
		resp, err := testClient.Get(fmt.Sprintf("http://%s/v1/chains/%s/entries?from=%d&limit=1000", addr, ws, from))
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Entries []struct {
				Seq  uint64 `json:"seq"`
				Link string `json:"link"`
			} `json:"entries"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || len(page.Entries) == 0 {
			t.Fatalf("entries from %d after restart: %d entries, %v", from, len(page.Entries), err)
		}
		for _, e := range page.Entries {
			if want, ok := acked[e.Seq]; ok && want != e.Link {
				t.Fatalf("seq %d: link %s, acknowledged %s", e.Seq, e.Link, want)
			}
			delete(acked, e.Seq)
		}
	}
	if len(acked) != 0 {
		t.Fatalf("%d acknowledged entries missing after restart", len(acked))
	}
	// A batch in flight at the kill may be stored without its answer: resent, it is
	// acknowledged again (200), not refused.
	if head.Size > 4 {
		resp, err := testClient.Post("http://"+addr+"/v1/chains/"+ws+"/entries", "application/jsonl", bytes.NewReader(recs[head.Size-1]))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("resending the last stored envelope after restart: %s", resp.Status)
		}
	}
	// The chain carries on from where the store left it (the last record was held back, so
	// there is always one to send), and the whole of it verifies.
	if _, code := post(recs[head.Size]); code != http.StatusCreated {
		t.Fatalf("continuing after restart: %d", code)
	}
	resp, err = testClient.Post(fmt.Sprintf("http://%s/v1/chains/%s/seal", addr, ws), "", nil)
	if err != nil {
		t.Fatalf("seal after restart: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("seal after restart: %s", resp.Status)
	}
	verifyExport(t, "http://"+addr, ws, false)
}

// buildBinary builds the command in package dir pkg (relative to this one) into dir and
// returns its path.
func buildBinary(t *testing.T, dir, pkg, name string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	return bin
}
