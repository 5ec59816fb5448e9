package testinfra

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// WitnessProcess is an evident-witness process on loopback.
type WitnessProcess struct {
	URL   string   // where it listens, http://127.0.0.1:PORT
	VKeys []string // its cosignature verifier keys, as -print-vkeys prints them (Ed25519 first)
}

// StartWitness runs the evident-witness binary bin as a witness named name that knows one
// log (origin and its vkey), in a fresh state directory, on a port of the kernel's choosing,
// with args added (e.g. -mldsa-key FILE). It is killed when the test ends.
func StartWitness(t testing.TB, bin, name, origin, logVKey string, args ...string) WitnessProcess {
	t.Helper()
	state := t.TempDir()
	if err := os.WriteFile(filepath.Join(state, "logs.conf"), []byte("log "+origin+" "+logVKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args = append([]string{"-state", state, "-name", name}, args...)
	keys, err := exec.Command(bin, append(args, "-print-vkeys")...).Output()
	if err != nil {
		t.Fatalf("evident-witness -print-vkeys: %v", err)
	}
	cmd := exec.Command(bin, append(args, "-listen", "127.0.0.1:0")...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if j := strings.Index(sc.Text(), "addr=http://"); j >= 0 {
				select {
				case addr <- strings.Fields(sc.Text()[j+len("addr="):])[0]:
				default:
				}
			}
		}
	}()
	select {
	case a := <-addr:
		return WitnessProcess{URL: a, VKeys: strings.Fields(string(keys))}
	case <-time.After(30 * time.Second):
		t.Fatal("evident-witness did not start listening")
	}
	return WitnessProcess{}
}
