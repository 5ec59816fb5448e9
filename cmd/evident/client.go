package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// serviceFlags are the flags of the commands that talk to an evidentd.
type serviceFlags struct {
	url     string
	token   string
	timeout time.Duration
}

func (s *serviceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.url, "url", envOr("EVIDENT_URL", "http://127.0.0.1:8080"), "evidentd base URL (env EVIDENT_URL)")
	fs.StringVar(&s.token, "token", os.Getenv("EVIDENT_TOKEN"), "bearer token for writes (env EVIDENT_TOKEN); none: evidentd accepts writes from loopback only")
	fs.DurationVar(&s.timeout, "timeout", 2*time.Minute, "give up on one request after this long")
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// do sends one request and returns the body of a 2xx answer; anything else becomes an error
// carrying the problem detail's code and text.
func (s *serviceFlags) do(ctx context.Context, method, path, contentType string, body []byte) ([]byte, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(s.url, "/")+path, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode/100 != 2 {
		var p struct {
			Code   string `json:"code"`
			Detail string `json:"detail"`
			Index  *int   `json:"index"`
		}
		if json.Unmarshal(b, &p) == nil && p.Code != "" {
			if p.Index != nil {
				return nil, nil, fmt.Errorf("%s: %s (record %d of the request): %s", resp.Status, p.Code, *p.Index, p.Detail)
			}
			return nil, nil, fmt.Errorf("%s: %s: %s", resp.Status, p.Code, p.Detail)
		}
		return nil, nil, fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	return b, resp.Header, nil
}

// cmdSubmit streams records from files to a chain in batches.
func cmdSubmit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("evident submit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var svc serviceFlags
	svc.register(fs)
	chain := fs.String("chain", "", "chain id (CHAP: the workspace) — required")
	profile := fs.String("profile", "", "profile of a new chain (default: evidentd's, chap/0.3)")
	batch := fs.Int("batch", 1000, "records per request (each request is atomic)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: evident submit -chain C [flags] FILE...\n\nSends records to evidentd: each FILE (or - for standard input) holds one JSON record, a JSON\narray of records, or JSON Lines. Records go in order, in atomic batches; the first refusal stops\nthe run and names the record.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if code, done := parseArgs(fs, args); done {
		return code
	}
	if *chain == "" || fs.NArg() == 0 || *batch < 1 {
		fs.Usage()
		return exitUsage
	}
	var records [][]byte
	for _, name := range fs.Args() {
		recs, err := readRecords(name)
		if err != nil {
			fmt.Fprintln(stderr, "evident submit:", err)
			return exitFailure
		}
		records = append(records, recs...)
	}
	path := "/v1/chains/" + url.PathEscape(*chain) + "/entries"
	if *profile != "" {
		path += "?profile=" + url.QueryEscape(*profile)
	}
	sent := 0
	var last struct {
		Size uint64 `json:"size"`
		Head string `json:"head"`
	}
	for sent < len(records) {
		end := min(sent+*batch, len(records))
		b, _, err := svc.do(ctx, http.MethodPost, path, "application/jsonl", bytes.Join(records[sent:end], []byte("\n")))
		if err != nil {
			fmt.Fprintf(stderr, "evident submit: records %d..%d: %v\n", sent, end-1, err)
			fmt.Fprintf(stderr, "%d record(s) accepted before the refusal\n", sent)
			return exitBroken
		}
		json.Unmarshal(b, &last)
		sent = end
	}
	fmt.Fprintf(stdout, "%d record(s) accepted into %s: size %d, head %s\n", sent, *chain, last.Size, last.Head)
	return 0
}

// readRecords reads one JSON value, a JSON array or JSON Lines from a file or standard input.
func readRecords(name string) ([][]byte, error) {
	var b []byte
	var err error
	if name == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, err
	}
	t := bytes.TrimSpace(b)
	switch {
	case len(t) == 0:
		return nil, fmt.Errorf("%s: empty", name)
	case t[0] == '[':
		var arr []json.RawMessage
		if err := json.Unmarshal(t, &arr); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out := make([][]byte, len(arr))
		for i, r := range arr {
			out[i] = r
		}
		return out, nil
	case json.Valid(t):
		return [][]byte{t}, nil
	}
	var out [][]byte
	for i, line := range bytes.Split(t, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if !json.Valid(line) {
			return nil, fmt.Errorf("%s: line %d is not JSON", name, i+1)
		}
		out = append(out, line)
	}
	return out, nil
}

