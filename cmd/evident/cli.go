package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/evident-log/evident/internal/buildinfo"
)

// app is what one invocation of evident shares between its commands: where it writes and
// the exit code the command that ran chose. Each run builds its own command tree around a
// fresh app, so that in-process runs (the tests) share nothing.
type app struct {
	ctx            context.Context
	stdout, stderr io.Writer
	code           int
}

// action adapts a command body that returns an exit code to cobra's RunE: the code is kept
// in the app, and cobra sees an error only for what it found itself (a usage error).
func (a *app) action(f func(cmd *cobra.Command, args []string) int) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		a.code = f(cmd, args)
		return nil
	}
}

// rootLong is evident's description and the exit code table every command shares
// (docs/cli.md defines it).
const rootLong = `Evident's offline verifier and toolkit: verify exported bundles with no network, replay CHAP
chains, talk to an evidentd (submit, import, seal, export), check receipts and proofs of
misbehaviour, manage keys and make SCITT statements.

Exit codes (every command):
  0   verified, or the command did what was asked (help included)
  1   broken: the evidence is wrong (a check failed, a record was refused, the bundle is ambiguous,
      a proof of misbehaviour holds)
  2   not evaluated: nothing broken, but something could not be checked
  3   could not run: a file unreadable or not a bundle at all, evidentd unreachable
      or failing, an interrupted run
  64  usage: an unknown command or flag, a missing or malformed argument

Every command that reports something takes --format text|json; in JSON it writes one object
on standard output (docs/cli.md). Errors go to standard error in either format.`

// newRoot builds evident's command tree, writing to a's streams.
func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "evident <command> [flags]",
		Short:         "Evident's offline verifier and toolkit",
		Long:          rootLong,
		Example:       "  evident verify --trust operator.trust.json case.evident.zip\n  evident demo\n  evident help verify",
		Version:       buildinfo.Read().Program("evident"),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args[0])
			}
			return nil
		},
		RunE: a.action(func(cmd *cobra.Command, _ []string) int {
			writeHelp(cmd.ErrOrStderr(), cmd)
			return exitUsage
		}),
		DisableAutoGenTag: true, // the generated reference stays the same from one day to the next
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetHelpFunc(func(cmd *cobra.Command, _ []string) { writeHelp(cmd.OutOrStdout(), cmd) })
	root.SetUsageFunc(func(cmd *cobra.Command) error { shortUsage(cmd); return nil })
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return flagError(err) })
	root.AddCommand(
		newVerifyCmd(a), newReplayCmd(a), newTrustCmd(a), newReceiptCmd(a), newStatementCmd(a),
		newKeysCmd(a), newCOPLedgerCmd(a), newMisbehaviourCmd(a), newSubmitCmd(a), newImportCmd(a),
		newSealCmd(a), newExportCmd(a), newVersionCmd(a), newDemoCmd(a),
	)
	root.SetHelpCommand(newHelpCmd(a))
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	root.InitDefaultVersionFlag()
	if c := child(root, "completion"); c != nil {
		// cobra's generator, run alone or with an unknown shell a usage error like any group.
		c.Example = "  source <(evident completion bash)\n  evident completion zsh > \"${fpath[1]}/_evident\"\n  evident completion fish > ~/.config/fish/completions/evident.fish"
		subs := c.Commands()
		for _, s := range subs {
			s.Example = "  evident completion " + s.Name() + " > evident." + s.Name()
		}
		c.RemoveCommand(subs...)
		group(a, c, subs...)
	}
	return root
}

// run runs evident with args (os.Args[1:]) and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{ctx: ctx, stdout: stdout, stderr: stderr}
	root := newRoot(a)
	root.SetArgs(normalizeArgs(root, args))
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil {
		if cmd == nil {
			cmd = root
		}
		return usageErr(cmd, "%v", err)
	}
	return a.code
}

// usageError is a usage error found before a command runs: an argument missing or extra, a
// command or a flag unknown.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// unknownCommand is the usage error of a command or subcommand name that does not exist,
// with the names that come close.
func unknownCommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q", name)
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, ", "))
	}
	return &usageError{msg: msg}
}

// flagError rewords pflag's errors in the words of Go's flag package, which evidentd and
// evident-witness still speak: one wording for an unknown flag across Evident's programs.
func flagError(err error) error {
	var ne *pflag.NotExistError
	if errors.As(err, &ne) {
		name := ne.GetSpecifiedName()
		if name == "" {
			name = ne.GetSpecifiedShortnames()
		}
		return &usageError{msg: "flag provided but not defined: -" + name}
	}
	return err
}

// usageErr reports a usage error of cmd: what is wrong, the command's one-line usage and
// where to find the rest, on standard error. It returns exitUsage.
func usageErr(cmd *cobra.Command, format string, args ...any) int {
	fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", cmd.CommandPath(), fmt.Sprintf(format, args...))
	shortUsage(cmd)
	return exitUsage
}

