// Package storetest is the conformance suite of the ledger store (package store): the
// behaviour every implementation must show, run by each implementation's tests against a
// real instance (a Pebble database, a MariaDB database).
//
// It checks the store.Store contract: Commit is atomic (a refused batch leaves nothing),
// refuses with store.ErrConflict when the chain moved since prevSize, when a record id or a
// link is reused, and keeps exactly one writer per chain when several independent handles —
// standing for several evidentd processes — race on the same chain; filtered reads, seals,
// pending seals, fork evidence, paged chain listings (chains.go), claims on log entries (claims.go), attribute filters (attrs.go), group commits
// (group.go), batches larger than one SQL
// statement holds (batches.go), and persistence across a close and reopen.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// Backend opens handles on one fresh, empty store.
type Backend interface {
	// Open returns a new, independent handle (its own connections, as another process
	// would have) on the same underlying store, creating the store on first use. The
	// handle is closed when the test ends; closing it earlier must be allowed.
	Open(t *testing.T) store.Store
}

// BackendFunc makes a Backend of a function.
type BackendFunc func(t *testing.T) store.Store

// Open implements Backend.
func (f BackendFunc) Open(t *testing.T) store.Store { return f(t) }

// Run runs the whole suite. newBackend is called once per subtest and must return a
// Backend on a store of its own.
func Run(t *testing.T, newBackend func(t *testing.T) Backend) {
	tests := []struct {
		name string
		fn   func(*testing.T, Backend)
	}{
		{"CommitLoadEntries", testCommitLoadEntries},
		{"CommitConflicts", testCommitConflicts},
		{"FindLinkAndRecordIDs", testFindLinkAndRecordIDs},
		{"SealsAndForks", testSealsAndForks},
		{"SealNumberTakenOnce", testSealNumberTakenOnce},
		{"OneWriterPerChain", testOneWriterPerChain},
		{"Registrations", testRegistrations},
		{"AttrFilters", testAttrFilters},   // attrs.go
		{"LargeBatches", testLargeBatches}, // batches.go
		{"EvidenceHeads", testEvidenceHeads},
		{"ListChains", testListChains},           // chains.go
		{"Claims", testClaims},                   // claims.go
		{"NewChainsAtOnce", testNewChainsAtOnce}, // contention.go
		{"CreateChainRace", testCreateChainRace}, // contention.go
		{"GroupCommit", testGroupCommit},         // group.go
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newBackend(t)) })
	}
}

// testSealNumberTakenOnce: two handles that both saw the chain at the same size race to
// add seal number n; one wins, the other is refused and nothing of it is stored.
func testSealNumberTakenOnce(t *testing.T, b Backend) {
	ctx := context.Background()
	s1, s2 := b.Open(t), b.Open(t)
	es, c := build("c", 0, ledger.Genesis, 3)
	if err := s1.Commit(ctx, c, 0, es); err != nil {
		t.Fatal(err)
	}
	c1, c2 := *c, *c
	seal1 := &store.Seal{Chain: "c", N: 0, Size: 3, Statement: []byte("one"), EntryHash: [32]byte{1}, SealedAt: base}
	seal2 := &store.Seal{Chain: "c", N: 0, Size: 3, Statement: []byte("two"), EntryHash: [32]byte{2}, SealedAt: base}
	c1.LastSeal = ledger.Link(seal1.EntryHash).String()
	c2.LastSeal = ledger.Link(seal2.EntryHash).String()
	if err := s1.AddSeal(ctx, &c1, seal1); err != nil {
		t.Fatal(err)
	}
	if err := s2.AddSeal(ctx, &c2, seal2); err == nil {
		t.Fatal("seal 0 stored twice")
	}
	seals, err := s2.Seals(ctx, "c")
	if err != nil || len(seals) != 1 || string(seals[0].Statement) != "one" {
		t.Fatalf("seals after the race: %+v, %v", seals, err)
	}
	got, err := s2.LoadChain(ctx, "c")
	if err != nil || got.LastSeal != c1.LastSeal {
		t.Fatalf("chain after the race: %+v, %v (the loser's seal must not be the chain's last)", got, err)
	}
}