// cmdSeal asks evidentd to seal a chain now and prints the seal.
func cmdSeal(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("evident seal", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var svc serviceFlags
	svc.register(fs)
	chain := fs.String("chain", "", "chain id — required")
	closeChain := fs.Bool("close", false, "close the chain: nothing is accepted after this seal")
	out := fs.String("o", "", "also write the transparent seal statement (COSE, receipt in header 394) to this file")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: evident seal -chain C [flags]\n\nSeals the chain's head and Merkle root into the transparency log and waits for the receipt.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if code, done := parseArgs(fs, args); done {
		return code
	}
	if *chain == "" || fs.NArg() != 0 {
		fs.Usage()
		return exitUsage
	}
	path := "/v1/chains/" + url.PathEscape(*chain) + "/seal"
	if *closeChain {
		path += "?close=true"
	}
	b, _, err := svc.do(ctx, http.MethodPost, path, "", nil)
	if err != nil {
		fmt.Fprintln(stderr, "evident seal:", err)
		return exitFailure
	}
	var r struct {
		Seal struct {
			Size   uint64 `json:"size"`
			Root   string `json:"root"`
			Closed bool   `json:"closed"`
		} `json:"seal"`
		N           uint64 `json:"n"`
		LogIndex    uint64 `json:"log_index"`
		Transparent []byte `json:"transparent_statement"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		fmt.Fprintln(stderr, "evident seal:", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "seal %d of %s: size %d, root %s, closed %v, log index %d\n", r.N, *chain, r.Seal.Size, r.Seal.Root, r.Seal.Closed, r.LogIndex)
	if *out != "" {
		if err := os.WriteFile(*out, r.Transparent, 0o644); err != nil {
			fmt.Fprintln(stderr, "evident seal:", err)
			return exitFailure
		}
	}
	return 0
}

// cmdExport downloads a bundle.
func cmdExport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("evident export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var svc serviceFlags
	svc.register(fs)
	chain := fs.String("chain", "", "chain id — required")
	task := fs.String("task", "", "export only this task's case slice (CHAP task_id)")
	logical := fs.String("logical-id", "", "export only this artefact's case slice (CHAP logical_id)")
	out := fs.String("o", "", "bundle file to write (default <chain>.evident.zip)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: evident export -chain C [flags]\n\nDownloads the offline bundle of a chain (or of one case) for evident verify.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if code, done := parseArgs(fs, args); done {
		return code
	}
	if *chain == "" || fs.NArg() != 0 {
		fs.Usage()
		return exitUsage
	}
	q := url.Values{"chain": {*chain}}
	if *task != "" {
		q.Set("task", *task)
	}
	if *logical != "" {
		q.Set("logical_id", *logical)
	}
	svc.timeout = max(svc.timeout, 30*time.Minute) // a large chain takes a while to stream
	b, _, err := svc.do(ctx, http.MethodGet, "/v1/export?"+q.Encode(), "", nil)
	if err != nil {
		fmt.Fprintln(stderr, "evident export:", err)
		return exitFailure
	}
	name := *out
	if name == "" {
		name = strings.NewReplacer("/", "_", ":", "_").Replace(*chain) + ".evident.zip"
	}
	if err := os.WriteFile(name, b, 0o644); err != nil {
		fmt.Fprintln(stderr, "evident export:", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "wrote %s (%d bytes); check it with: evident verify %s\n", name, len(b), name)
	return 0
}
