package scitt

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store/embedded"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/log"
)

// TestRegisterOnce registers statements through claims in a real SQLite store and a real
// Tessera log: concurrent registrations of one statement, a statement whose claim holder
// died after appending it (the log reopened, so that only the search of the log can find
// it), and one whose holder is alive and finishes, each end as one log entry, and every
// caller gets its index.
func TestRegisterOnce(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	signer, _, err := log.LoadOrCreateKey(dir, "test.example/once")
	if err != nil {
		t.Fatal(err)
	}
	st, err := embedded.Open(ctx, filepath.Join(dir, embedded.Dir), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	var (
		l   *log.Log
		svc *Service
	)
	// open (re)opens the log, batching appends for batchAge, and the service: a reopened
	// log remembers no append in memory, as after a crash.
	open := func(batchAge time.Duration) {
		t.Helper()
		if l != nil {
			l.Close(context.Background())
		}
		if l, err = log.Open(ctx, log.Options{Dir: filepath.Join(dir, "log"), Signer: signer, CheckpointInterval: 100 * time.Millisecond,
			BatchMaxAge: batchAge}); err != nil {
			t.Fatal(err)
		}
		if svc, err = New(l, priv, "evident:test", Options{Claims: st, Lease: 2 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	open(log.DefaultBatchMaxAge)
	defer func() { l.Close(context.Background()) }()
	statement := func(i int) ([]byte, [32]byte) {
		stmt, entry, err := svc.IssueSeal(ledger.Seal{Chain: "wsp", Profile: "chap/0.3", Size: uint64(i), Head: ledger.Genesis,
			Root: ledger.RootString([32]byte{byte(i)}), SealedAt: ledger.Timestamp(time.Now())})
		if err != nil {
			t.Fatal(err)
		}
		return stmt, entry
	}
	size := func() uint64 {
		t.Helper()
		cp, err := l.Checkpoint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c, err := log.VerifyCheckpoint(cp, l.VerifierKey())
		if err != nil {
			t.Fatal(err)
		}
		return c.Size
	}

	// Eight concurrent registrations of one statement: one entry, one index.
	stmt1, _ := statement(1)
	idx := make([]uint64, 8)
	var wg sync.WaitGroup
	for i := range idx {
		wg.Go(func() {
			var err error
			if idx[i], _, _, err = svc.Register(ctx, stmt1); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, x := range idx {
		if x != idx[0] {
			t.Fatalf("concurrent registrations of one statement got indexes %v", idx)
		}
	}
	if n := size(); n != 2 {
		t.Fatalf("log size %d after genesis and one statement", n)
	}

	// A process claimed a statement, appended it and died before recording where: the
	// next registration takes the expired claim over, finds the entry, appends nothing.
	stmt2, entry2 := statement(2)
	if c, err := st.ClaimEntry(ctx, entry2, "dead-process#1", time.Millisecond, size()); err != nil || !c.Held {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	deadIdx, _, err := l.Append(ctx, entry2[:])
	if err != nil {
		t.Fatal(err)
	}
	open(log.DefaultBatchMaxAge)     // the process died: its log forgot the append
	time.Sleep(5 * time.Millisecond) // and its lease expires
	before := size()
	got, cp, rcpt, err := svc.Register(ctx, stmt2)
	if err != nil || got != deadIdx || len(rcpt) == 0 || len(cp) == 0 {
		t.Fatalf("Register after a dead claim holder = %d, %v; want the entry it appended at %d", got, err, deadIdx)
	}
	if n := size(); n != before {
		t.Fatalf("log grew from %d to %d: the statement was appended twice", before, n)
	}

	// A live process holds the claim and finishes: the registration waits and answers with
	// that process's index.
	stmt3, entry3 := statement(3)
	if c, err := st.ClaimEntry(ctx, entry3, "live-process#1", time.Minute, size()); err != nil || !c.Held {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	liveIdx := make(chan uint64, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		i, _, err := l.Append(context.Background(), entry3[:])
		if err == nil {
			i, err = st.EntryAppended(context.Background(), entry3, i)
		}
		if err != nil {
			t.Error(err)
		}
		liveIdx <- i
	}()
	got, _, _, err = svc.Register(ctx, stmt3)
	if want := <-liveIdx; err != nil || got != want {
		t.Fatalf("Register while another process holds the claim = %d, %v; want its index %d", got, err, want)
	}
	if n := size(); n != 4 {
		t.Fatalf("log size %d, want 4 (genesis and three statements)", n)
	}

	// A registration whose caller gives up while appending releases its claim at once
	// (another owner can take it without waiting for the lease); the entry it may have
	// appended all the same is found by the next registration, not appended again.
	stmt4, entry4 := statement(4)
	// Appends wait 5 s for their batch, so the deadline ends the registration while it
	// appends, well after it claimed the entry, however loaded the machine.
	open(5 * time.Second)
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, _, _, err := svc.Register(short, stmt4); err == nil {
		t.Fatal("Register with a 1 s deadline (batches age 5 s) succeeded")
	}
	c, err := st.ClaimEntry(ctx, entry4, "probe#1", time.Minute, 0)
	if err != nil || !c.Held || !c.Earlier {
		t.Fatalf("the abandoned claim was not released: %+v, %v", c, err)
	}
	if _, err := st.RenewClaim(ctx, entry4, "probe#1", -time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := svc.Register(ctx, stmt4); err != nil {
		t.Fatal(err)
	}
	if n := size(); n != 5 {
		t.Fatalf("log size %d, want 5 (genesis and four statements)", n)
	}
}
