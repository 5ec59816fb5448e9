package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestStrictArguments: unknown flags, extra arguments and unknown commands are usage errors
// (exit 64) with one line naming the command, then its one-line usage, on standard error and
// nothing on standard output; help asked for in any spelling is on standard output, exit 0.
func TestStrictArguments(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		first  string // the first line of standard error (usage errors) or output (help)
		stdout string // a substring of standard output
	}{
		{name: "version --bogus", args: []string{"version", "--bogus"}, code: exitUsage, first: "evident version: flag provided but not defined: -bogus"},
		{name: "version -bogus", args: []string{"version", "-bogus"}, code: exitUsage, first: "evident version: flag provided but not defined: -b"},
		{name: "version extra argument", args: []string{"version", "now"}, code: exitUsage, first: `evident version: unexpected argument(s) ["now"]`},
		{name: "seal extra argument", args: []string{"seal", "--chain", "c", "x"}, code: exitUsage, first: `evident seal: unexpected argument(s) ["x"]`},
		{name: "keys show two files", args: []string{"keys", "show", "a", "b"}, code: exitUsage, first: `evident keys show: unexpected argument(s) ["b"]`},
		{name: "keys generate unknown flag", args: []string{"keys", "generate", "--size", "9"}, code: exitUsage, first: "evident keys generate: flag provided but not defined: -size"},
		{name: "statement sign two payloads", args: []string{"statement", "sign", "a", "b"}, code: exitUsage, first: "evident statement sign: one payload file at most"},
		{name: "receipt verify unknown flag", args: []string{"receipt", "verify", "--nope"}, code: exitUsage, first: "evident receipt verify: flag provided but not defined: -nope"},
		{name: "trust fetch two URLs", args: []string{"trust", "fetch", "http://a", "http://b"}, code: exitUsage, first: `evident trust fetch: unexpected argument(s) ["http://b"]`},
		{name: "a malformed value", args: []string{"submit", "--chain", "c", "--batch", "many", "f"}, code: exitUsage, first: `evident submit: invalid argument "many" for "--batch" flag`},
		{name: "a malformed duration", args: []string{"trust", "fetch", "--timeout", "soon", "http://a"}, code: exitUsage, first: `evident trust fetch: invalid argument "soon" for "--timeout" flag`},
		{name: "a flag without its value", args: []string{"verify", "b.zip", "--format"}, code: exitUsage, first: "evident verify: flag needs an argument: --format"},
		{name: "a format no command has", args: []string{"seal", "--chain", "c", "--format", "yaml"}, code: exitUsage, first: `evident seal: -format must be text or json, not "yaml"`},
		{name: "unknown command, suggested", args: []string{"verfy"}, code: exitUsage, first: `evident: unknown command "verfy" (did you mean verify?)`},
		{name: "help of an unknown command", args: []string{"help", "nope"}, code: exitUsage, first: `evident help: unknown command "nope"`},
		{name: "help of a subcommand", args: []string{"help", "keys", "generate"}, code: 0, first: "Usage: evident keys <generate|show|thumbprint|rotate> [flags]", stdout: "--type string"},
		{name: "--help", args: []string{"export", "--help"}, code: 0, first: "Usage: evident export", stdout: "--timeout duration"},
		{name: "-help", args: []string{"import", "-help"}, code: 0, first: "Usage: evident import", stdout: "--batch int"},
		{name: "-h", args: []string{"submit", "-h"}, code: 0, first: "Usage: evident submit", stdout: "--chain string"},
		{name: "--h", args: []string{"seal", "--h"}, code: 0, first: "Usage: evident seal", stdout: "-o, --output string"},
		{name: "group help", args: []string{"statement", "help"}, code: 0, first: "Usage: evident statement <keygen|policy|sign> [flags]", stdout: "keygen"},
		{name: "completion without a shell", args: []string{"completion"}, code: exitUsage, first: "evident completion: missing subcommand (bash, fish, powershell, zsh)"},
		{name: "completion of an unknown shell", args: []string{"completion", "tcsh"}, code: exitUsage, first: `evident completion: unknown subcommand "tcsh"`},
		{name: "completion help", args: []string{"help", "completion"}, code: 0, first: "Usage: evident completion", stdout: "bash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := cli(tc.args...)
			if code != tc.code {
				t.Fatalf("evident %q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", tc.args, code, tc.code, out, errs)
			}
			where, other := errs, out
			if tc.code == 0 {
				where, other = out, errs
			}
			if first, _, _ := strings.Cut(where, "\n"); !strings.HasPrefix(first, tc.first) {
				t.Errorf("first line %q, want %q", first, tc.first)
			}
			if other != "" {
				t.Errorf("the other stream is not empty:\n%s", other)
			}
			if !strings.Contains(out, tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, out)
			}
			if tc.code == exitUsage && !strings.Contains(strings.ToLower(errs), "\nusage: evident") {
				t.Errorf("no usage after the error:\n%s", errs)
			}
		})
	}
}

