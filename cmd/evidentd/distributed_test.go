package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile/chap"
)

// TestDistributedTwoReplicas runs two evidentd replicas as processes on one MariaDB
// database and one MinIO bucket and drives them through the situations a load balancer
// in front of them produces, each scenario on chains of its own. The last subtest checks
// what they all left behind: every acknowledged envelope in its chain exactly once at its
// seq, every seal statement in the log exactly once at the index its client was told,
// Tessera's fsck clean through both replicas, and every chain's export verifying offline
// against the trust file the service publishes.
func TestDistributedTwoReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("builds evidentd and runs two replicas")
	}
	c := newCluster(t)
	a := newAnswers()
	for _, s := range []struct {
		name string
		run  func(*testing.T, *cluster, *answers)
	}{
		{"kill-nine", killNine},
		{"alternating-batches", alternatingBatches},
		{"same-batch-raced", sameBatchRaced},
		{"burst-of-new-chains", burstOfNewChains},
		{"seal-while-replica-starts", sealWhileReplicaStarts},
		{"behind-the-proxy", behindTheProxy},
		{"record-over-the-packet", recordOverThePacket},
		{"end-state", checkEndState},
	} {
		t.Run(s.name, func(t *testing.T) {
			c.up(t)
			s.run(t, c, a)
		})
	}
}

// killNine: four writers stream batches to one chain through both replicas; replica 0 is
// killed with SIGKILL under load and the writers fail over to replica 1. Replica 0 then
// restarts, serves the chain as replica 1 does, and takes it on.
func killNine(t *testing.T, c *cluster, a *answers) {
	const chain = "wsp_dist-kill"
	ctx := t.Context()
	cast := joinChain(t, c, 0, chain, a)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	writers := make([]*writer, 4)
	for k, sender := range []*chapscenario.Participant{cast.Alice, cast.Bob, cast.Bot, cast.Alice} {
		writers[k] = &writer{c: c, a: a, chain: chain, name: fmt.Sprintf("w%d", k), sender: sender, target: k % 2, codes: map[int]int{}}
		wg.Go(func() {
			if err := writers[k].run(ctx, stop); err != nil {
				errs <- err
			}
		})
	}
	// Kill replica 0 once the writers are well under way, and stop them once they have
	// carried on against replica 1 for a while: conditions, bounded.
	waitAcked(a, chain, 200)
	before := a.count(chain)
	c.kill(0)
	waitAcked(a, chain, before+200)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	after := a.count(chain)
	if before < 20 || after <= before+20 {
		t.Fatalf("%d envelopes acknowledged before the kill, %d in all: the test proves nothing", before, after)
	}
	codes := make([]map[int]int, len(writers))
	for k, w := range writers {
		codes[k] = w.codes
	}
	t.Logf("%d envelopes acknowledged, %d before SIGKILL of replica 0; answers per writer (0: none): %v", after, before, codes)

	c.start(t, 0)
	sameState(t, c, chain)
	// The restarted replica takes the chain on, and the other one serves what it took.
	h := appendBatch(t, c, a, 0, chain, cast.Bob, "after-restart", 5)
	if o, err := c.head(ctx, 1, chain); err != nil || o.Head != h.Head || o.Size != h.Size {
		t.Fatalf("replica 1 after a batch through the restarted replica 0: %+v %v, want size %d head %s", o, err, h.Size, h.Head)
	}
}

