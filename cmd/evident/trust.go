package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/evident-log/evident/trustfile"
)

// trustPath is where an operator's trust file is published under its service URL.
const trustPath = "/.well-known/evident-trust"

// cmdTrust dispatches evident trust subcommands.
func cmdTrust(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if code, ok := subcommand(stdout, stderr, "evident trust", trustUsage, args, "fetch"); !ok {
		return code
	}
	return cmdTrustFetch(ctx, args[1:], stdout, stderr)
}

const trustUsage = `Usage: evident trust fetch URL [-o FILE] [-timeout D]

Downloads the trust file an operator publishes (URL/.well-known/evident-trust, or the full URL
of a trust file), checks it, prints its log origin, key ids and witnesses so you can compare
them with what the operator tells you out of band, and saves it for evident verify --trust.
`

// cmdTrustFetch downloads, checks, prints and saves an operator's trust file.
func cmdTrustFetch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("evident trust fetch", flag.ContinueOnError)
	fset.SetOutput(stderr)
	output := fset.String("o", "", "save the trust file here (default: <origin>.trust.json in the current directory)")
	timeout := fset.Duration("timeout", 30*time.Second, "give up after this long")
	force := fset.Bool("force", false, "replace a saved trust file whose content differs (the operator's keys or policy changed)")
	fset.Usage = func() {
		fmt.Fprintf(stderr, "%s\nFlags:\n", trustUsage)
		fset.PrintDefaults()
	}
	if code, done := parseArgs(fset, args); done {
		return code
	}
	if fset.NArg() == 0 {
		return usageErr(fset, "the URL of the service (or of its trust file) is missing")
	}
	if code, ok := checkArgs(fset, "URL"); !ok {
		return code
	}
	u, err := trustURL(fset.Arg(0))
	if err != nil {
		return usageErr(fset, "%v", err)
	}
	tf, raw, err := fetchTrustFile(ctx, u, *timeout)
	if err != nil {
		fmt.Fprintln(stderr, "evident trust fetch:", err)
		return exitFailure
	}
	path := *output
	if path == "" {
		path = trustFileName(tf.Origin)
	}
	fmt.Fprintf(stdout, "trust file from %s\n", u)
	for _, line := range tf.Summary() {
		fmt.Fprintf(stdout, "  %s\n", line)
	}
	switch old, err := os.ReadFile(path); {
	case err == nil && bytes.Equal(old, raw):
		fmt.Fprintf(stdout, "%s already holds this trust file: unchanged\n", path)
		return 0
	case err == nil && !*force:
		fmt.Fprintf(stderr, "evident trust fetch: %s holds a different trust file: the operator's keys or policy changed since it was saved; compare them, then use -force to replace it\n", path)
		return exitFailure
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		fmt.Fprintln(stderr, "evident trust fetch:", err)
		return exitFailure
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		fmt.Fprintln(stderr, "evident trust fetch:", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "saved to %s\ncompare the key ids above with the ones the operator gives you out of band, then: evident verify --trust %s BUNDLE\n", path, path)
	return 0
}

// trustURL is the trust file's URL: the argument itself when it names a trust file (its
// path ends in /.well-known/evident-trust or .json), else the argument + /.well-known/evident-trust.
func trustURL(arg string) (string, error) {
	u, err := url.Parse(arg)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%.200q is not an http(s) URL", arg)
	}
	if strings.HasSuffix(u.Path, trustPath) || strings.HasSuffix(u.Path, ".json") {
		return u.String(), nil
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + trustPath
	return u.String(), nil
}

// fetchTrustFile downloads a trust file and checks it; raw is the file as served.
func fetchTrustFile(ctx context.Context, u string, timeout time.Duration) (*trustfile.File, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, trustfile.MaxSize+1))
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	tf, err := trustfile.Parse(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s: %w", u, err)
	}
	return tf, raw, nil
}

// trustFileName derives a file name from a log origin: every character other than a letter,
// a digit, '.' or '-' becomes '_'.
func trustFileName(origin string) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, origin)
	return strings.Trim(name, "._") + ".trust.json"
}

// readTrustFile reads and checks a trust file given with --trust.
func readTrustFile(path string) (*trustfile.File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tf, err := trustfile.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tf, nil
}
