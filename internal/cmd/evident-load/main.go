// Command evident-load is Evident's load tool: it sends signed CHAP envelopes to evidentd
// over HTTP in batches, reports the accepted rate, and can seal and export the chains it
// wrote (to measure offline verification on a bundle of any size).
//
//	go run ./internal/cmd/evident-load -url http://127.0.0.1:8080 -n 1000000 -batch 5000 -export big.zip
//
// With -rate R it runs open loop instead (single envelopes, -batch 1): it signs every envelope
// first, then schedules request k at k/R seconds after the start, on chain k mod -chains
// (round robin), and reports the achieved rate, the latency percentiles (p50, p90, p99, p99.9,
// max), each measured from the request's scheduled start to its answer, and how many requests
// started more than 1 ms late. A chain has at most one request in flight (its envelopes are
// hash-chained), so a chain whose answer comes late starts its next request late, and that
// wait counts in the next request's latency: there is no coordinated omission.
//
//	go run ./internal/cmd/evident-load -url http://127.0.0.1:8080 -batch 1 -chains 64 -n 2000 -rate 4000
//
// Given several -url values (replicas of one distributed deployment), it sends each request
// to the next replica in turn and on to the others when one does not answer. Given -db-dsn
// and -cpu, it also reports what the run cost per envelope and per request: the database
// server's statements, rows and fsyncs (SHOW GLOBAL STATUS before and after the run) and the
// CPU time of the named processes (/proc/<pid>/stat, Linux).
//
// It only talks to the URLs and the database it is given (loopback in every documented use),
// makes a bounded number of attempts per request, and stops when the work is done or after
// -timeout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// config is one run of the load tool.
type config struct {
	urls    []string // evidentd replicas
	n       int      // envelopes per chain
	batch   int      // envelopes per request
	chains  int      // chains written concurrently
	prefix  string   // chain id prefix
	export  string   // seal the first chain and export its bundle here ("": no)
	prepare bool     // sign every envelope before the clock starts
	rate    float64  // envelopes offered a second, open loop (0: closed loop)
	dbDSN   string   // database whose global status counters are reported ("": none)
	procs   []proc   // processes whose CPU time is reported

	out      io.Writer // results
	progress io.Writer // a progress line every two seconds (nil: none)
}

func main() {
	cfg := config{out: os.Stdout, progress: os.Stderr}
	flag.Func("url", "evidentd base URL; repeat (or separate with commas) for several replicas (default http://127.0.0.1:8080)", func(s string) error {
		for u := range strings.SplitSeq(s, ",") {
			if u = strings.TrimSpace(u); u != "" {
				cfg.urls = append(cfg.urls, strings.TrimRight(u, "/"))
			}
		}
		return nil
	})
	flag.IntVar(&cfg.n, "n", 100000, "envelopes per chain")
	flag.IntVar(&cfg.batch, "batch", 1000, "envelopes per request (JSON Lines); 1 sends single envelopes")
	flag.IntVar(&cfg.chains, "chains", 1, "chains written concurrently")
	flag.StringVar(&cfg.prefix, "chain", "wsp_load", "chain id prefix")
	flag.StringVar(&cfg.export, "export", "", "seal the first chain and export its bundle to this file")
	flag.BoolVar(&cfg.prepare, "prepare", false, "sign every envelope before the clock starts, so the rate is the service's alone (holds the whole load in memory)")
	flag.Float64Var(&cfg.rate, "rate", 0, "open loop: offer this many envelopes a second, round robin over the chains, and report the latency from each request's scheduled start (needs -batch 1; signs before the clock, as -prepare)")
	flag.StringVar(&cfg.dbDSN, "db-dsn", "", "MySQL-compatible server (go-sql-driver DSN) whose SHOW GLOBAL STATUS counters are reported per envelope")
	flag.Func("cpu", "NAME=PID: report the CPU time of process PID per envelope under NAME; repeat (one name may sum several processes)", func(s string) error {
		p, err := parseProc(s)
		if err == nil {
			cfg.procs = append(cfg.procs, p)
		}
		return err
	})
	timeout := flag.Duration("timeout", 30*time.Minute, "give up after this long")
	flag.Parse()
	if len(cfg.urls) == 0 {
		cfg.urls = []string{"http://127.0.0.1:8080"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "evident-load:", err)
		os.Exit(1)
	}
}

// parseProc reads a -cpu value, NAME=PID.
func parseProc(s string) (proc, error) {
	name, pid, ok := strings.Cut(s, "=")
	n, err := strconv.Atoi(pid)
	if !ok || name == "" || err != nil || n <= 0 {
		return proc{}, fmt.Errorf("-cpu %q: want NAME=PID", s)
	}
	return proc{name: name, pid: n}, nil
}