// testOneWriterPerChain races writers on independent handles, each loading the chain,
// extending it by a small batch and committing with the size it loaded, retrying on
// ErrConflict the way the ingest pipeline does. Every acknowledged batch must be stored
// exactly once, in one unbroken chain of links, and the stored head must be its end.
func testOneWriterPerChain(t *testing.T, b Backend) {
	ctx := context.Background()
	const writers, batches, per = 4, 12, 3
	handles := make([]store.Store, writers)
	for i := range handles {
		handles[i] = b.Open(t)
	}
	type ack struct {
		writer, batch int
		seqs          []uint64
	}
	var (
		mu        sync.Mutex
		acks      []ack
		conflicts int
		wg        sync.WaitGroup
		errs      = make(chan error, writers)
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := handles[w]
			for bt := 0; bt < batches; {
				cur, err := s.LoadChain(ctx, "race")
				var size uint64
				prev := ledger.Genesis
				switch {
				case errors.Is(err, store.ErrNotFound):
				case err != nil:
					errs <- err
					return
				default:
					size, prev = cur.Size, cur.Head
				}
				es, next := buildTagged("race", size, prev, per, fmt.Sprintf("w%d-b%d", w, bt))
				err = s.Commit(ctx, next, size, es)
				if errors.Is(err, store.ErrConflict) {
					mu.Lock()
					conflicts++
					mu.Unlock()
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d batch %d: %w", w, bt, err)
					return
				}
				a := ack{writer: w, batch: bt}
				for _, e := range es {
					a.seqs = append(a.seqs, e.Seq)
				}
				mu.Lock()
				acks = append(acks, a)
				mu.Unlock()
				bt++
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	all, err := handles[0].Entries(ctx, "race", store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if want := writers * batches * per; len(all) != want {
		t.Fatalf("%d entries stored, want %d (acknowledged)", len(all), want)
	}
	prev := ledger.Genesis
	for i, e := range all {
		if e.Seq != uint64(i) || e.Prev != prev || e.Link != ledger.NextLink(e.Record, prev) {
			t.Fatalf("entry %d breaks the chain: seq %d prev %s", i, e.Seq, e.Prev)
		}
		prev = e.Link
	}
	for _, a := range acks {
		for j, seq := range a.seqs {
			want := fmt.Sprintf("w%d-b%d-%d", a.writer, a.batch, j)
			if got := all[seq].RecordID; got != want {
				t.Fatalf("acknowledged record %s at seq %d holds %s", want, seq, got)
			}
		}
	}
	c, err := handles[1].LoadChain(ctx, "race")
	if err != nil || c.Size != uint64(len(all)) || c.Head != prev {
		t.Fatalf("chain head %+v, %v; want size %d head %s", c, err, len(all), prev)
	}
	t.Logf("%d writers, %d commits, %d conflicts refused", writers, len(acks), conflicts)
}

// buildTagged is build with record ids that name the writer and batch.
func buildTagged(chain string, from uint64, prev ledger.Link, n int, tag string) ([]store.Entry, *store.ChainRecord) {
	es, c := build(chain, from, prev, n)
	prev0 := prev
	for i := range es {
		es[i].RecordID = fmt.Sprintf("%s-%d", tag, i)
		es[i].Record = fmt.Appendf(nil, `{"id":%q}`, es[i].RecordID)
		es[i].Prev = prev0
		es[i].Link = ledger.NextLink(es[i].Record, prev0)
		prev0 = es[i].Link
	}
	c.Head = prev0
	return es, c
}

// testEvidenceHeads: the latest evidence head reported per chain is kept and read back.
func testEvidenceHeads(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.Open(t)
	if _, err := s.EvidenceHead(ctx, "c1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("EvidenceHead before any report: %v", err)
	}
	at := time.Date(2026, 5, 17, 9, 0, 0, 123e6, time.UTC)
	h1 := &store.EvidenceHead{Chain: "c1", Head: ledger.NextLink([]byte("a"), ledger.Genesis), AuditCount: 7, ReportedAt: at}
	h2 := &store.EvidenceHead{Chain: "c1", Head: ledger.NextLink([]byte("b"), ledger.Genesis), AuditCount: 9, ReportedAt: at.Add(time.Second)}
	other := &store.EvidenceHead{Chain: "c2", Head: ledger.Genesis, ReportedAt: at}
	for _, h := range []*store.EvidenceHead{h1, other, h2} {
		if err := s.PutEvidenceHead(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []*store.EvidenceHead{h2, other} {
		got, err := s.EvidenceHead(ctx, want.Chain)
		if err != nil || got.Head != want.Head || got.AuditCount != want.AuditCount || !got.ReportedAt.Equal(want.ReportedAt) {
			t.Fatalf("EvidenceHead(%s) = %+v, %v; want %+v", want.Chain, got, err, want)
		}
	}
}
