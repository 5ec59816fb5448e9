//go:build unix

package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/evidentd/daemon"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
)

// TestBackupWhileServing sends SIGUSR1 to a real evidentd while a writer keeps sending
// envelopes, and starts a second evidentd on the backup it writes: every envelope
// acknowledged before the signal is there, the chain carries on from the backup's head,
// and its export verifies.
func TestBackupWhileServing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a real evidentd")
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir, ".", "evidentd")
	data := filepath.Join(dir, "data")
	addr := freeAddr(t)
	cmd := startEvidentd(t, bin, data, addr)
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	const ws = "wsp_backup"
	b, err := chapscenario.Long(ws, 1200, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := b.Records()
	post := func(base string, rs [][]byte) int {
		resp, err := testClient.Post(base+"/v1/chains/"+ws+"/entries", "application/jsonl", bytes.NewReader(bytes.Join(rs, []byte("\n"))))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	base := "http://" + addr
	if code := post(base, recs[:400]); code != http.StatusCreated {
		t.Fatalf("first batch: %d", code)
	}
	// A writer goes on while the backup is taken.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for at := 400; at < 1000; at += 50 {
			if code := post(base, recs[at:at+50]); code != http.StatusCreated {
				t.Errorf("batch at %d during the backup: %d", at, code)
				return
			}
		}
	}()
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	var backup string
	for deadline := time.Now().Add(30 * time.Second); backup == ""; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			logged, _ := os.ReadFile(data + ".log")
			t.Fatalf("no backup written:\n%s", logged)
		}
		found, _ := filepath.Glob(filepath.Join(data, daemon.BackupDir, "*Z"))
		if len(found) == 1 {
			backup = found[0]
		}
	}
	wg.Wait()
	logged, _ := os.ReadFile(data + ".log")
	if !strings.Contains(string(logged), `"backup written"`) {
		t.Fatalf("the backup is not logged:\n%s", logged)
	}
	// A second evidentd on a copy of the backup.
	restored := filepath.Join(dir, "restored")
	if err := os.CopyFS(restored, os.DirFS(backup)); err != nil {
		t.Fatal(err)
	}
	addr2 := freeAddr(t)
	cmd2 := startEvidentd(t, bin, restored, addr2)
	defer func() { cmd2.Process.Signal(syscall.SIGTERM); cmd2.Wait() }()
	base2 := "http://" + addr2
	var head api.ChainHead
	getJSON(t, base2+"/v1/chains/"+ws, &head)
	if head.Size < 400 || head.Size > 1000 {
		t.Fatalf("the backup holds %d entries; 400 were acknowledged before the signal, 1000 in all", head.Size)
	}
	var orig api.EntriesPage
	getJSON(t, fmt.Sprintf("%s/v1/chains/%s/entries?from=%d&limit=1", base, ws, head.Size-1), &orig)
	if len(orig.Entries) != 1 || orig.Entries[0].Link != head.Head {
		t.Fatalf("the backup's head %s at %d is not the original's entry there: %+v", head.Head, head.Size, orig.Entries)
	}
	// The restored chain carries on from its head, seals, and verifies.
	if code := post(base2, recs[head.Size:head.Size+10]); code != http.StatusCreated {
		t.Fatalf("continuing from the backup: %d", code)
	}
	resp, err := testClient.Post(base2+"/v1/chains/"+ws+"/seal", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("seal on the restored service: %s", resp.Status)
	}
	verifyExport(t, base2, ws, false)
	// Tessera's fsck rebuilds the restored log's tiles and root from its entry bundles.
	if err := fsckAt(t.Context(), addr2, fetchTrust(t, base2), 1); err != nil {
		t.Fatalf("fsck of the restored log: %v", err)
	}
}