// run sends the load, then reports the rate and, when asked, the cost and the export.
func run(ctx context.Context, cfg config) error {
	if cfg.n <= 0 || cfg.batch <= 0 || cfg.chains <= 0 || len(cfg.urls) == 0 {
		return errors.New("-n, -batch and -chains must be positive and at least one -url given")
	}
	if cfg.rate < 0 || cfg.rate > 0 && cfg.batch != 1 {
		return errors.New("-rate must be positive and needs -batch 1")
	}
	rs := newReplicas(cfg.urls, cfg.chains)
	pr, err := openProbe(cfg.dbDSN, cfg.procs)
	if err != nil {
		return err
	}
	defer pr.close()
	var work []*chainLoad
	if cfg.prepare || cfg.rate > 0 {
		if work, err = prepareAll(cfg); err != nil {
			return err
		}
	}
	before, err := pr.sample(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	var sent int64
	var open openLoop
	if cfg.rate > 0 {
		open, err = sendOpen(ctx, cfg, rs, work)
		sent = int64(open.requests)
	} else {
		sent, err = send(ctx, cfg, rs, work)
	}
	elapsed := time.Since(start)
	if err != nil {
		return err
	}
	after, err := pr.sample(ctx)
	if err != nil {
		return err
	}
	if cfg.rate > 0 {
		open.report(cfg.out, cfg.rate, cfg.chains)
	}
	fmt.Fprintf(cfg.out, "ingested %d envelopes in %d chain(s), batch %d, %d replica(s), %d requests: %.2fs, %.0f envelopes/s; %d bytes of request bodies, %.0f an envelope\n",
		sent, cfg.chains, cfg.batch, len(cfg.urls), rs.requests.Load(), elapsed.Seconds(), float64(sent)/elapsed.Seconds(),
		rs.bytes.Load(), float64(rs.bytes.Load())/float64(max(sent, 1)))
	if f := rs.failovers.Load(); f > 0 {
		fmt.Fprintf(cfg.out, "failovers: %d attempts went on to another replica or were retried\n", f)
	}
	report(cfg.out, before, after, sent, rs.requests.Load())
	if cfg.export == "" {
		return nil
	}
	return sealAndExport(ctx, cfg.out, rs, cfg.prefix+"_0", cfg.export)
}

// send writes every chain's envelopes concurrently, each chain's requests in order, and
// returns how many envelopes were accepted.
func send(ctx context.Context, cfg config, rs *replicas, work []*chainLoad) (int64, error) {
	var sent atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	if cfg.progress != nil {
		go showProgress(cfg.progress, &sent, stop)
	}
	errs := make([]error, cfg.chains)
	var wg sync.WaitGroup
	for c := range cfg.chains {
		wg.Go(func() {
			chain := fmt.Sprintf("%s_%d", cfg.prefix, c)
			deliver := func(body []byte, count int) error {
				if err := rs.post(ctx, "/v1/chains/"+chain+"/entries", contentType(count), body); err != nil {
					return err
				}
				sent.Add(int64(count))
				return nil
			}
			if work != nil {
				errs[c] = work[c].each(deliver)
				return
			}
			errs[c] = generate(chain, cfg.n, cfg.batch, deliver)
		})
	}
	wg.Wait()
	return sent.Load(), errors.Join(errs...)
}

// showProgress prints the count and rate so far every two seconds until stop is closed.
func showProgress(w io.Writer, sent *atomic.Int64, stop <-chan struct{}) {
	start := time.Now()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			fmt.Fprint(w, "\r")
			return
		case <-t.C:
			s := sent.Load()
			fmt.Fprintf(w, "\r%d envelopes, %.0f/s   ", s, float64(s)/time.Since(start).Seconds())
		}
	}
}

// sealAndExport seals chain and writes its bundle to file.
func sealAndExport(ctx context.Context, out io.Writer, rs *replicas, chain, file string) error {
	t0 := time.Now()
	if err := rs.post(ctx, "/v1/chains/"+chain+"/seal", "", nil); err != nil {
		return err
	}
	fmt.Fprintf(out, "sealed %s in %v\n", chain, time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	resp, err := rs.get(ctx, "/v1/export?chain="+chain)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("export: %s", resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	size, err := io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	fmt.Fprintf(out, "exported %s: %d bytes in %v\n", file, size, time.Since(t0).Round(time.Millisecond))
	return nil
}
