package main

import (
	"context"
	"strings"
	"testing"

	"github.com/evident-log/evident/internal/buildinfo"
)

// TestVersion: "evident --version" and "evident version" print the build and exit 0.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "-version", "version"} {
		var stdout, stderr strings.Builder
		if code := run(context.Background(), []string{arg}, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
			t.Fatalf("%s: exit %d, stderr %q", arg, code, stderr.String())
		}
		if want := buildinfo.Read().Program("evident") + "\n"; stdout.String() != want {
			t.Errorf("%s printed %q, want %q", arg, stdout.String(), want)
		}
	}
}
