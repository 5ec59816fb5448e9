// Command evident-hostile puts a hostile load on an evidentd on this machine and reports what
// it cost the service: its peak resident memory (VmHWM and sampled VmRSS of /proc/<pid>/status),
// its open file descriptors and, through GET /metrics, its goroutines. Two loads:
//
//	bodies: -n concurrent ingest requests of -size bytes each (JSON Lines of junk records,
//	        which evidentd reads whole and then refuses), all sent at once, each answer counted;
//	        with -retries, a request answered 503 is sent again after its Retry-After.
//	slowloris: -conns connections that each send half a request's headers and then one more
//	        header line every -every, reconnecting when evidentd closes them, for -duration;
//	        meanwhile a normal client asks GET /metrics every -probe, on a new connection each
//	        time, and its latency is reported.
//
//	go run ./internal/cmd/evident-hostile -url http://127.0.0.1:8080 -pid $PID bodies -n 48 -size 60000000
//	go run ./internal/cmd/evident-hostile -url http://127.0.0.1:8080 -pid $PID slowloris -conns 2000 -duration 35s
//
// It talks only to a loopback address, bounds its counts (-n ≤ 1000, -size ≤ 1 GiB, -conns ≤
// 20000) and stops after -timeout. Linux only (/proc).
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of one run.
const (
	maxRequests = 1000
	maxSize     = 1 << 30
	maxConns    = 20000
)

// config is one run.
type config struct {
	base    string // evidentd's base URL, loopback
	pid     int    // evidentd's process id (0: no process figures)
	mode    string // "bodies" or "slowloris"
	timeout time.Duration

	n, size, retries int // bodies

	conns    int           // slowloris
	every    time.Duration // slowloris: between header lines
	duration time.Duration // slowloris
	probe    time.Duration // slowloris: between normal requests

	out io.Writer
}

func main() {
	cfg := config{out: os.Stdout}
	fs := flag.NewFlagSet("evident-hostile", flag.ExitOnError)
	fs.StringVar(&cfg.base, "url", "http://127.0.0.1:8080", "evidentd base URL (a loopback address)")
	fs.IntVar(&cfg.pid, "pid", 0, "evidentd's process id, whose memory and file descriptors are reported (Linux /proc)")
	fs.DurationVar(&cfg.timeout, "timeout", 5*time.Minute, "give up after this long")
	fs.IntVar(&cfg.n, "n", 48, "bodies: concurrent requests (at most 1000)")
	fs.IntVar(&cfg.size, "size", 60_000_000, "bodies: bytes a request (at most 1 GiB)")
	fs.IntVar(&cfg.retries, "retries", 0, "bodies: send a request answered 503 again, after its Retry-After, up to this many times")
	fs.IntVar(&cfg.conns, "conns", 2000, "slowloris: slow connections (at most 20000)")
	fs.DurationVar(&cfg.every, "every", time.Second, "slowloris: wait between a slow connection's header lines")
	fs.DurationVar(&cfg.duration, "duration", 35*time.Second, "slowloris: how long the load lasts")
	fs.DurationVar(&cfg.probe, "probe", 500*time.Millisecond, "slowloris: wait between the normal client's requests")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: evident-hostile [flags] bodies|slowloris [flags]\n\nPuts a hostile load on a local evidentd and reports its memory, descriptors, goroutines and answers.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	// Flags go before the load's name, after it, or both.
	fs.Parse(os.Args[1:])
	if fs.NArg() > 0 {
		cfg.mode = fs.Arg(0)
		fs.Parse(fs.Args()[1:])
	}
	if cfg.mode == "" || fs.NArg() > 0 {
		fs.Usage()
		os.Exit(64)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "evident-hostile:", err)
		os.Exit(1)
	}
}

// check refuses a run outside the bounds, or against an address that is not loopback.
func (c *config) check() error {
	u, err := url.Parse(c.base)
	if err != nil || u.Scheme != "http" || u.Hostname() == "" {
		return fmt.Errorf("-url %q: want http://<loopback address>:<port>", c.base)
	}
	ips, err := net.LookupIP(u.Hostname())
	if err != nil || len(ips) == 0 || slices.ContainsFunc(ips, func(ip net.IP) bool { return !ip.IsLoopback() }) {
		return fmt.Errorf("-url %q: not a loopback address", c.base)
	}
	c.base = strings.TrimRight(c.base, "/")
	switch {
	case c.mode != "bodies" && c.mode != "slowloris":
		return fmt.Errorf("unknown load %q: want bodies or slowloris", c.mode)
	case c.n < 1 || c.n > maxRequests:
		return fmt.Errorf("-n %d: want 1..%d", c.n, maxRequests)
	case c.size < 1 || c.size > maxSize:
		return fmt.Errorf("-size %d: want 1..%d", c.size, maxSize)
	case c.conns < 1 || c.conns > maxConns:
		return fmt.Errorf("-conns %d: want 1..%d", c.conns, maxConns)
	case c.retries < 0 || c.retries > 100:
		return fmt.Errorf("-retries %d: want 0..100", c.retries)
	case c.every <= 0 || c.duration <= 0 || c.probe <= 0:
		return errors.New("-every, -duration and -probe must be positive")
	}
	return nil
}