// sameState checks that both replicas serve the same chains, and the same state of chain.
func sameState(t *testing.T, c *cluster, chain string) {
	t.Helper()
	var lists [2][]api.ChainSummary
	var heads [2]api.ChainHead
	for i := range 2 {
		var err error
		if lists[i], err = c.chains(t.Context(), i); err != nil {
			t.Fatal(err)
		}
		if heads[i], err = c.head(t.Context(), i, chain); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(lists[0], lists[1]) {
		t.Fatalf("the replicas list different chains:\n%v\n%v", lists[0], lists[1])
	}
	if heads[0] != heads[1] {
		t.Fatalf("the replicas serve %s differently:\n%+v\n%+v", chain, heads[0], heads[1])
	}
}

// alternatingBatches: one chain written batch by batch through replica 0, then 1, then 0…,
// each batch naming the head the replica served. Every answer links the batch to the
// previous head, and the other replica serves the new head at once.
func alternatingBatches(t *testing.T, c *cluster, a *answers) {
	const chain = "wsp_dist-alt"
	cast := joinChain(t, c, 0, chain, a)
	for k := range 12 {
		i := k % 2
		h := appendBatch(t, c, a, i, chain, cast.Bot, fmt.Sprintf("alt-b%02d", k), 5)
		o, err := c.head(t.Context(), 1-i, chain)
		if err != nil || o.Size != h.Size || o.Head != h.Head {
			t.Fatalf("batch %d through replica %d: replica %d serves %+v %v, want size %d head %s", k, i, 1-i, o, err, h.Size, h.Head)
		}
	}
}

// sameBatchRaced: the same batch sent to both replicas at once, round after round. It is
// stored once: exactly one replica answers 201; the other answers 200 with the same seqs
// (a retry of stored envelopes) or refuses it with 409; never two acknowledgements at
// different seqs.
func sameBatchRaced(t *testing.T, c *cluster, a *answers) {
	const chain = "wsp_dist-race"
	ctx := t.Context()
	cast := joinChain(t, c, 0, chain, a)
	ts := time.Now().Add(-20 * time.Minute)
	outcomes := map[string]int{}
	for round := range 10 {
		h, err := c.head(ctx, round%2, chain)
		if err != nil {
			t.Fatal(err)
		}
		ids := batchIDs(fmt.Sprintf("race-r%02d", round), 5)
		ts = ts.Add(time.Second)
		recs, links, err := linked(cast.Alice, chain, ids, ts, h.Head)
		if err != nil {
			t.Fatal(err)
		}
		got, err := race(ctx, c, chain, recs)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		outcomes[fmt.Sprintf("%d+%d", min(got[0].status, got[1].status), max(got[0].status, got[1].status))]++
		if err := checkRace(a, chain, ids, h, links, got); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if o, err := c.head(ctx, 1-round%2, chain); err != nil || o.Size != h.Size+5 || o.Head != links[4] {
			t.Fatalf("round %d: the chain after the race is %+v %v, want size %d head %s", round, o, err, h.Size+5, links[4])
		}
	}
	t.Logf("answers to the two copies of each batch: %v", outcomes)
}

// race sends the same batch to both replicas at once; each copy is retried while its
// replica answers 503 (busy: another writer holds the chain), as a client would.
func race(ctx context.Context, c *cluster, chain string, recs [][]byte) ([2]answer, error) {
	var (
		got   [2]answer
		errs  [2]error
		wg    sync.WaitGroup
		ready = make(chan struct{})
	)
	for i := range 2 {
		wg.Go(func() {
			<-ready
			for range 100 {
				got[i], errs[i] = c.ingest(ctx, i, chain, recs)
				if errs[i] != nil || got[i].status != http.StatusServiceUnavailable {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	close(ready)
	wg.Wait()
	return got, errors.Join(errs[:]...)
}

// checkRace checks the two answers to one raced batch that continues the chain at h with
// the given links, and records the acknowledgement.
func checkRace(a *answers, chain string, ids []string, h api.ChainHead, links []ledger.Link, got [2]answer) error {
	created := 0
	for i, ans := range got {
		switch ans.status {
		case http.StatusCreated, http.StatusOK:
			if ans.status == http.StatusCreated {
				created++
			}
			if err := checkLinked(ans.body, h, links); err != nil {
				return fmt.Errorf("replica %d answered %d: %w", i, ans.status, err)
			}
			if err := a.ack(chain, ids, ans.body); err != nil {
				return err
			}
		case http.StatusConflict:
			switch ans.problemCode() {
			case string(ledger.CodePrevMismatch), string(ledger.CodeFork), string(ledger.CodeIDReused):
			default:
				return fmt.Errorf("replica %d: %s", i, ans)
			}
		default:
			return fmt.Errorf("replica %d: %s", i, ans)
		}
	}
	if created != 1 {
		return fmt.Errorf("the batch was acknowledged with 201 %d times: %s | %s", created, got[0], got[1])
	}
	return nil
}

// burstOfNewChains: 200 new chains begin at once, half through each replica. Every one
// must be created at the first attempt (201): a new chain contends with no other writer.
func burstOfNewChains(t *testing.T, c *cluster, a *answers) {
	const n = 200
	ctx := t.Context()
	batches := make([][][]byte, n)
	for k := range n {
		recs, err := joins(burstChain(k))
		if err != nil {
			t.Fatal(err)
		}
		batches[k] = recs
	}
	got, errs := make([]answer, n), make([]error, n)
	testinfra.AtOnce(n, func(k int) { got[k], errs[k] = c.ingest(ctx, k%2, burstChain(k), batches[k]) })
	failed := map[string]int{}
	for k := range n {
		switch {
		case errs[k] != nil:
			failed[errs[k].Error()]++
		case got[k].status != http.StatusCreated:
			failed[fmt.Sprintf("%d %s", got[k].status, got[k].problemCode())]++
		default:
			if err := a.ack(burstChain(k), envelopeIDs(batches[k]), got[k].body); err != nil {
				t.Error(err)
			}
		}
	}
	if len(failed) > 0 {
		total := 0
		for _, m := range failed {
			total += m
		}
		t.Errorf("%d of %d new chains begun at once were not created at the first attempt: %v", total, n, failed)
	}
}

func burstChain(k int) string { return fmt.Sprintf("wsp_dist-burst-%03d", k) }

// sealWhileReplicaStarts: a seal is requested on replica 1 and, 0.2 s later, while it waits
// for its checkpoint, replica 0 starts (its startup finishes the seals it finds pending).
// The seal is registered once: its statement is in the log exactly once, at the index its
// client was told, and both replicas serve that index.
func sealWhileReplicaStarts(t *testing.T, c *cluster, a *answers) {
	const chain = "wsp_dist-seal"
	ctx := t.Context()
	cast := joinChain(t, c, 1, chain, a)
	appendBatch(t, c, a, 1, chain, cast.Alice, "seal-b00", 5)
	c.stop(0)
	sealed := make(chan answer, 1)
	failed := make(chan error, 1)
	go func() {
		ans, err := c.do(ctx, 1, http.MethodPost, "/v1/chains/"+chain+"/seal", "", nil)
		if err != nil {
			failed <- err
			return
		}
		sealed <- ans
	}()
	time.Sleep(200 * time.Millisecond) // the scenario: replica 0 starts while the seal is in flight
	c.start(t, 0)
	var ans answer
	select {
	case ans = <-sealed:
	case err := <-failed:
		t.Fatalf("seal: %v", err)
	}
	if ans.status != http.StatusCreated {
		t.Fatalf("seal: %s\n%s", ans, c.logTail(1, 40))
	}
	s, err := a.sealed(chain, ans.body)
	if err != nil {
		t.Fatal(err)
	}
	trust := fetchTrust(t, "http://"+c.addrs[1])
	entries, err := logEntries(ctx, c, 1, trust)
	if err != nil {
		t.Fatal(err)
	}
	if at := indexesOf(entries, s.entry); len(at) != 1 || at[0] != s.index {
		t.Errorf("the seal statement is in the log at indexes %v; its client was told %d", at, s.index)
	}
	for i := range 2 {
		var page api.SealsPage
		if err := c.getJSON(ctx, i, "/v1/chains/"+chain+"/seals", &page); err != nil {
			t.Fatal(err)
		}
		if n := len(page.Seals); n != 1 || !page.Seals[0].Registered || page.Seals[0].LogIndex != s.index {
			t.Errorf("replica %d serves the seals %+v; the client was told log index %d", i, page.Seals, s.index)
		}
	}
}

// joinChain begins chain through replica i with the support-triage cast's four joins and
// returns the cast.
func joinChain(t *testing.T, c *cluster, i int, chain string, a *answers) chapscenario.Cast {
	t.Helper()
	recs, err := joins(chain)
	if err != nil {
		t.Fatal(err)
	}
	ans, err := c.ingest(t.Context(), i, chain, recs)
	if err != nil || ans.status != http.StatusCreated {
		t.Fatalf("joins of %s through replica %d: %v %v", chain, i, ans, err)
	}
	if err := a.ack(chain, envelopeIDs(recs), ans.body); err != nil {
		t.Fatal(err)
	}
	return chapscenario.NewCast()
}

// joins is the first batch of a new chain: the cast joins, in order, each linked to the one
// before.
func joins(chain string) ([][]byte, error) {
	b := chapscenario.NewBuilder(chain, time.Now().Add(-time.Hour))
	cast := chapscenario.NewCast()
	for _, p := range []*chapscenario.Participant{cast.Coordinator, cast.Alice, cast.Bob, cast.Bot} {
		if err := b.Join(p, cast.Coordinator.URI); err != nil {
			return nil, fmt.Errorf("join %s: %w", p.URI, err)
		}
	}
	return b.Records(), nil
}

// appendBatch appends n envelopes from sender to chain through replica i, continuing the
// head that replica serves; the answer must be a 201 that links them to that head. It
// returns the chain's new state.
func appendBatch(t *testing.T, c *cluster, a *answers, i int, chain string, sender *chapscenario.Participant, name string, n int) api.ChainHead {
	t.Helper()
	h, err := c.head(t.Context(), i, chain)
	if err != nil {
		t.Fatal(err)
	}
	ids := batchIDs(name, n)
	recs, links, err := linked(sender, chain, ids, time.Now().Add(-10*time.Minute), h.Head)
	if err != nil {
		t.Fatal(err)
	}
	ans, err := c.ingest(t.Context(), i, chain, recs)
	if err != nil || ans.status != http.StatusCreated {
		t.Fatalf("batch %s through replica %d: %v %v\n%s", name, i, ans, err, c.logTail(i, 20))
	}
	if err := checkLinked(ans.body, h, links); err != nil {
		t.Fatalf("batch %s through replica %d: %v", name, i, err)
	}
	if err := a.ack(chain, ids, ans.body); err != nil {
		t.Fatal(err)
	}
	return api.ChainHead{Chain: chain, Size: h.Size + uint64(n), Head: links[n-1]}
}

// checkLinked checks an ingest answer for a batch that continues the chain at h with the
// given links: the seqs follow h's size, each entry names its predecessor, and the chain's
// new size and head are the batch's.
func checkLinked(body []byte, h api.ChainHead, links []ledger.Link) error {
	var r api.IngestResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("ingest answer: %w", err)
	}
	if len(r.Accepted) != len(links) {
		return fmt.Errorf("%d entries accepted for a batch of %d", len(r.Accepted), len(links))
	}
	prev := h.Head
	for k, e := range r.Accepted {
		if e.Seq != h.Size+uint64(k) || e.Prev != prev || e.Link != links[k] {
			return fmt.Errorf("entry %d of the batch: seq %d prev %s link %s, want seq %d prev %s link %s", k, e.Seq, e.Prev, e.Link, h.Size+uint64(k), prev, links[k])
		}
		prev = e.Link
	}
	if r.Size != h.Size+uint64(len(links)) || r.Head != prev {
		return fmt.Errorf("chain after the batch: size %d head %s, want %d %s", r.Size, r.Head, h.Size+uint64(len(links)), prev)
	}
	return nil
}

// writer streams batches of 10 envelopes from one sender to one chain. It fails over
// between the replicas: when its replica gives no answer it moves to the other one.
type writer struct {
	c      *cluster
	a      *answers
	chain  string
	name   string // prefix of its envelope ids
	sender *chapscenario.Participant
	target int         // the replica it writes to
	codes  map[int]int // answers by status; 0: none (the replica died under the request)
}

// run sends batches until stop is closed.
func (w *writer) run(ctx context.Context, stop <-chan struct{}) error {
	ts := time.Now().Add(-30 * time.Minute)
	for batch := 0; ; batch++ {
		select {
		case <-stop:
			return nil
		default:
		}
		ts = ts.Add(10 * time.Millisecond)
		if err := w.send(ctx, batchIDs(fmt.Sprintf("%s-b%04d", w.name, batch), 10), ts); err != nil {
			return err
		}
	}
}

// send appends one batch: it names the head its replica serves and, refused because
// another writer took that position, tries again from the new head. A batch sent to a
// replica that died is of unknown fate; sent again, it is either taken or refused as
// already stored (id_reused).
func (w *writer) send(ctx context.Context, ids []string, ts time.Time) error {
	for range 200 {
		h, err := w.c.head(ctx, w.target, w.chain)
		if err != nil {
			w.target = 1 - w.target
			continue
		}
		recs, _, err := linked(w.sender, w.chain, ids, ts, h.Head)
		if err != nil {
			return err
		}
		ans, err := w.c.ingest(ctx, w.target, w.chain, recs)
		if err != nil {
			w.codes[0]++
			w.target = 1 - w.target
			continue
		}
		w.codes[ans.status]++
		switch code := ans.problemCode(); {
		case ans.status == http.StatusCreated || ans.status == http.StatusOK:
			return w.a.ack(w.chain, ids, ans.body)
		case ans.status == http.StatusConflict && code == string(ledger.CodeIDReused):
			return nil // an earlier attempt was stored after all
		case ans.status == http.StatusConflict && (code == string(ledger.CodePrevMismatch) || code == string(ledger.CodeFork)):
		case ans.status == http.StatusServiceUnavailable:
			time.Sleep(20 * time.Millisecond)
		default:
			return fmt.Errorf("writer %s: %s", w.name, ans)
		}
	}
	return fmt.Errorf("writer %s: batch %s not taken in 200 attempts", w.name, ids[0])
}

// waitAcked waits (at most a minute) until n envelopes of chain are acknowledged.
func waitAcked(a *answers, chain string, n int) {
	waitFor(time.Minute, func() error {
		if a.count(chain) < n {
			return errors.New("not yet")
		}
		return nil
	})
}

// batchIDs are the envelope ids of a batch of n: name-0 … name-(n-1).
func batchIDs(name string, n int) []string {
	ids := make([]string, n)
	for k := range ids {
		ids[k] = fmt.Sprintf("%s-%d", name, k)
	}
	return ids
}

// linked returns a batch of signed CHAP envelopes that continues the chain at head, and
// their links: the first names head as its evidence.prev_hash, each next one its
// predecessor's link. Writers racing on one chain name the same predecessor; the service
// must accept one and refuse the others (prev_hash_mismatch or fork), never fork the chain.
func linked(p *chapscenario.Participant, ws string, ids []string, ts time.Time, head ledger.Link) ([][]byte, []ledger.Link, error) {
	var out [][]byte
	var links []ledger.Link
	for i, id := range ids {
		env := map[string]any{"jsonrpc": "2.0", "chap": "0.3", "id": id, "ts": ledger.Timestamp(ts.Add(time.Duration(i) * time.Millisecond)),
			"workspace": ws, "from": p.URI, "to": "coordinator", "type": "request", "method": "task.update",
			"params": map[string]any{"task_id": id, "status": "in_progress"}, "evidence": map[string]any{"prev_hash": head.String()}}
		raw, err := json.Marshal(env)
		if err != nil {
			return nil, nil, err
		}
		tag, err := chap.Sign(raw, p.Kid, p.Key)
		if err != nil {
			return nil, nil, fmt.Errorf("sign %s: %w", id, err)
		}
		env["sig"] = tag
		if raw, err = json.Marshal(env); err != nil {
			return nil, nil, err
		}
		c, err := canonical.Canonicalize(raw, canonical.CHAP)
		if err != nil {
			return nil, nil, fmt.Errorf("canonicalize %s: %w", id, err)
		}
		head = ledger.NextLink(c, head)
		out = append(out, raw)
		links = append(links, head)
	}
	return out, links, nil
}

// envelopeIDs are the ids of a batch of CHAP envelopes, in order.
func envelopeIDs(recs [][]byte) []string {
	ids := make([]string, len(recs))
	for k, r := range recs {
		var e struct {
			ID string `json:"id"`
		}
		json.Unmarshal(r, &e)
		ids[k] = e.ID
	}
	return ids
}

// indexesOf lists the log indexes holding entry, in order.
func indexesOf(entries [][32]byte, entry [32]byte) []uint64 {
	var at []uint64
	for k, e := range entries {
		if e == entry {
			at = append(at, uint64(k))
		}
	}
	return at
}

// tailLines returns the last n lines of b, for a failure message.
func tailLines(b []byte, n int) []byte {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	return bytes.Join(lines[max(0, len(lines)-n):], []byte("\n"))
}

// recordOverThePacket: the database's max_allowed_packet bounds the records the replicas take
// when it is below --max-record-bytes (MariaDB's default, 16 MiB, is below the default 32 MiB):
// a record larger than one INSERT carries is refused on arrival, 413 record_too_large naming
// max_allowed_packet as what to raise, and the chain is unchanged on both replicas; a record
// of a few MiB is taken.
func recordOverThePacket(t *testing.T, c *cluster, a *answers) {
	const chain = "wsp_dist-packet"
	ctx := t.Context()
	db, err := sql.Open("mysql", c.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var packet int
	if err := db.QueryRowContext(ctx, "SELECT @@max_allowed_packet").Scan(&packet); err != nil {
		t.Fatal(err)
	}
	largest := packet - 64<<10
	if largest >= canonical.DefaultMaxSize {
		t.Skipf("max_allowed_packet is %d: the default record limit binds first", packet)
	}
	cast := joinChain(t, c, 0, chain, a)
	h, err := c.head(ctx, 0, chain)
	if err != nil {
		t.Fatal(err)
	}
	big, err := padded(cast.Bot, chain, "packet-big", h.Head, largest+1)
	if err != nil {
		t.Fatal(err)
	}
	ans, err := c.ingest(ctx, 0, chain, [][]byte{big})
	if err != nil {
		t.Fatal(err)
	}
	var p api.Problem
	if ans.status != http.StatusRequestEntityTooLarge || json.Unmarshal(ans.body, &p) != nil || p.Code != api.CodeRecordTooLarge ||
		p.Limit == nil || p.Limit.Name != api.LimitMaxRecordBytes || p.Limit.Value != int64(largest) || !strings.Contains(p.Limit.Flag, "max_allowed_packet") {
		t.Fatalf("a record of %d bytes over a packet of %d: %d %s", len(big), packet, ans.status, ans.body)
	}
	for i := range 2 {
		if o, err := c.head(ctx, i, chain); err != nil || o != h {
			t.Fatalf("replica %d after the refusal: %+v %v, want %+v", i, o, err, h)
		}
	}
	ok, err := padded(cast.Bot, chain, "packet-ok", h.Head, 3<<20)
	if err != nil {
		t.Fatal(err)
	}
	ans, err = c.ingest(ctx, 1, chain, [][]byte{ok})
	if err != nil || ans.status != http.StatusCreated {
		t.Fatalf("a 3 MiB record: %v %v", ans.status, err)
	}
	if err := a.ack(chain, []string{"packet-ok"}, ans.body); err != nil {
		t.Fatal(err)
	}
}

// padded is a signed task.update of sender on ws, naming head, whose params carry a string
// that makes the record at least n bytes.
func padded(sender *chapscenario.Participant, ws, id string, head ledger.Link, n int) ([]byte, error) {
	env := map[string]any{"jsonrpc": "2.0", "chap": "0.3", "id": id, "ts": ledger.Timestamp(time.Now().Add(-time.Minute)),
		"workspace": ws, "from": sender.URI, "to": "coordinator", "type": "request", "method": "task.update",
		"params": map[string]any{"task_id": id, "status": "in_progress", "draft": strings.Repeat("d", n)}, "evidence": map[string]any{"prev_hash": head.String()}}
	raw, err := json.Marshal(env)
	if err != nil {
		return nil, err
	}
	tag, err := chap.Sign(raw, sender.Kid, sender.Key)
	if err != nil {
		return nil, err
	}
	env["sig"] = tag
	return json.Marshal(env)
}
