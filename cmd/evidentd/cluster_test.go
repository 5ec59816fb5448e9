package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/receipts"
)

// cluster is two evidentd replicas in distributed mode, run as real processes on loopback
// over one MariaDB database and one MinIO bucket. They share one data directory, which in
// this mode holds only the keys.
type cluster struct {
	bin   string
	data  string
	dsn   string
	s3    testinfra.S3
	addrs [2]string
	cmds  [2]*exec.Cmd
	http  *http.Client
}

// newCluster builds evidentd and starts both replicas; they are stopped when the test ends.
// It skips the test without MariaDB and MinIO.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	dsn, s3 := testinfra.MySQLDatabase(t), testinfra.S3Server(t)
	dir := t.TempDir()
	c := &cluster{bin: filepath.Join(dir, "evidentd"), data: filepath.Join(dir, "data"), dsn: dsn, s3: s3,
		addrs: [2]string{freeAddr(t), freeAddr(t)}, http: &http.Client{Timeout: 30 * time.Second}}
	if out, err := exec.Command("go", "build", "-o", c.bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		for i := range c.cmds {
			c.stop(i)
		}
	})
	// One after the other: the first creates the keys, the second loads them.
	c.start(t, 0)
	c.start(t, 1)
	return c
}

// start starts replica i on its address and waits until it serves /readyz (its log has
// a checkpoint).
func (c *cluster) start(t *testing.T, i int) {
	t.Helper()
	cmd := exec.Command(c.bin, "--data", c.data, "--listen", c.addrs[i], "--db-dsn", c.dsn,
		"--s3-endpoint", c.s3.Endpoint, "--s3-bucket", c.s3.Bucket, "--s3-create-bucket",
		"--checkpoint-interval", "1s", "--seal-interval", "0", "--seal-every", "0")
	cmd.Env = append(os.Environ(), "EVIDENT_S3_ACCESS_KEY="+c.s3.AccessKey, "EVIDENT_S3_SECRET_KEY="+c.s3.SecretKey)
	logf, err := os.OpenFile(c.logFile(i), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("replica %d: %v", i, err)
	}
	c.cmds[i] = cmd
	err = waitFor(60*time.Second, func() error {
		a, err := c.do(context.Background(), i, http.MethodGet, "/readyz", "", nil)
		if err == nil && a.status != http.StatusOK {
			err = fmt.Errorf("/readyz: %d %s", a.status, a.body)
		}
		return err
	})
	if err != nil {
		t.Fatalf("replica %d did not start: %v\n%s", i, err, c.logTail(i, 40))
	}
}

// up starts again the replicas that do not answer (a scenario that failed half-way may
// have left one down).
func (c *cluster) up(t *testing.T) {
	t.Helper()
	for i := range c.cmds {
		if _, err := c.do(t.Context(), i, http.MethodGet, "/healthz", "", nil); err != nil {
			c.kill(i)
			c.start(t, i)
		}
	}
}

// kill stops replica i with SIGKILL: no shutdown, whatever it was doing is cut off.
func (c *cluster) kill(i int) { c.signal(i, syscall.SIGKILL) }

// stop stops replica i with SIGTERM (a graceful shutdown) when it is running.
func (c *cluster) stop(i int) { c.signal(i, syscall.SIGTERM) }

func (c *cluster) signal(i int, sig syscall.Signal) {
	if cmd := c.cmds[i]; cmd != nil && cmd.ProcessState == nil {
		cmd.Process.Signal(sig)
		cmd.Wait()
	}
}

func (c *cluster) logFile(i int) string {
	return c.data + "-" + strings.ReplaceAll(c.addrs[i], ":", "_") + ".log"
}

// logTail is the end of replica i's log, for a failure message.
func (c *cluster) logTail(i, n int) []byte {
	b, _ := os.ReadFile(c.logFile(i))
	return tailLines(b, n)
}

// answer is an HTTP answer, its body read whole.
type answer struct {
	status int
	body   []byte
}

// problemCode is the code of a problem-detail answer ("" for any other body).
func (a answer) problemCode() string {
	var p api.Problem
	json.Unmarshal(a.body, &p)
	return string(p.Code)
}

func (a answer) String() string { return fmt.Sprintf("%d %s", a.status, bytes.TrimSpace(a.body)) }

// do sends one request to replica i. An error means the replica gave no answer.
func (c *cluster) do(ctx context.Context, i int, method, path, contentType string, body []byte) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+c.addrs[i]+path, bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	return answer{status: resp.StatusCode, body: b}, nil
}

// failover is a client of both replicas: it sends the request to replica prefer and, when
// that one gives no answer (it is down), to the other. It returns the answer and the
// replica that gave it.
func (c *cluster) failover(ctx context.Context, prefer int, method, path, contentType string, body []byte) (answer, int, error) {
	a, err := c.do(ctx, prefer, method, path, contentType, body)
	if err == nil {
		return a, prefer, nil
	}
	other := 1 - prefer
	a, err2 := c.do(ctx, other, method, path, contentType, body)
	if err2 != nil {
		return answer{}, other, errors.Join(err, err2)
	}
	return a, other, nil
}