func run(ctx context.Context, cfg config) error {
	if err := cfg.check(); err != nil {
		return err
	}
	var p *proc
	if cfg.pid > 0 {
		var err error
		if p, err = watch(cfg.pid); err != nil {
			return err
		}
		defer p.stop()
	}
	if cfg.mode == "bodies" {
		return bodies(ctx, cfg, p)
	}
	return slowloris(ctx, cfg, p)
}

// junk is a body of size bytes: JSON Lines of records of about 8 KiB that no profile takes,
// so evidentd reads it whole, splits it and refuses it (fewer lines than the default
// --max-batch, so it is not refused for its count).
func junk(size int) []byte {
	const line = 8 << 10
	b := make([]byte, 0, size)
	for len(b) < size {
		n := min(line, size-len(b))
		if n < len(`{"h":""}`)+1 {
			b = append(b, bytes.Repeat([]byte(" "), n)...)
			break
		}
		b = append(b, `{"h":"`...)
		b = append(b, bytes.Repeat([]byte("x"), n-len(`{"h":""}`)-1)...)
		b = append(b, "\"}\n"...)
	}
	return b
}

// bodies sends cfg.n requests of cfg.size bytes at once and counts the answers.
func bodies(ctx context.Context, cfg config, p *proc) error {
	body := junk(cfg.size)
	// Keep-alive, as clients are by default: a connection that asked to be closed (Connection:
	// close) is closed by Go's server at once after an early answer, without the wait that lets
	// the client read it, and the client sees the connection reset instead of the 503.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: maxRequests}}
	var mu sync.Mutex
	answers := map[string]int{} // the answer of each request's last attempt
	attempts := map[string]int{}
	var overloaded atomic.Int64 // 503 answers over all attempts
	start := make(chan struct{})
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range cfg.n {
		wg.Go(func() {
			<-start
			var last string
			for attempt := 0; attempt <= cfg.retries; attempt++ {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s/v1/chains/wsp_hostile_%d/entries", cfg.base, i), bytes.NewReader(body))
				if err != nil {
					last = err.Error()
					break
				}
				req.Header.Set("Content-Type", "application/jsonl")
				resp, err := client.Do(req)
				if err != nil {
					last = "no answer: " + shortErr(err)
					break
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				last = resp.Status
				mu.Lock()
				attempts[resp.Status]++
				mu.Unlock()
				if resp.StatusCode != http.StatusServiceUnavailable {
					break
				}
				overloaded.Add(1)
				wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
				select {
				case <-time.After(time.Duration(max(wait, 1)) * time.Second):
				case <-ctx.Done():
				}
			}
			mu.Lock()
			answers[last]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	elapsed := time.Since(t0)
	fmt.Fprintf(cfg.out, "bodies: %d requests of %d bytes at once, retries %d: %.1fs\n", cfg.n, cfg.size, cfg.retries, elapsed.Seconds())
	fmt.Fprintf(cfg.out, "  final answers: %s\n", counts(answers))
	if cfg.retries > 0 {
		fmt.Fprintf(cfg.out, "  every attempt's answer: %s (503: %d)\n", counts(attempts), overloaded.Load())
	}
	p.report(cfg.out)
	return nil
}

// counts formats a count per answer, largest first.
func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return m[b] - m[a] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d × %s", m[k], k))
	}
	return strings.Join(parts, ", ")
}

// shortErr is the last part of a transport error: what happened, without the URL.
func shortErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}

// slowloris holds cfg.conns slow connections for cfg.duration while a normal client asks
// GET /metrics every cfg.probe.
func slowloris(ctx context.Context, cfg config, p *proc) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	addr := strings.TrimPrefix(cfg.base, "http://")
	var opened, cut, failed atomic.Int64
	var wg sync.WaitGroup
	for range cfg.conns {
		wg.Go(func() {
			for ctx.Err() == nil {
				var d net.Dialer
				c, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					failed.Add(1)
					select {
					case <-time.After(cfg.every):
					case <-ctx.Done():
					}
					continue
				}
				opened.Add(1)
				if holdSlow(ctx, c, cfg.every) {
					cut.Add(1)
				}
			}
		})
	}
	var lat []time.Duration
	var goroutines []float64
	var probeErrs int
	var waiting time.Duration // how long the request unanswered at the end had waited
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute}
	for ctx.Err() == nil {
		start := time.Now()
		g, err := probeMetrics(ctx, client, cfg.base)
		if ctx.Err() != nil {
			waiting = time.Since(start)
			break
		}
		if err != nil {
			probeErrs++
		} else {
			lat = append(lat, time.Since(start))
			goroutines = append(goroutines, g)
		}
		select {
		case <-time.After(cfg.probe):
		case <-ctx.Done():
		}
	}
	cancel()
	wg.Wait()
	fmt.Fprintf(cfg.out, "slowloris: %d slow connections for %v, a header line every %v: %d connections opened, %d closed by evidentd, %d dials failed\n",
		cfg.conns, cfg.duration, cfg.every, opened.Load(), cut.Load(), failed.Load())
	if waiting > 0 {
		fmt.Fprintf(cfg.out, "  normal client: one request still unanswered at the end, after %v\n", waiting.Round(time.Millisecond))
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		q := func(f float64) time.Duration {
			return lat[min(len(lat)-1, int(f*float64(len(lat))))].Round(time.Millisecond)
		}
		fmt.Fprintf(cfg.out, "  normal client, GET /metrics on a new connection: %d answered, %d failed; latency min %v, median %v, p90 %v, max %v\n",
			len(lat), probeErrs, lat[0].Round(time.Millisecond), q(0.5), q(0.9), lat[len(lat)-1].Round(time.Millisecond))
		fmt.Fprintf(cfg.out, "  evidentd goroutines (go_goroutines): max %.0f\n", slices.Max(goroutines))
	} else {
		fmt.Fprintf(cfg.out, "  normal client: no request answered, %d failed\n", probeErrs)
	}
	p.report(cfg.out)
	return nil
}