// TestSingleDashFlags: the single-dash long flags that scripts and the docs write (-chain C,
// -format=json, -o, -q, -quiet) mean what their double-dash forms mean, real shorthands stay
// shorthands, a flag's value is never rewritten, and nothing after "--" is touched.
func TestSingleDashFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"long flags", []string{"submit", "-chain", "c", "-batch=3", "-quiet", "f.jsonl"}, []string{"submit", "--chain", "c", "--batch=3", "--quiet", "f.jsonl"}},
		{"shorthands kept", []string{"export", "-o", "x.zip", "-q", "-chain", "c"}, []string{"export", "-o", "x.zip", "-q", "--chain", "c"}},
		{"double-dash shorthand", []string{"export", "--o", "x.zip", "--q"}, []string{"export", "-o", "x.zip", "-q"}},
		{"a value that looks like a flag", []string{"statement", "sign", "-iss", "-chain", "-sub", "-o"}, []string{"statement", "sign", "--iss", "-chain", "--sub", "-o"}},
		{"a subcommand's flags", []string{"keys", "generate", "-type", "p256", "-o", "k.pem"}, []string{"keys", "generate", "--type", "p256", "-o", "k.pem"}},
		{"help and version", []string{"-version"}, []string{"--version"}},
		{"help", []string{"verify", "-help"}, []string{"verify", "--help"}},
		{"not a flag of the command", []string{"verify", "-chain", "b.zip"}, []string{"verify", "-chain", "b.zip"}},
		{"standard input", []string{"submit", "-chain", "c", "-"}, []string{"submit", "--chain", "c", "-"}},
		{"after --", []string{"submit", "-chain", "c", "--", "-batch"}, []string{"submit", "--chain", "c", "--", "-batch"}},
		{"flags after the argument", []string{"verify", "b.zip", "-format", "json"}, []string{"verify", "b.zip", "--format", "json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := normalizeArgs(newRoot(&app{}), tc.args)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("normalizeArgs(%q) = %q, want %q", tc.args, got, tc.want)
			}
		})
	}
	// And through the whole command: -format=json and -o act.
	dir := t.TempDir()
	key := filepath.Join(dir, "k.pem")
	code, out, errs := cli("keys", "generate", "-type", "p256", "-o", key, "-format=json")
	if code != 0 || !strings.Contains(out, `"type": "p256"`) {
		t.Fatalf("keys generate: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(key); err != nil {
		t.Fatal(err)
	}
}

// TestEveryCommandDocumented: every command has a one-line summary and an example, and its
// --help exits 0 with its usage on standard output.
func TestEveryCommandDocumented(t *testing.T) {
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			if s.Hidden {
				continue
			}
			walk(s)
		}
		if c.Hidden {
			return
		}
		n++
		path := strings.Fields(c.CommandPath())[1:]
		t.Run(strings.Join(append([]string{"evident"}, path...), " "), func(t *testing.T) {
			if c.Short == "" || !c.HasExample() {
				t.Errorf("summary %q, example %q", c.Short, c.Example)
			}
			code, out, errs := cli(append(path, "--help")...)
			if code != 0 || errs != "" || !strings.HasPrefix(out, "Usage: evident") || !strings.Contains(out, "Examples:") {
				t.Errorf("--help: exit %d\n%s\n%s", code, out, errs)
			}
		})
	}
	walk(newRoot(&app{}))
	if n < 25 {
		t.Fatalf("only %d commands", n)
	}
}

// TestCompletion: cobra's generator writes a completion script for bash, zsh and fish; the
// bash one parses (bash -n), and so do the zsh and fish ones where those shells are
// installed. The completion itself offers --format's values and file names for a BUNDLE.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			code, out, errs := cli("completion", shell)
			if code != 0 || errs != "" || len(out) < 1000 || !strings.Contains(out, "evident") {
				t.Fatalf("exit %d, %d bytes\n%s", code, len(out), errs)
			}
			bin, err := exec.LookPath(shell)
			if err != nil {
				t.Skipf("%s is not installed: the script was generated but not parsed", shell)
			}
			script := filepath.Join(t.TempDir(), "evident."+shell)
			if err := os.WriteFile(script, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			if b, err := exec.Command(bin, "-n", script).CombinedOutput(); err != nil {
				t.Fatalf("%s -n: %v\n%s", shell, err, b)
			}
		})
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
		not  []string
	}{
		{"verify --format", []string{"verify", "--format", ""}, []string{"text", "json", "html", ":4"}, nil},
		{"seal --format", []string{"seal", "--format", ""}, []string{"text", "json", ":4"}, []string{"html"}},
		{"keys generate --type", []string{"keys", "generate", "--type", ""}, []string{"ed25519", "p256"}, nil},
		{"a bundle: files", []string{"verify", ""}, []string{":0"}, nil},
		{"commands", []string{""}, []string{"verify", "replay", "completion", "misbehaviour"}, nil},
		{"subcommands", []string{"keys", ""}, []string{"generate", "rotate"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := cli(append([]string{"__complete"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("completion lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(out, w) {
					t.Errorf("completion holds %q:\n%s", w, out)
				}
			}
		})
	}
}
