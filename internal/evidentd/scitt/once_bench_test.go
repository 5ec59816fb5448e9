package scitt

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
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
	"github.com/evident-log/evident/internal/evidentd/store/mysql"
	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/log"
)

// BenchmarkRegister measures what exactly-once appends cost a registration: Register of
// distinct seal statements into a real Tessera log (POSIX, 100 ms checkpoints), without
// and with claims in a real SQLite store (WAL, synchronous=FULL), by one caller at a time
// and by 32 concurrent callers. Each registration waits for a checkpoint covering it.
func BenchmarkRegister(b *testing.B) {
	for _, callers := range []int{1, 32} {
		for _, claims := range []bool{false, true} {
			b.Run(fmt.Sprintf("callers=%d/claims=%t", callers, claims), func(b *testing.B) {
				svc := benchService(b, claims)
				stmts := benchStatements(b, svc, b.N)
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for range callers {
					wg.Go(func() {
						for i := next.Add(1) - 1; i < int64(len(stmts)); i = next.Add(1) - 1 {
							if _, _, _, err := svc.Register(context.Background(), stmts[i]); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/register")
			})
		}
	}
}

// BenchmarkClaimEntry measures the claim operations of one append alone: ClaimEntry of a
// new entry, then EntryAppended, on the embedded store (Pebble, synced) and, when the test MariaDB
// is configured, on MySQL (the distributed mode's store).
func BenchmarkClaimEntry(b *testing.B) {
	b.Run("embedded", func(b *testing.B) {
		st, err := embedded.Open(b.Context(), filepath.Join(b.TempDir(), embedded.Dir), embedded.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		benchClaims(b, st)
	})
	b.Run("mysql", func(b *testing.B) {
		st, err := mysql.Open(b.Context(), testinfra.MySQLDatabase(b), mysql.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		benchClaims(b, st)
	})
}

// benchClaims claims b.N new entries and records each appended.
func benchClaims(b *testing.B, claims store.Claims) {
	ctx := b.Context()
	for i := 0; b.Loop(); i++ {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(i))
		entry := sha256.Sum256(n[:])
		c, err := claims.ClaimEntry(ctx, entry, "bench#1", DefaultLease, uint64(i))
		if err != nil || !c.Held {
			b.Fatalf("claim %+v, %v", c, err)
		}
		if _, err := claims.EntryAppended(ctx, entry, uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// benchService returns a service on a new Tessera log, with claims in a new SQLite store
// when claims is set, with its genesis entry appended.
func benchService(b *testing.B, claims bool) *Service {
	b.Helper()
	dir := b.TempDir()
	signer, _, err := log.LoadOrCreateKey(dir, "bench.example/once")
	if err != nil {
		b.Fatal(err)
	}
	l, err := log.Open(b.Context(), log.Options{Dir: filepath.Join(dir, "log"), Signer: signer, CheckpointInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close(context.Background()) })
	var o Options
	if claims {
		st, err := embedded.Open(b.Context(), filepath.Join(dir, embedded.Dir), embedded.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		o.Claims = st
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	svc, err := New(l, priv, "evident:bench", o)
	if err != nil {
		b.Fatal(err)
	}
	if err := svc.ensureGenesis(b.Context()); err != nil {
		b.Fatal(err)
	}
	return svc
}

// benchStatements issues n distinct seal statements.
func benchStatements(b *testing.B, svc *Service, n int) [][]byte {
	b.Helper()
	out := make([][]byte, n)
	for i := range out {
		stmt, _, err := svc.IssueSeal(ledger.Seal{Chain: "wsp_bench", Profile: "chap/0.3", Size: uint64(i + 1), Head: ledger.Genesis,
			Root: ledger.RootString(sha256.Sum256(fmt.Appendf(nil, "%d", i))), SealedAt: ledger.Timestamp(time.Now())})
		if err != nil {
			b.Fatal(err)
		}
		out[i] = stmt
	}
	return out
}