// holdSlow sends half a request on c and one more header line every every until ctx ends or
// evidentd closes c; it reports whether evidentd closed it.
func holdSlow(ctx context.Context, c net.Conn, every time.Duration) bool {
	defer c.Close()
	closed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, c) // returns when evidentd closes the connection (or we do)
		close(closed)
	}()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: evidentd\r\n"); err != nil {
		return true
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-closed:
			return true
		case <-ctx.Done():
			return false
		case <-t.C:
			if _, err := fmt.Fprintf(c, "X-Slow-%d: 1\r\n", i); err != nil {
				return true
			}
		}
	}
}

// probeMetrics asks GET /metrics and returns go_goroutines.
func probeMetrics(ctx context.Context, client *http.Client, base string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, errors.New("GET /metrics: no go_goroutines")
}

// proc samples a process's resident memory and open descriptors until stopped.
type proc struct {
	pid              int
	done, stopped    chan struct{}
	mu               sync.Mutex
	peakRSS, peakFDs int64
}

// watch resets the process's peak RSS (VmHWM, through /proc/<pid>/clear_refs, which needs the
// process to be ours) and samples it every 20 ms.
func watch(pid int) (*proc, error) {
	if _, err := status(pid, "VmRSS"); err != nil {
		return nil, fmt.Errorf("-pid %d: %w", pid, err)
	}
	// "5" resets the peak resident set size to the current one (proc(5)); best effort.
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
	p := &proc{pid: pid, done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(p.stopped)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			p.sample()
			select {
			case <-p.done:
				return
			case <-t.C:
			}
		}
	}()
	return p, nil
}

func (p *proc) sample() {
	rss, _ := status(p.pid, "VmRSS")
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.pid))
	p.mu.Lock()
	p.peakRSS = max(p.peakRSS, rss)
	p.peakFDs = max(p.peakFDs, int64(len(fds)))
	p.mu.Unlock()
}

func (p *proc) stop() {
	if p != nil {
		close(p.done)
		<-p.stopped
	}
}

// report writes the process's peaks; nothing without a process.
func (p *proc) report(w io.Writer) {
	if p == nil {
		return
	}
	p.sample()
	hwm, _ := status(p.pid, "VmHWM")
	rss, _ := status(p.pid, "VmRSS")
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(w, "  evidentd (pid %d): peak RSS %s (VmHWM; sampled VmRSS peak %s), RSS now %s, open descriptors peak %d\n",
		p.pid, mib(hwm), mib(p.peakRSS), mib(rss), p.peakFDs)
}

func mib(kb int64) string { return fmt.Sprintf("%.0f MiB", float64(kb)/1024) }

// status reads a kB field of /proc/<pid>/status.
func status(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, field)
}
