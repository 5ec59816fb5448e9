package ingest

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/embedded"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
)

var t0 = time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC)

type member struct {
	uri, kid string
	priv     ed25519.PrivateKey
}

func newMember(uri string) *member {
	seed := sha256.Sum256([]byte("ingest-test/" + uri))
	return &member{uri: uri, kid: "k-" + uri, priv: ed25519.NewKeyFromSeed(seed[:])}
}

var envSeq atomic.Int64

// env is a CHAP request of m in workspace ws; prev names a predecessor when non-nil.
func (m *member) env(ws, method string, params map[string]any, prev *ledger.Link) map[string]any {
	n := envSeq.Add(1)
	e := map[string]any{"jsonrpc": "2.0", "id": fmt.Sprintf("req-%d", n), "method": method, "from": m.uri, "workspace": ws,
		"ts": ledger.Timestamp(t0.Add(time.Duration(n) * time.Millisecond)), "params": params}
	if prev != nil {
		e["evidence"] = map[string]any{"prev_hash": prev.String()}
	}
	return e
}

func marshal(tb testing.TB, e map[string]any) []byte {
	tb.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func (m *member) sign(tb testing.TB, e map[string]any) []byte {
	tb.Helper()
	tag, err := chap.Sign(marshal(tb, e), m.kid, m.priv)
	if err != nil {
		tb.Fatal(err)
	}
	e["sig"] = tag
	return marshal(tb, e)
}

// join is m's self-signed participant.join carrying its JWK.
func (m *member) join(tb testing.TB, ws string) []byte {
	return m.sign(tb, m.env(ws, "participant.join", map[string]any{"jwk": chap.JWK(m.kid, m.priv.Public().(ed25519.PublicKey))}, nil))
}

func (m *member) msg(tb testing.TB, ws string, prev *ledger.Link) []byte {
	return m.sign(tb, m.env(ws, "task.update", map[string]any{"status": "working", "note": "lorem ipsum dolor sit amet"}, prev))
}

// openStore opens the store evidentd runs on: the embedded store.
func openStore(tb testing.TB, dir string) *embedded.Store {
	tb.Helper()
	s, err := embedded.Open(context.Background(), filepath.Join(dir, embedded.Dir), embedded.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func newPipeline(tb testing.TB, st store.Store, sealer SealIssuer) *Pipeline {
	tb.Helper()
	p, err := New(Options{Store: st, Profiles: []ledger.Profile{chap.Adapter{}}, Sealer: sealer,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return t0 }})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func refusal(t *testing.T, err error, index int, code ledger.Code) *ledger.RecordError {
	t.Helper()
	var re *ledger.RecordError
	if !errors.As(err, &re) || re.Index != index || re.Code != code {
		t.Fatalf("refusal %v, want record %d %s", err, index, code)
	}
	return re
}

func entries(t *testing.T, st store.Store, ws string) []store.Entry {
	t.Helper()
	es, err := st.Entries(context.Background(), ws, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// checkLinked verifies the stored chain is one linear chain of n entries whose links recompute.
func checkLinked(t *testing.T, st store.Store, ws string, n int) []store.Entry {
	t.Helper()
	es := entries(t, st, ws)
	if len(es) != n {
		t.Fatalf("%d entries, want %d", len(es), n)
	}
	prev := ledger.Genesis
	tr := ledger.NewTree()
	for i, e := range es {
		if e.Seq != uint64(i) || e.Prev != prev || e.Link != ledger.NextLink(e.Record, prev) {
			t.Fatalf("entry %d does not chain: seq %d prev %s", i, e.Seq, e.Prev)
		}
		prev = e.Link
		tr.Append(e.Link)
	}
	c, err := st.LoadChain(context.Background(), ws)
	if err != nil || c.Size != uint64(n) || c.Head != prev {
		t.Fatalf("chain record %+v, %v", c, err)
	}
	back := ledger.NewTree()
	if err := back.UnmarshalJSON(c.Tree); err != nil || back.Root() != tr.Root() {
		t.Fatalf("stored tree does not match the entries: %v", err)
	}
	return es
}

func TestBatchAtomicity(t *testing.T) {
	ctx := context.Background()
	alice := newMember("human:alice")
	cases := []struct {
		name string
		bad  func(t *testing.T) []byte
		code ledger.Code
	}{
		{"bad signature", func(t *testing.T) []byte {
			e := alice.env("wsp", "task.update", map[string]any{"a": 1}, nil)
			alice.sign(t, e)
			e["params"] = map[string]any{"a": 2}
			return marshal(t, e)
		}, ledger.CodeBadSignature},
		{"malformed", func(*testing.T) []byte { return []byte(`{"jsonrpc":"2.0","method":"m","x":1.5}`) }, ledger.CodeNumber},
		{"unsigned from a keyed sender", func(t *testing.T) []byte {
			return marshal(t, alice.env("wsp", "task.update", nil, nil))
		}, ledger.CodeSignatureRequired},
		{"wrong workspace", func(t *testing.T) []byte { return alice.msg(t, "wsp_other", nil) }, ledger.CodeWrongChain},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := openStore(t, t.TempDir())
			p := newPipeline(t, st, nil)
			batch := [][]byte{alice.join(t, "wsp"), alice.msg(t, "wsp", nil), c.bad(t), alice.msg(t, "wsp", nil)}
			_, err := p.Ingest(ctx, "wsp", "", batch)
			refusal(t, err, 2, c.code)
			if _, err := st.LoadChain(ctx, "wsp"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("refused batch created the chain: %v", err)
			}
			if es := entries(t, st, "wsp"); len(es) != 0 {
				t.Fatalf("refused batch stored %d entries", len(es))
			}
			if _, err := p.Head(ctx, "wsp"); !errors.Is(err, ErrNoChain) {
				t.Fatalf("Head after a refused batch: %v", err)
			}
			// The same batch without the bad record is accepted whole, from seq 0.
			acc, err := p.Ingest(ctx, "wsp", "", [][]byte{batch[0], batch[1], batch[3]})
			if err != nil || len(acc) != 3 || acc[0].Seq != 0 || acc[2].Seq != 2 || acc[0].Prev != ledger.Genesis {
				t.Fatalf("clean batch: %+v, %v", acc, err)
			}
			checkLinked(t, st, "wsp", 3)
			// A refused batch on an existing chain leaves it as it was.
			_, err = p.Ingest(ctx, "wsp", "", [][]byte{alice.msg(t, "wsp", nil), alice.msg(t, "wsp", nil), c.bad(t)})
			refusal(t, err, 2, c.code)
			checkLinked(t, st, "wsp", 3)
			h, err := p.Head(ctx, "wsp")
			if err != nil || h.Size != 3 || h.Head != acc[2].Link {
				t.Fatalf("head %+v, %v", h, err)
			}
		})
	}
	st := openStore(t, t.TempDir())
	p := newPipeline(t, st, nil)
	if _, err := p.Ingest(ctx, "wsp", "", nil); err == nil {
		t.Fatal("empty batch accepted")
	}
	if _, err := p.Ingest(ctx, "wsp", "owp/1", [][]byte{alice.join(t, "wsp")}); !errors.Is(err, ErrUnknownProfile) {
		t.Fatalf("unknown profile: %v", err)
	}
}

func TestIDReuse(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	p := newPipeline(t, st, nil)
	bob := newMember("agent:bob")
	withID := func(id string) []byte {
		e := bob.env("wsp", "task.update", map[string]any{"x": id}, nil)
		e["id"] = id
		return bob.sign(t, e)
	}
	if _, err := p.Ingest(ctx, "wsp", "", [][]byte{bob.join(t, "wsp"), withID("a"), withID("b")}); err != nil {
		t.Fatal(err)
	}
	// Within a batch.
	_, err := p.Ingest(ctx, "wsp", "", [][]byte{withID("c"), withID("d"), withID("c")})
	refusal(t, err, 2, ledger.CodeIDReused)
	// Across batches, including an integer id equal to an earlier string id.
	_, err = p.Ingest(ctx, "wsp", "", [][]byte{withID("c"), withID("b")})
	refusal(t, err, 1, ledger.CodeIDReused)
	num := bob.env("wsp", "task.update", nil, nil)
	num["id"] = 7
	if _, err := p.Ingest(ctx, "wsp", "", [][]byte{bob.sign(t, num)}); err != nil {
		t.Fatal(err)
	}
	_, err = p.Ingest(ctx, "wsp", "", [][]byte{withID("e"), withID("7")})
	refusal(t, err, 1, ledger.CodeIDReused)
	// Several reused ids: the first of them in batch order is named.
	_, err = p.Ingest(ctx, "wsp", "", [][]byte{withID("f"), withID("a"), withID("g"), withID("b"), withID("7")})
	refusal(t, err, 1, ledger.CodeIDReused)
	// Nothing of the refused batches is stored; "c" is still free.
	checkLinked(t, st, "wsp", 4)
	if _, err := p.Ingest(ctx, "wsp", "", [][]byte{withID("c")}); err != nil {
		t.Fatal(err)
	}
	checkLinked(t, st, "wsp", 5)
}

func TestForkDetection(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	p := newPipeline(t, st, nil)
	carol := newMember("human:carol")
	acc, err := p.Ingest(ctx, "wsp", "", [][]byte{carol.join(t, "wsp")})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		a, err := p.Ingest(ctx, "wsp", "", [][]byte{carol.msg(t, "wsp", &acc[len(acc)-1].Link)})
		if err != nil {
			t.Fatalf("record %d naming the head: %v", i, err)
		}
		acc = append(acc, a...)
	}
	// A record naming entry 1's link claims seq 2, which entry 2 already holds.
	fork := carol.msg(t, "wsp", &acc[1].Link)
	_, err = p.Ingest(ctx, "wsp", "", [][]byte{fork})
	refusal(t, err, 0, ledger.CodeFork)
	// A record naming genesis on a non-empty chain is a fork at seq 0, here as record 1 of a batch.
	gen := ledger.Genesis
	_, err = p.Ingest(ctx, "wsp", "", [][]byte{carol.msg(t, "wsp", nil), carol.msg(t, "wsp", &gen)})
	refusal(t, err, 1, ledger.CodeFork)
	// A record naming a link that is nowhere in the chain is a plain mismatch, not kept.
	stray := ledger.NextLink([]byte("stray"), ledger.Genesis)
	_, err = p.Ingest(ctx, "wsp", "", [][]byte{carol.msg(t, "wsp", &stray)})
	re := refusal(t, err, 0, ledger.CodePrevMismatch)
	var pm *ledger.PrevMismatchError
	if !errors.As(re, &pm) || pm.Named != stray || pm.Head != acc[3].Link {
		t.Fatalf("prev mismatch detail %v", re)
	}
	forks, err := st.Forks(ctx, "wsp")
	if err != nil || len(forks) != 2 {
		t.Fatalf("forks %+v, %v", forks, err)
	}
	if forks[0].Seq != 2 || forks[0].ExistingSeq != 2 || string(forks[0].Record) != string(fork) || !forks[0].Arrival.Equal(t0) {
		t.Fatalf("fork 0 = %+v", forks[0])
	}
	if forks[1].Seq != 0 {
		t.Fatalf("fork 1 = %+v", forks[1])
	}
	checkLinked(t, st, "wsp", 4)
}

func TestConcurrentIngest(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	p := newPipeline(t, st, nil)
	const workers, batches, size = 8, 6, 5
	members := make([]*member, workers)
	for i := range members {
		members[i] = newMember(fmt.Sprintf("agent:w%d", i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := members[w]
			for b := range batches {
				var batch [][]byte
				for i := range size {
					if b == 0 && i == 0 {
						batch = append(batch, m.join(t, "wsp"))
					} else {
						batch = append(batch, m.msg(t, "wsp", nil))
					}
				}
				acc, err := p.Ingest(ctx, "wsp", "", batch)
				if err != nil {
					errs <- fmt.Errorf("worker %d batch %d: %w", w, b, err)
					return
				}
				for i := 1; i < len(acc); i++ {
					if acc[i].Seq != acc[i-1].Seq+1 || acc[i].Prev != acc[i-1].Link {
						errs <- fmt.Errorf("worker %d batch %d is not contiguous", w, b)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkLinked(t, st, "wsp", workers*batches*size)
	h, err := p.Head(ctx, "wsp")
	if err != nil || h.Size != workers*batches*size {
		t.Fatalf("head %+v, %v", h, err)
	}
}

func TestRestartContinues(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openStore(t, dir)
	dave, erin := newMember("human:dave"), newMember("agent:erin")
	p1 := newPipeline(t, st, nil)
	acc, err := p1.Ingest(ctx, "wsp", "", [][]byte{dave.join(t, "wsp"), erin.join(t, "wsp"), dave.msg(t, "wsp", nil)})
	if err != nil {
		t.Fatal(err)
	}
	h1, _ := p1.Head(ctx, "wsp")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st2 := openStore(t, dir)
	p2 := newPipeline(t, st2, nil)
	h2, err := p2.Head(ctx, "wsp")
	if err != nil || h2 != h1 {
		t.Fatalf("head after restart %+v (%v), before %+v", h2, err, h1)
	}
	// The keys are remembered: unsigned from dave is refused, a forged signature too, and
	// the chain continues at the persisted head.
	_, err = p2.Ingest(ctx, "wsp", "", [][]byte{marshal(t, dave.env("wsp", "task.update", nil, nil))})
	refusal(t, err, 0, ledger.CodeSignatureRequired)
	forged := &member{uri: dave.uri, kid: dave.kid, priv: erin.priv}
	_, err = p2.Ingest(ctx, "wsp", "", [][]byte{forged.msg(t, "wsp", nil)})
	refusal(t, err, 0, ledger.CodeBadSignature)
	_, err = p2.Ingest(ctx, "wsp", "", [][]byte{dave.join(t, "wsp")})
	refusal(t, err, 0, ledger.CodeBadKey)
	more, err := p2.Ingest(ctx, "wsp", "", [][]byte{erin.msg(t, "wsp", &acc[2].Link), dave.msg(t, "wsp", nil)})
	if err != nil || more[0].Seq != 3 || more[0].Prev != acc[2].Link {
		t.Fatalf("after restart: %+v, %v", more, err)
	}
	// Ids used before the restart stay used.
	old := dave.env("wsp", "task.update", nil, nil)
	old["id"] = idOf(t, entries(t, st2, "wsp")[2].Record)
	_, err = p2.Ingest(ctx, "wsp", "", [][]byte{dave.sign(t, old)})
	refusal(t, err, 0, ledger.CodeIDReused)
	// A record forking a pre-restart entry is still recognised.
	_, err = p2.Ingest(ctx, "wsp", "", [][]byte{dave.msg(t, "wsp", &acc[0].Link)})
	refusal(t, err, 0, ledger.CodeFork)
	checkLinked(t, st2, "wsp", 5)
	// The chain is of the CHAP profile and refuses to be used as another.
	_, err = p2.Ingest(ctx, "wsp", "other/1", [][]byte{dave.msg(t, "wsp", nil)})
	if !errors.Is(err, ledger.ErrRefused) && !errors.Is(err, ErrUnknownProfile) {
		t.Fatalf("profile mismatch: %v", err)
	}
}

func idOf(t *testing.T, rec []byte) string {
	var v struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(rec, &v); err != nil {
		t.Fatal(err)
	}
	return v.ID
}

// TestSlotsOfMissingChains: asking after chains that do not exist, or sending a first batch
// that is refused, keeps no per-chain state (a client could otherwise grow memory with
// made-up chain ids); a chain being created while others ask after it keeps one slot, so
// its writers still take turns.
func TestSlotsOfMissingChains(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	p := newPipeline(t, st, nil)
	slots := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.chains)
	}
	for i := range 1000 {
		id := fmt.Sprintf("wsp_missing_%d", i)
		if _, err := p.Head(ctx, id); !errors.Is(err, ErrNoChain) {
			t.Fatalf("head of %s: %v", id, err)
		}
		if _, err := p.ReportEvidenceHead(ctx, id, ledger.Link{}, 0); !errors.Is(err, ErrNoChain) {
			t.Fatalf("evidence head of %s: %v", id, err)
		}
	}
	alice := newMember("human:alice")
	if _, err := p.Ingest(ctx, "wsp_refused", "", [][]byte{alice.msg(t, "wsp_refused", nil)}); err == nil {
		t.Fatal("a message before the sender joined was admitted")
	}
	if n := slots(); n != 0 {
		t.Fatalf("%d slots kept for chains that do not exist", n)
	}

	const workers, batches = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers)
	for w := range workers {
		wg.Add(2)
		go func() { // writers
			defer wg.Done()
			m := newMember(fmt.Sprintf("agent:w%d", w))
			for b := range batches {
				rec := m.msg(t, "wsp", nil)
				if b == 0 {
					rec = m.join(t, "wsp")
				}
				if _, err := p.Ingest(ctx, "wsp", "", [][]byte{rec}); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() { // readers, before and after the chain exists
			defer wg.Done()
			for range 3 * batches {
				if _, err := p.Head(ctx, "wsp"); err != nil && !errors.Is(err, ErrNoChain) {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkLinked(t, st, "wsp", workers*batches)
	if n := slots(); n != 1 {
		t.Fatalf("%d slots, want the one of wsp", n)
	}
}