// shortUsage writes a command's one-line usage and how to get its flags, on standard error.
func shortUsage(cmd *cobra.Command) {
	fmt.Fprintf(cmd.ErrOrStderr(), "usage: %s\nRun '%s --help' for the flags.\n", cmd.UseLine(), cmd.CommandPath())
}

// writeHelp writes a command's full help: its usage line (a subcommand's after its group's),
// what it does, its subcommands, examples and typed flags.
func writeHelp(w io.Writer, cmd *cobra.Command) {
	var b strings.Builder
	if p := cmd.Parent(); p != nil && p.HasParent() {
		fmt.Fprintf(&b, "Usage: %s\n       %s\n", p.UseLine(), cmd.UseLine())
	} else {
		fmt.Fprintf(&b, "Usage: %s\n", cmd.UseLine())
	}
	desc := cmd.Long
	if desc == "" {
		desc = cmd.Short
	}
	if desc != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimRight(desc, "\n"))
	}
	if cmd.HasAvailableSubCommands() {
		b.WriteString("\nCommands:\n")
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() || c.Name() == "help" {
				fmt.Fprintf(&b, "  %-*s %s\n", cmd.NamePadding(), c.Name(), c.Short)
			}
		}
	}
	if cmd.HasExample() {
		fmt.Fprintf(&b, "\nExamples:\n%s\n", strings.TrimRight(cmd.Example, "\n"))
	}
	if cmd.HasAvailableLocalFlags() {
		fmt.Fprintf(&b, "\nFlags:\n%s", cmd.LocalFlags().FlagUsages())
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\nRun '%s <command> --help' (or '%s <command>') for a command's flags.\n", cmd.CommandPath(), rootName(cmd))
	}
	io.WriteString(w, b.String())
}

// rootName is "evident help" with the path of cmd's group: "evident help keys".
func rootName(cmd *cobra.Command) string {
	path := strings.Fields(cmd.CommandPath())
	return strings.Join(append([]string{path[0], "help"}, path[1:]...), " ")
}

// newHelpCmd is `evident help [command...]`: a command's help on standard output (exit 0),
// or a usage error for a command that does not exist.
func newHelpCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "help [command]",
		Short:   "Help about any command",
		Long:    "Writes the help of a command (evident help keys generate), or evident's own, to standard output.",
		Example: "  evident help\n  evident help verify\n  evident help keys generate",
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cmd, _, err := c.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, s := range cmd.Commands() {
				if s.IsAvailableCommand() && strings.HasPrefix(s.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(s.Name(), s.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: a.action(func(c *cobra.Command, args []string) int {
			cmd := c.Root()
			for _, name := range args {
				next := child(cmd, name)
				if next == nil {
					return usageErr(c, "%v", unknownCommand(cmd, name))
				}
				cmd = next
			}
			writeHelp(c.OutOrStdout(), cmd)
			return 0
		}),
	}
}

// child is cmd's subcommand called name (or one of its aliases), nil if none is.
func child(cmd *cobra.Command, name string) *cobra.Command {
	for _, c := range cmd.Commands() {
		if c.Name() == name || c.HasAlias(name) {
			return c
		}
	}
	return nil
}

// normalizeArgs rewrites the single-dash long flags users and scripts have always written
// (evident submit -chain C, -format json, -quiet, -help, -version) as the double-dash ones
// cobra parses, and a double-dash one-letter shorthand (--o FILE, --q, --h) as a single-dash
// one. Only names that are flags of the command the arguments name are rewritten, so real
// shorthands (-o, -q, -h) and positional arguments (a file called -x, "-" for standard input)
// stay as they are, and a flag's value is never taken for a flag. Everything after "--" is
// left alone.
func normalizeArgs(root *cobra.Command, args []string) []string {
	cmd, i := root, 0
	for ; i < len(args); i++ {
		next := child(cmd, args[i])
		if next == nil {
			break
		}
		cmd = next
	}
	cmd.InitDefaultHelpFlag()
	cmd.InitDefaultVersionFlag()
	lookup := func(name string) *pflag.Flag {
		if f := cmd.Flags().Lookup(name); f != nil {
			return f
		}
		return cmd.InheritedFlags().Lookup(name)
	}
	short := func(name string) *pflag.Flag {
		if len(name) != 1 {
			return nil
		}
		return cmd.Flags().ShorthandLookup(name)
	}
	out := slices.Clone(args[:i])
	for ; i < len(args); i++ {
		a := args[i]
		var f *pflag.Flag
		hasValue := false
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case strings.HasPrefix(a, "--"):
			name, _, eq := strings.Cut(a[2:], "=")
			hasValue = eq
			if f = lookup(name); f == nil {
				if f = short(name); f != nil {
					a = a[1:] // --o FILE: the shorthand -o
				}
			}
		case len(a) > 2 && a[0] == '-':
			name, _, eq := strings.Cut(a[1:], "=")
			hasValue = eq
			if f = lookup(name); f != nil {
				a = "-" + a // -chain C: --chain C
			}
		case len(a) == 2 && a[0] == '-':
			f = short(a[1:])
		}
		out = append(out, a)
		if f != nil && !hasValue && f.NoOptDefVal == "" && i+1 < len(args) {
			out = append(out, args[i+1]) // the flag's value, whatever it looks like
			i++
		}
	}
	return out
}

