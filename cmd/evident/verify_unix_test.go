//go:build unix

package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/evident-log/evident/misbehaviour"
)

// TestCheckpointFlagReadsAtMostTheLimit: --checkpoint refuses an input over
// misbehaviour.MaxSize after reading one byte past the limit, not the whole input: a pipe that
// has sent more than the limit and stays open is refused at once (reading it whole would wait
// for an end that never comes).
func TestCheckpointFlagReadsAtMostTheLimit(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "endless")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	release := make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			wrote <- err
			return
		}
		defer w.Close()
		_, err = io.Copy(w, io.LimitReader(zeros{}, misbehaviour.MaxSize+4096))
		wrote <- err
		<-release // keep the pipe open: no end of file until the flag has answered
	}()
	done := make(chan error, 1)
	var c checkpointFiles
	go func() { done <- c.Set(fifo) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute): // a hang guard, not a speed assertion
		close(release)
		t.Fatal("--checkpoint waited for the end of an input already over the limit")
	}
	close(release)
	if err == nil || !strings.Contains(err.Error(), "over") || len(c.list) != 0 {
		t.Fatalf("Set: %v, %d inputs kept", err, len(c.list))
	}
	// The writer may still be blocked on the rest of its bytes, which nobody reads: it ends
	// with an error when the reader is gone, and the pipe is closed.
	<-wrote
}

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
