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

// TestMaxConnsRefusals: a connection limit below one, or an environment value that is no
// integer, stops evident-witness with the usage exit code, naming where the value came from,
// before the state directory is created.
func TestMaxConnsRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"flag", []string{"-max-conns", "0"}, nil, "-max-conns: 0 is below 1"},
		{"environment", nil, map[string]string{"EVIDENT_WITNESS_MAX_CONNS": "-5"}, "EVIDENT_WITNESS_MAX_CONNS: -5 is below 1"},
		{"not an integer", nil, map[string]string{"EVIDENT_WITNESS_MAX_CONNS": "lots"}, `EVIDENT_WITNESS_MAX_CONNS: invalid integer "lots"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			args := append([]string{"--state", state}, tc.args...)
			err := run(context.Background(), args, func(k string) string { return tc.env[k] }, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) || exitCode(err) != exitUsage {
				t.Fatalf("got %v (exit %d), want %q and exit %d", err, exitCode(err), tc.want, exitUsage)
			}
			if _, err := os.Stat(state); err == nil {
				t.Error("the state directory was created")
			}
		})
	}
}

// TestFirstStartRefusals: a first start that could not go on (no witness name for the key
// it would create, a name no key can carry, no known-logs file) is a usage error that says
// what to pass, and leaves no state directory behind.
func TestFirstStartRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no flags", nil, "-name is needed to create the witness key"},
		{"print keys without a name", []string{"-print-vkeys"}, "-name is needed"},
		{"name with a space", []string{"-name", "my witness"}, `-name "my witness" cannot name a key`},
		{"no known-logs file", []string{"-name", "witness.example"}, "known-logs file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			args := append([]string{"--state", state}, tc.args...)
			err := run(context.Background(), args, func(string) string { return "" }, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) || exitCode(err) != exitUsage {
				t.Fatalf("got %v (exit %d), want %q and exit %d", err, exitCode(err), tc.want, exitUsage)
			}
			if _, err := os.Stat(state); err == nil {
				t.Error("the state directory was created")
			}
		})
	}
}

// TestPrintVKeysCreatesKey: -print-vkeys with a name creates the key (no known-logs file is
// needed yet: the log's operator needs the verifier key to write one) and prints its vkey.
func TestPrintVKeysCreatesKey(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	var stdout strings.Builder
	args := []string{"--state", state, "-name", "witness.example", "-print-vkeys"}
	if err := run(context.Background(), args, func(string) string { return "" }, &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stdout.String(), "witness.example+") {
		t.Errorf("printed %q, want the vkey of witness.example", stdout.String())
	}
	if _, err := os.Stat(filepath.Join(state, "witness.key")); err != nil {
		t.Errorf("key not created: %v", err)
	}
}