// exactArgs returns a cobra.PositionalArgs that wants exactly the named arguments (e.g. "BUNDLE"):
// none missing, none extra.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		switch {
		case len(args) < len(names):
			return &usageError{msg: fmt.Sprintf("missing %s argument", strings.Join(names[len(args):], " "))}
		case len(args) > len(names):
			return &usageError{msg: fmt.Sprintf("unexpected argument(s) %q", args[len(names):])}
		}
		return nil
	}
}

// minArgs returns a cobra.PositionalArgs that wants at least one argument; missing says
// what the argument is.
func minArgs(missing string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) == 0 {
			return &usageError{msg: missing}
		}
		return nil
	}
}

// group makes a command that only holds subcommands (evident keys, receipt, …): run alone
// or with an unknown subcommand it is a usage error that shows its help on standard error;
// "evident keys help" is its help.
func group(a *app, cmd *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	var names []string
	for _, s := range subs {
		names = append(names, s.Name())
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.ValidArgsFunction = cobra.NoFileCompletions
	cmd.RunE = a.action(func(c *cobra.Command, args []string) int {
		switch {
		case len(args) == 0:
			fmt.Fprintf(c.ErrOrStderr(), "%s: missing subcommand (%s)\n\n", c.CommandPath(), strings.Join(names, ", "))
		case args[0] == "help":
			writeHelp(c.OutOrStdout(), c)
			return 0
		default:
			fmt.Fprintf(c.ErrOrStderr(), "%s: unknown subcommand %q (want %s)\n\n", c.CommandPath(), args[0], strings.Join(names, ", "))
		}
		writeHelp(c.ErrOrStderr(), c)
		return exitUsage
	})
	cmd.AddCommand(subs...)
	return cmd
}

// formatFlag is the --format flag of a command that reports something.
type formatFlag struct {
	value   string
	allowed []string
}

// addFormat declares --format on cmd, text by default, completing to the allowed values.
func addFormat(cmd *cobra.Command, f *formatFlag, allowed ...string) {
	if len(allowed) == 0 {
		allowed = []string{"text", "json"}
	}
	f.allowed = allowed
	cmd.Flags().StringVar(&f.value, "format", "text", "output format: "+strings.Join(allowed, ", "))
	cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(allowed, cobra.ShellCompDirectiveNoFileComp))
}

// check reports a usage error unless the format is one of the allowed ones.
func (f *formatFlag) check(cmd *cobra.Command) (int, bool) {
	if slices.Contains(f.allowed, f.value) {
		return 0, true
	}
	last := len(f.allowed) - 1
	want := strings.Join(f.allowed[:last], ", ") + " or " + f.allowed[last]
	return usageErr(cmd, "-format must be %s, not %q", want, f.value), false
}

// json reports whether the output is JSON.
func (f *formatFlag) json() bool { return f.value == "json" }

// writeJSON writes v, one indented JSON object and a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// deprecatedAlias hides an old flag kept for scripts and warns on standard error when it is
// used (pflag's own warning would go to standard output, into a JSON report).
func deprecatedAlias(cmd *cobra.Command, name, instead string) {
	cmd.Flags().MarkHidden(name)
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if c.Flags().Changed(name) {
			fmt.Fprintf(c.ErrOrStderr(), "%s: --%s is deprecated: use %s\n", c.CommandPath(), name, instead)
		}
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}

// fileArgs completes positional arguments with file names (BUNDLE, FILE…).
func fileArgs(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveDefault
}

// newVersionCmd is `evident version`: the build, as --version prints it, or as JSON.
func newVersionCmd(a *app) *cobra.Command {
	var format formatFlag
	cmd := &cobra.Command{
		Use:               "version",
		Short:             "Print the build: module version, VCS revision and time, Go version (also --version)",
		Example:           "  evident version\n  evident --version\n  evident version --format json",
		Args:              exactArgs(),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: a.action(func(cmd *cobra.Command, _ []string) int {
			if code, ok := format.check(cmd); !ok {
				return code
			}
			info := buildinfo.Read()
			if format.json() {
				if err := writeJSON(a.stdout, versionOutput{Program: "evident", Info: info}); err != nil {
					fmt.Fprintln(a.stderr, "evident version:", err)
					return exitFailure
				}
				return 0
			}
			fmt.Fprintln(a.stdout, info.Program("evident"))
			return 0
		}),
	}
	addFormat(cmd, &format)
	return cmd
}

// versionOutput is what `evident version --format json` writes.
type versionOutput struct {
	Program string `json:"program"`
	buildinfo.Info
}