// getJSON reads path from replica i into v, which must answer 200.
func (c *cluster) getJSON(ctx context.Context, i int, path string, v any) error {
	a, err := c.do(ctx, i, http.MethodGet, path, "", nil)
	if err != nil {
		return err
	}
	if a.status != http.StatusOK {
		return fmt.Errorf("GET %s on %s: %s", path, c.addrs[i], a)
	}
	if err := json.Unmarshal(a.body, v); err != nil {
		return fmt.Errorf("GET %s on %s: %w", path, c.addrs[i], err)
	}
	return nil
}

// head is the state of chain as replica i serves it.
func (c *cluster) head(ctx context.Context, i int, chain string) (api.ChainHead, error) {
	var h api.ChainHead
	err := c.getJSON(ctx, i, "/v1/chains/"+chain, &h)
	return h, err
}

// ingest posts a JSON Lines batch of records to chain on replica i.
func (c *cluster) ingest(ctx context.Context, i int, chain string, records [][]byte) (answer, error) {
	return c.do(ctx, i, http.MethodPost, "/v1/chains/"+chain+"/entries", "application/jsonl", bytes.Join(records, []byte("\n")))
}

// chains lists every chain replica i serves, in id order.
func (c *cluster) chains(ctx context.Context, i int) ([]api.ChainSummary, error) {
	var out []api.ChainSummary
	for after := ""; ; {
		var page api.ChainsPage
		if err := c.getJSON(ctx, i, "/v1/chains?limit=1000&after="+after, &page); err != nil {
			return nil, err
		}
		out = append(out, page.Chains...)
		if page.Next == "" {
			return out, nil
		}
		after = page.Next
	}
}

// waitFor calls f until it returns nil or d has passed; it returns f's last error.
func waitFor(d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// answers records what the replicas acknowledged to their clients: every envelope
// answered 201 or 200 (chain → envelope id → seq) and every seal answered 201.
type answers struct {
	mu        sync.Mutex
	envelopes map[string]map[string]uint64
	seals     map[sealID]sealAnswer
}

// sealID names one seal of a chain.
type sealID struct {
	chain string
	n     uint64
}

// sealAnswer is what a seal's client was told: the log index of the seal statement and
// the statement's log entry (SHA-256 of the statement, computed by the client).
type sealAnswer struct {
	index uint64
	entry [32]byte
}

func newAnswers() *answers {
	return &answers{envelopes: map[string]map[string]uint64{}, seals: map[sealID]sealAnswer{}}
}

// ack records the envelopes of a batch (their ids, in order) acknowledged in an ingest
// answer. An envelope acknowledged before at another seq is an error: an acknowledged
// envelope has one place in its chain.
func (a *answers) ack(chain string, ids []string, body []byte) error {
	var r api.IngestResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("ingest answer: %w", err)
	}
	if len(r.Accepted) != len(ids) {
		return fmt.Errorf("ingest answer: %d accepted for a batch of %d", len(r.Accepted), len(ids))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	m := a.envelopes[chain]
	if m == nil {
		m = map[string]uint64{}
		a.envelopes[chain] = m
	}
	var errs []error
	for i, acc := range r.Accepted {
		if seq, ok := m[ids[i]]; ok && seq != acc.Seq {
			errs = append(errs, fmt.Errorf("%s/%s acknowledged at seq %d and at seq %d", chain, ids[i], seq, acc.Seq))
			continue
		}
		m[ids[i]] = acc.Seq
	}
	return errors.Join(errs...)
}

// sealed records a seal answer (JSON, 201). The same seal answered with two log indexes
// or two statements is an error.
func (a *answers) sealed(chain string, body []byte) (sealAnswer, error) {
	var r api.SealResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return sealAnswer{}, fmt.Errorf("seal answer: %w", err)
	}
	stmt, err := r.TransparentStatement()
	if err != nil {
		return sealAnswer{}, err
	}
	entry, err := receipts.EntryHash(stmt)
	if err != nil {
		return sealAnswer{}, fmt.Errorf("seal answer: %w", err)
	}
	got := sealAnswer{index: r.LogIndex, entry: entry}
	a.mu.Lock()
	defer a.mu.Unlock()
	id := sealID{chain, r.N}
	if before, ok := a.seals[id]; ok && before != got {
		return got, fmt.Errorf("seal %s/%d answered as log index %d entry %x, and as log index %d entry %x", chain, r.N, before.index, before.entry, got.index, got.entry)
	}
	a.seals[id] = got
	return got, nil
}

// count is how many envelopes of chain were acknowledged.
func (a *answers) count(chain string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.envelopes[chain])
}

// acked returns a copy of chain's acknowledged envelopes (id → seq).
func (a *answers) acked(chain string) map[string]uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.envelopes[chain])
}

// sealAnswers returns a copy of every seal answer.
func (a *answers) sealAnswers() map[sealID]sealAnswer {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.seals)
}

// ackedChains lists the chains with acknowledged envelopes.
func (a *answers) ackedChains() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Collect(maps.Keys(a.envelopes))
}

// inParallel calls f(k) for every k in [0, n), at most par at a time, and reports how many
// calls failed with the first few errors.
func inParallel(n, par int, f func(k int) error) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, par)
	)
	for k := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := f(k); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d failed, among them: %w", len(errs), n, errors.Join(errs[:min(len(errs), 5)]...))
}
