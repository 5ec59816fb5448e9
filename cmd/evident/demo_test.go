package main

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestDemoLeavesNoEvidentd: a user who pipes the demo into head cuts its output short, and
// evident dies of SIGPIPE before its deferred shutdown runs; the evidentd it started must
// stop with it rather than keep serving on loopback.
func TestDemoLeavesNoEvidentd(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	bin := buildTools(t)
	demo := exec.Command(filepath.Join(bin, "evident"), "demo", "--dir", t.TempDir())
	out, err := demo.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	// Read the first line, which names evidentd's address, then close the pipe as head does.
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		demo.Process.Kill()
		demo.Wait()
		t.Fatalf("first line of the demo: %q %v", line, err)
	}
	m := regexp.MustCompile(`evidentd started on (http://127\.0\.0\.1:[0-9]+)`).FindStringSubmatch(line)
	if m == nil {
		demo.Process.Kill()
		demo.Wait()
		t.Fatalf("first line names no evidentd: %q", line)
	}
	out.Close()
	done := make(chan error, 1)
	go func() { done <- demo.Wait() }()
	select {
	case err := <-done:
		// Killed by SIGPIPE at its next write, which comes after evidentd answered /readyz:
		// the evidentd it leaves is up unless the kernel stopped it.
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGPIPE {
			t.Fatalf("the demo ended with %v, not by SIGPIPE after evidentd was ready", err)
		}
	case <-time.After(time.Minute):
		demo.Process.Kill()
		<-done
		t.Fatal("the demo did not stop after its output was closed")
	}
	// The demo is gone; its evidentd must follow within a bounded time.
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m[1]+"/healthz", nil)
		resp, err := c.Do(req)
		cancel()
		if err != nil {
			return // nothing listens any more
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("evidentd at %s still serves after the demo died", m[1])
		}
		time.Sleep(100 * time.Millisecond)
	}
}
