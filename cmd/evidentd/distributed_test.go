package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/ledger/profile/chap/scenario"
	"github.com/evident-log/evident/verifier"
)

// startReplica starts evidentd in distributed mode and waits until it answers.
func startReplica(t *testing.T, bin, data, addr, dsn string, s3 testinfra.S3) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "--data", data, "--listen", addr, "--db-dsn", dsn, "--s3-endpoint", s3.Endpoint, "--s3-bucket", s3.Bucket,
		"--s3-create-bucket", "--checkpoint-interval", "1s", "--seal-interval", "0", "--seal-every", "0")
	cmd.Env = append(os.Environ(), "EVIDENT_S3_ACCESS_KEY="+s3.AccessKey, "EVIDENT_S3_SECRET_KEY="+s3.SecretKey)
	logf, _ := os.OpenFile(data+"-"+strings.ReplaceAll(addr, ":", "_")+".log", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			return cmd
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			out, _ := os.ReadFile(logf.Name())
			t.Fatalf("evidentd did not start: %v\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// linked returns a batch of signed CHAP envelopes that continues the chain at head: the
// first names head as its evidence.prev_hash, each next one its predecessor's link. Writers
// racing on one chain name the same predecessor; the service must accept one and refuse
// the others (prev_hash_mismatch or fork), never fork the chain.
func linked(t *testing.T, p *scenario.Participant, ws string, ids []string, ts time.Time, head ledger.Link) [][]byte {
	var out [][]byte
	for i, id := range ids {
		env := map[string]any{"jsonrpc": "2.0", "chap": "0.3", "id": id, "ts": ledger.Timestamp(ts.Add(time.Duration(i) * time.Millisecond)),
			"workspace": ws, "from": p.URI, "to": "coordinator", "type": "request", "method": "task.update",
			"params": map[string]any{"task_id": id, "status": "in_progress"}, "evidence": map[string]any{"prev_hash": head.String()}}
		raw, _ := json.Marshal(env)
		tag, err := chap.Sign(raw, p.Kid, p.Key)
		if err != nil {
			t.Fatal(err)
		}
		env["sig"] = tag
		raw, _ = json.Marshal(env)
		c, err := canonical.Canonicalize(raw, canonical.CHAP)
		if err != nil {
			t.Fatal(err)
		}
		head = ledger.NextLink(c, head)
		out = append(out, raw)
	}
	return out
}

type ingestAnswer struct {
	Accepted []struct {
		Seq uint64 `json:"seq"`
	} `json:"accepted"`
	Code string `json:"code"`
}

// TestDistributedTwoReplicasKillNine runs two evidentd replicas on one MariaDB database
// and one S3 bucket, with writers streaming batches of envelopes for one chain to both at
// once. One replica is killed with SIGKILL under load; the writers carry on against the
// other. Then a full export of the chain verifies offline, and every envelope that was
// acknowledged with a 201 is in it exactly once, at the seq it was given.
func TestDistributedTwoReplicasKillNine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds evidentd and runs two replicas")
	}
	dsn, s3 := testinfra.MySQLDatabase(t), testinfra.S3Server(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "evidentd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// The replicas share the keys: one data directory (it holds nothing else in this mode).
	data := filepath.Join(dir, "data")
	addrs := []string{freeAddr(t), freeAddr(t)}
	cmds := []*exec.Cmd{startReplica(t, bin, data, addrs[0], dsn, s3), nil}
	cmds[1] = startReplica(t, bin, data, addrs[1], dsn, s3)
	defer func() {
		for _, c := range cmds {
			if c != nil && c.ProcessState == nil {
				c.Process.Signal(syscall.SIGTERM)
				c.Wait()
			}
		}
	}()
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(addr string, body []byte) (ingestAnswer, int, error) {
		var a ingestAnswer
		resp, err := client.Post("http://"+addr+"/v1/chains/"+wsDistributed+"/entries", "application/jsonl", bytes.NewReader(body))
		if err != nil {
			return a, 0, err
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		json.Unmarshal(raw, &a)
		return a, resp.StatusCode, nil
	}

	headOf := func(addr string) (ledger.Link, error) {
		resp, err := client.Get("http://" + addr + "/v1/chains/" + wsDistributed)
		if err != nil {
			return ledger.Link{}, err
		}
		defer resp.Body.Close()
		var h struct {
			Head ledger.Link `json:"head"`
		}
		if resp.StatusCode != http.StatusOK {
			return ledger.Link{}, fmt.Errorf("head: %s", resp.Status)
		}
		err = json.NewDecoder(resp.Body).Decode(&h)
		return h.Head, err
	}

	// The participants join through replica 0, in order (their joins are linked).
	b := scenario.NewBuilder(wsDistributed, time.Now().Add(-time.Hour))
	cast := scenario.NewCast()
	for _, p := range []*scenario.Participant{cast.Coordinator, cast.Alice, cast.Bob, cast.Bot} {
		if err := b.Join(p, cast.Coordinator.URI); err != nil {
			t.Fatal(err)
		}
	}
	if _, code, err := post(addrs[0], bytes.Join(b.Records(), []byte("\n"))); err != nil || code != http.StatusCreated {
		t.Fatalf("joins: %d %v", code, err)
	}

	// Writers: each sends batches of 10 to one replica, moving to the other when its replica
	// stops answering; a 503 (another writer moved the chain, or pushback) is retried.
	var (
		mu      sync.Mutex
		ackedAt = map[string]uint64{} // id → seq, only from 201 answers
		unknown = map[string]bool{}   // sent to a replica that died: stored or not
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		counts  = make([]map[int]int, 4)
	)
	senders := []*scenario.Participant{cast.Alice, cast.Bob, cast.Bot, cast.Alice}
	for w := range 4 {
		counts[w] = map[int]int{}
		wg.Go(func() {
			target := w % 2
			ts := time.Now().Add(-30 * time.Minute)
			for batch := 0; ; batch++ {
				select {
				case <-stop:
					return
				default:
				}
				var ids []string
				for i := range 10 {
					ids = append(ids, fmt.Sprintf("w%d-b%04d-%d", w, batch, i))
				}
				ts = ts.Add(10 * time.Millisecond)
				for attempt := 0; attempt < 200; attempt++ {
					head, err := headOf(addrs[target])
					if err != nil {
						target = 1 - target // this replica is gone: use the other
						continue
					}
					body := bytes.Join(linked(t, senders[w], wsDistributed, ids, ts, head), []byte("\n"))
					a, code, err := post(addrs[target], body)
					counts[w][code]++
					if err != nil {
						// The replica died under us: the batch may or may not be stored.
						mu.Lock()
						for _, id := range ids {
							unknown[id] = true
						}
						mu.Unlock()
						target = 1 - target
						continue
					}
					if code == http.StatusCreated || code == http.StatusOK { // 200: all already stored (a retry)
						mu.Lock()
						for i, acc := range a.Accepted {
							ackedAt[ids[i]] = acc.Seq
						}
						mu.Unlock()
						break
					}
					if code == http.StatusConflict && a.Code == string(ledger.CodeIDReused) {
						break // an earlier attempt of this batch was stored after all
					}
					if code == http.StatusConflict && (a.Code == string(ledger.CodePrevMismatch) || a.Code == string(ledger.CodeFork)) {
						continue // another writer took this position: continue from the new head
					}
					if code != http.StatusServiceUnavailable {
						t.Errorf("writer %d: %d %s", w, code, a.Code)
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	// Kill replica 0 once the writers are well under way, and stop them once they have
	// carried on against replica 1 for a while: conditions, not fixed sleeps, bounded.
	acked := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(ackedAt)
	}
	waitAcked := func(n int) {
		deadline := time.Now().Add(60 * time.Second)
		for acked() < n && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitAcked(200)
	before := acked()
	cmds[0].Process.Signal(syscall.SIGKILL)
	cmds[0].Wait()
	waitAcked(before + 200)
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	if before < 20 || len(ackedAt) <= before {
		t.Fatalf("%d envelopes acknowledged before the kill, %d in all: the test proves nothing", before, len(ackedAt))
	}
	t.Logf("%d envelopes acknowledged (%d before SIGKILL of replica 0), %d of uncertain fate; answers per writer: %v", len(ackedAt), before, len(unknown), counts)

	// Seal and export through the surviving replica; the bundle verifies offline.
	if resp, err := client.Post(fmt.Sprintf("http://%s/v1/chains/%s/seal", addrs[1], wsDistributed), "", nil); err != nil || resp.StatusCode != http.StatusCreated {
		var body []byte
		if resp != nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		logs, _ := os.ReadFile(data + "-" + strings.ReplaceAll(addrs[1], ":", "_") + ".log")
		t.Fatalf("seal: %v %s\nthe surviving replica's log:\n%s", err, body, tailLines(logs, 40))
	}
	resp, err := client.Get(fmt.Sprintf("http://%s/v1/export?chain=%s", addrs[1], wsDistributed))
	if err != nil {
		t.Fatal(err)
	}
	zipBytes, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r, err := bundle.OpenZipBytes(zipBytes)
	if err != nil {
		t.Fatal(err)
	}
	// Every envelope names its predecessor, so the whole chain verifies: links, signatures,
	// seal, receipt and checkpoint — and the replicas never forked it.
	rep, err := verifier.Verify(t.Context(), r, verifier.Options{Trust: fetchTrust(t, "http://"+addrs[1])})
	if err != nil || rep.Verdict != verifier.Verified {
		var buf bytes.Buffer
		rep.WriteText(&buf)
		t.Fatalf("export: %v\n%s", err, buf.String())
	}
	// Every acknowledged envelope is in the export exactly once, at its seq.
	zr, err := zip.NewReader(bytes.NewReader(zipBytes), int64(len(zipBytes)))
	if err != nil {
		t.Fatal(err)
	}
	f, err := zr.Open("chains/" + wsDistributed + "/entries.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	seen := map[string]int{}
	for {
		var line struct {
			Seq    uint64 `json:"seq"`
			Record struct {
				ID string `json:"id"`
			} `json:"record"`
		}
		if err := dec.Decode(&line); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		seen[line.Record.ID]++
		if want, ok := ackedAt[line.Record.ID]; ok && want != line.Seq {
			t.Fatalf("%s at seq %d, acknowledged at %d", line.Record.ID, line.Seq, want)
		}
	}
	for id := range ackedAt {
		if seen[id] != 1 {
			t.Fatalf("acknowledged %s is in the export %d times", id, seen[id])
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s is in the export %d times", id, n)
		}
	}
}

const wsDistributed = "wsp_distributed"

// tailLines returns the last n lines of b, for a failure message.
func tailLines(b []byte, n int) []byte {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	return bytes.Join(lines[max(0, len(lines)-n):], []byte("\n"))
}
