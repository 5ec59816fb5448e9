package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/evident-log/evident/trustfile"
)

// trustPath is where an operator's trust file is published under its service URL.
const trustPath = "/.well-known/evident-trust"

// newTrustCmd is the `evident trust` group.
func newTrustCmd(a *app) *cobra.Command {
	return group(a, &cobra.Command{
		Use:     "trust fetch URL [-o FILE] [--timeout D]",
		Short:   "Download an operator's trust file (URL/.well-known/evident-trust) to pin with verify --trust",
		Long:    trustLong,
		Example: "  evident trust fetch https://evident.example",
	}, newTrustFetchCmd(a))
}

const trustLong = `Downloads the trust file an operator publishes (URL/.well-known/evident-trust, or the full URL
of a trust file), checks it, prints its log origin, key ids and witnesses so you can compare
them with what the operator tells you out of band, and saves it for evident verify --trust.`

// newTrustFetchCmd is `evident trust fetch URL`.
func newTrustFetchCmd(a *app) *cobra.Command {
	var (
		format  formatFlag
		output  string
		timeout time.Duration
		force   bool
	)
	cmd := &cobra.Command{
		Use:   "fetch URL [-o FILE] [--timeout D] [--force]",
		Short: "Download, check, print and save an operator's trust file",
		Long:  trustLong,
		Example: `  evident trust fetch https://evident.example
  evident trust fetch https://evident.example -o operator.trust.json --format json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &usageError{msg: "the URL of the service (or of its trust file) is missing"}
			}
			return exactArgs("URL")(cmd, args)
		},
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	f := cmd.Flags()
	f.StringVarP(&output, "output", "o", "", "save the trust file here (default: <origin>.trust.json in the current directory)")
	f.DurationVar(&timeout, "timeout", 30*time.Second, "give up after this long")
	f.BoolVar(&force, "force", false, "replace a saved trust file whose content differs (the operator's keys or policy changed)")
	addFormat(cmd, &format)
	markFiles(cmd, "output")
	cmd.RunE = a.action(func(cmd *cobra.Command, args []string) int {
		return runTrustFetch(a.ctx, cmd, &format, args[0], output, timeout, force, a.stdout, a.stderr)
	})
	return cmd
}

// trustFetchOutput is what `evident trust fetch --format json` writes.
type trustFetchOutput struct {
	URL    string `json:"url"`
	File   string `json:"file"`
	Status string `json:"status"` // "saved" or "unchanged"
	Origin string `json:"origin"`
	// TrustFile is the trust file as the operator serves it.
	TrustFile json.RawMessage `json:"trust_file"`
}

// runTrustFetch downloads, checks, prints and saves an operator's trust file.
func runTrustFetch(ctx context.Context, cmd *cobra.Command, format *formatFlag, arg, output string, timeout time.Duration, force bool, stdout, stderr io.Writer) int {
	if code, ok := format.check(cmd); !ok {
		return code
	}
	u, err := trustURL(arg)
	if err != nil {
		return usageErr(cmd, "%v", err)
	}
	tf, raw, err := fetchTrustFile(ctx, u, timeout)
	if err != nil {
		fmt.Fprintln(stderr, "evident trust fetch:", err)
		return exitFailure
	}
	path := output
	if path == "" {
		path = trustFileName(tf.Origin)
	}
	out := trustFetchOutput{URL: u, File: path, Status: "saved", Origin: tf.Origin, TrustFile: raw}
	if !format.json() {
		fmt.Fprintf(stdout, "trust file from %s\n", u)
		for _, line := range tf.Summary() {
			fmt.Fprintf(stdout, "  %s\n", line)
		}
	}
	switch old, err := os.ReadFile(path); {
	case err == nil && bytes.Equal(old, raw):
		out.Status = "unchanged"
	case err == nil && !force:
		fmt.Fprintf(stderr, "evident trust fetch: %s holds a different trust file: the operator's keys or policy changed since it was saved; compare them, then use -force to replace it\n", path)
		return exitFailure
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		fmt.Fprintln(stderr, "evident trust fetch:", err)
		return exitFailure
	}
	if out.Status == "saved" {
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			fmt.Fprintln(stderr, "evident trust fetch:", err)
			return exitFailure
		}
	}
	switch {
	case format.json():
		err = writeJSON(stdout, out)
	case out.Status == "unchanged":
		_, err = fmt.Fprintf(stdout, "%s already holds this trust file: unchanged\n", path)
	default:
		_, err = fmt.Fprintf(stdout, "saved to %s\ncompare the key ids above with the ones the operator gives you out of band, then: evident verify --trust %s BUNDLE\n", path, path)
	}
	if err != nil {
		fmt.Fprintln(stderr, "evident trust fetch:", err)
		return exitFailure
	}
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
