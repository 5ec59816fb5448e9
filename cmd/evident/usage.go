package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// isHelpFlag reports whether a is one of the spellings of the help flag.
func isHelpFlag(a string) bool {
	switch a {
	case "-h", "--h", "-help", "--help":
		return true
	}
	return false
}

// helpRequested reports whether a command's arguments ask for its help (before any "--").
func helpRequested(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if isHelpFlag(a) {
			return true
		}
	}
	return false
}

// synopsis is the one-line usage of a command, by its flag set's name.
func synopsis(name string) string {
	switch name {
	case "evident verify":
		return "evident verify [flags] BUNDLE"
	case "evident replay":
		return "evident replay [-task T] [-format text|json] [flags] BUNDLE"
	case "evident submit":
		return "evident submit -chain C [flags] FILE..."
	case "evident import":
		return "evident import -chain WORKSPACE [-describe FILE] [flags] FILE..."
	case "evident seal":
		return "evident seal -chain C [-close] [-o FILE] [flags]"
	case "evident export":
		return "evident export -chain C [-task T | -logical-id L] [-o FILE] [flags]"
	case "evident receipt verify":
		return "evident receipt verify --key K (--statement S --receipt R | --transparent T | --consistency R ...)"
	case "evident cop-ledger verify":
		return "evident cop-ledger verify LEDGER --key KEY [--key KEY...] [--events FILE] [--allow-unsigned]"
	case "evident statement keygen":
		return "evident statement keygen [-type ed25519|p256] -o FILE"
	case "evident statement policy":
		return "evident statement policy -iss ISS -key FILE [-content-type CT]... [-o FILE]"
	case "evident statement sign":
		return "evident statement sign -key FILE -iss ISS -sub SUB -content-type CT [-o FILE] [PAYLOAD | -]"
	case "evident misbehaviour check":
		return "evident misbehaviour check FILE... (--log-key KEY... | --trust FILE) [--format text|json]"
	case "evident misbehaviour show":
		return "evident misbehaviour show FILE..."
	case "evident trust fetch":
		return "evident trust fetch URL [-o FILE] [-timeout D] [-force]"
	case "evident keys generate":
		return "evident keys generate [-type ed25519|p256] -o FILE"
	case "evident keys show":
		return "evident keys show FILE"
	case "evident keys thumbprint":
		return "evident keys thumbprint FILE"
	case "evident keys rotate":
		return "evident keys rotate [-data DIR | -key FILE] [-type ed25519|p256]"
	case "evident demo":
		return "evident demo [flags]"
	}
	return name + " [flags]"
}

// usageErr reports a usage error of the command fs parses: what is wrong, the command's
// one-line usage and where to find the rest. It returns exitUsage.
func usageErr(fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(fs.Output(), "%s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	shortUsage(fs)
	return exitUsage
}

// shortUsage writes a command's one-line usage and how to get its flags.
func shortUsage(fs *flag.FlagSet) {
	fmt.Fprintf(fs.Output(), "usage: %s\nRun '%s --help' for the flags.\n", synopsis(fs.Name()), fs.Name())
}

// checkArgs reports a usage error unless the command got exactly the positional arguments
// it names (e.g. "BUNDLE"): none missing, none extra.
func checkArgs(fs *flag.FlagSet, names ...string) (int, bool) {
	switch {
	case fs.NArg() < len(names):
		return usageErr(fs, "missing %s argument", strings.Join(names[fs.NArg():], " ")), false
	case fs.NArg() > len(names):
		return usageErr(fs, "unexpected argument(s) %q", fs.Args()[len(names):]), false
	}
	return 0, true
}

// requireFlags reports a usage error naming, in the order given, the flags of fs that are
// required and were left empty.
func requireFlags(fs *flag.FlagSet, names ...string) (int, bool) {
	var empty []string
	for _, n := range names {
		if fs.Lookup(n).Value.String() == "" {
			empty = append(empty, "-"+n)
		}
	}
	if len(empty) > 0 {
		return usageErr(fs, "missing %s", strings.Join(empty, ", ")), false
	}
	return 0, true
}

// subcommand checks the first argument of a command that has subcommands (evident keys
// generate, evident receipt verify): help writes the command's usage to stdout (ok false,
// code 0); a missing or unknown subcommand is a usage error.
func subcommand(stdout, stderr io.Writer, name, usage string, args []string, known ...string) (int, bool) {
	switch {
	case len(args) == 0:
		fmt.Fprintf(stderr, "%s: missing subcommand (%s)\n\n%s", name, strings.Join(known, ", "), usage)
		return exitUsage, false
	case isHelpFlag(args[0]) || args[0] == "help":
		fmt.Fprint(stdout, usage)
		return 0, false
	case !slices.Contains(known, args[0]):
		fmt.Fprintf(stderr, "%s: unknown subcommand %q (want %s)\n\n%s", name, args[0], strings.Join(known, ", "), usage)
		return exitUsage, false
	}
	return 0, true
}
