// Command evident-load is Evident's load tool: it streams signed CHAP envelopes to a
// running evidentd over HTTP in batches, reports the accepted rate, and can seal and export
// the chains it wrote (to measure offline verification on a bundle of any size).
//
//	go run ./internal/cmd/evident-load -url http://127.0.0.1:8080 -n 1000000 -batch 5000 -export big.zip
//
// It only talks to the URL it is given (loopback in every documented use) and stops when the
// work is done or after -timeout.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/evident-log/evident/ledger/profile/chap/scenario"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "evidentd base URL")
	n := flag.Int("n", 100000, "envelopes per chain")
	batch := flag.Int("batch", 1000, "envelopes per request (JSON Lines); 1 sends single envelopes")
	chains := flag.Int("chains", 1, "chains written concurrently")
	prefix := flag.String("chain", "wsp_load", "chain id prefix")
	export := flag.String("export", "", "seal the first chain and export its bundle to this file")
	timeout := flag.Duration("timeout", 30*time.Minute, "give up after this long")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, *url, *n, *batch, *chains, *prefix, *export); err != nil {
		fmt.Fprintln(os.Stderr, "evident-load:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, base string, n, batch, chains int, prefix, export string) error {
	client := &http.Client{Timeout: 2 * time.Minute}
	var sent atomic.Int64
	start := time.Now()
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				s := sent.Load()
				fmt.Fprintf(os.Stderr, "\r%d envelopes, %.0f/s   ", s, float64(s)/time.Since(start).Seconds())
			}
		}
	}()
	errs := make([]error, chains)
	var wg sync.WaitGroup
	for c := range chains {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[c] = load(ctx, client, base, fmt.Sprintf("%s_%d", prefix, c), n, batch, &sent)
		}()
	}
	wg.Wait()
	close(stop)
	elapsed := time.Since(start)
	fmt.Fprintf(os.Stderr, "\r")
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	total := sent.Load()
	fmt.Printf("ingested %d envelopes in %d chain(s), batch %d: %.2fs, %.0f envelopes/s\n", total, chains, batch, elapsed.Seconds(), float64(total)/elapsed.Seconds())
	if export == "" {
		return nil
	}
	chain := prefix + "_0"
	t0 := time.Now()
	if err := post(ctx, client, base+"/v1/chains/"+chain+"/seal", "", nil); err != nil {
		return err
	}
	fmt.Printf("sealed %s in %v\n", chain, time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/export?chain="+chain, nil)
	resp, err := (&http.Client{Timeout: 30 * time.Minute}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("export: %s", resp.Status)
	}
	f, err := os.Create(export)
	if err != nil {
		return err
	}
	size, err := io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Printf("exported %s: %d bytes in %v\n", export, size, time.Since(t0).Round(time.Millisecond))
	return nil
}

func load(ctx context.Context, c *http.Client, base, chain string, n, batch int, sent *atomic.Int64) error {
	url := base + "/v1/chains/" + chain + "/entries"
	var buf bytes.Buffer
	count := 0
	flush := func() error {
		if count == 0 {
			return nil
		}
		ct := "application/jsonl"
		if count == 1 {
			ct = "application/json"
		}
		if err := post(ctx, c, url, ct, buf.Bytes()); err != nil {
			return err
		}
		sent.Add(int64(count))
		buf.Reset()
		count = 0
		return nil
	}
	_, err := scenario.Long(chain, n, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), func(raw []byte) error {
		if count > 0 {
			buf.WriteByte('\n')
		}
		buf.Write(raw)
		count++
		if count >= batch {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

func post(ctx context.Context, c *http.Client, url, ct string, body []byte) error {
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusOK:
			return nil
		case resp.StatusCode == http.StatusServiceUnavailable && attempt < 10:
			time.Sleep(time.Second) // pushback: honour Retry-After (1 s)
		default:
			return fmt.Errorf("POST %s: %s: %s", url, resp.Status, b)
		}
	}
}
