package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evident-log/evident/internal/buildinfo"
)

// TestVersion: --version prints the build and creates no state directory.
func TestVersion(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	var stdout strings.Builder
	err := run(context.Background(), []string{"--version", "--state", state}, func(string) string { return "" }, &stdout, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := buildinfo.Read().Program("evident-witness") + "\n"; stdout.String() != want {
		t.Errorf("printed %q, want %q", stdout.String(), want)
	}
	if _, err := os.Stat(state); err == nil {
		t.Error("the state directory was created")
	}
}
