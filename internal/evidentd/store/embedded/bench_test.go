package embedded

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/benchutil"
	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// paddedBatch returns a batch of n entries of chain after size entries ending in head: each
// record a JSON object padded by pad bytes (400: a CHAP envelope's size), with a record id,
// two attributes and, every other entry, metadata and a timestamp.
func paddedBatch(chain string, size uint64, head ledger.Link, n, pad int) store.Batch {
	es := make([]store.Entry, 0, n)
	prev := head
	padding := strings.Repeat("x", pad)
	for i := range n {
		seq := size + uint64(i)
		rec := fmt.Appendf(nil, `{"chain":"%s","seq":%d,"pad":"%s"}`, chain, seq, padding)
		l := ledger.NextLink(rec, prev)
		e := store.Entry{Chain: chain, Seq: seq, Prev: prev, Link: l, Arrival: t0.Add(time.Duration(seq) * time.Millisecond), Record: rec,
			RecordID: fmt.Sprintf("%s-%d", chain, seq), Method: "task.update", Sender: "s", Signed: true,
			Attrs: map[string][]string{"task_id": {fmt.Sprintf("t%d", seq%3)}, "outcome": {"accepted"}}}
		if seq%2 == 0 {
			e.Meta = fmt.Appendf(nil, `{"seq":%d}`, seq)
			e.TS = t0.Add(time.Duration(seq) * time.Second)
		}
		es = append(es, e)
		prev = l
	}
	return store.Batch{Chain: &store.ChainRecord{ID: chain, Profile: "chap/0.3", Size: size + uint64(n), Head: prev, Tree: []byte(`{}`), State: []byte(`{}`)},
		PrevSize: size, Entries: es}
}

// BenchmarkCommitGroup is the store's part of ingest: each op is one group commit of
// chains × per entries (the ingest pipeline's group of concurrent requests): the checks of
// the chains' sizes, record ids and links, the writes of entries and their indexes, and
// the fsync — 64 Coordinators sending single envelopes or a few, 16 sending batches, one
// sending large ones. It reports the process's CPU per entry beside the time.
func BenchmarkCommitGroup(b *testing.B) {
	for _, c := range []struct{ chains, per int }{{64, 1}, {64, 5}, {64, 20}, {16, 500}, {1, 1000}} {
		b.Run(fmt.Sprintf("%dx%d", c.chains, c.per), func(b *testing.B) {
			s, err := Open(context.Background(), b.TempDir(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			heads := make([]ledger.Link, c.chains)
			sizes := make([]uint64, c.chains)
			for i := range heads {
				heads[i] = ledger.Genesis
			}
			clk := benchutil.StartCPU()
			n := 0
			for b.Loop() {
				b.StopTimer()
				group := make([]store.Batch, c.chains)
				for i := range c.chains {
					group[i] = paddedBatch(fmt.Sprintf("wsp_%04d", i), sizes[i], heads[i], c.per, 400)
				}
				b.StartTimer()
				for i, err := range s.CommitGroup(context.Background(), group) {
					if err != nil {
						b.Fatalf("batch %d: %v", i, err)
					}
				}
				for i, bt := range group {
					heads[i], sizes[i] = bt.Chain.Head, bt.Chain.Size
				}
				n += c.chains * c.per
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/entry")
			clk.Report(b, n, "entry")
		})
	}
}

// BenchmarkAtScale loads a store of EVIDENT_BENCH_ENTRIES entries (default 1,000,000) over
// 1,000 chains, then measures what a commit looks up and a read scans: a record id that is
// not there (every new entry's check), one that is, a link, a page of 100 entries, and a
// commit of 100 entries to one chain. It logs (-test.v) the disk bytes per entry against the
// records' own size, and the Go heap in use after the load.
func BenchmarkAtScale(b *testing.B) {
	total := 1_000_000
	if v := os.Getenv("EVIDENT_BENCH_ENTRIES"); v != "" {
		var err error
		if total, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	const chains, per = 1000, 100
	dir := filepath.Join(b.TempDir(), "ledger")
	s, err := Open(context.Background(), dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	heads := make([]ledger.Link, chains)
	sizes := make([]uint64, chains)
	for i := range heads {
		heads[i] = ledger.Genesis
	}
	recBytes := 0
	start := time.Now()
	for loaded := 0; loaded < total; {
		group := make([]store.Batch, 0, 64)
		for len(group) < 64 && loaded < total {
			c := (loaded / per) % chains
			bt := paddedBatch(fmt.Sprintf("wsp_%04d", c), sizes[c], heads[c], per, 400)
			group = append(group, bt)
			heads[c], sizes[c] = bt.Chain.Head, bt.Chain.Size
			for _, e := range bt.Entries {
				recBytes += len(e.Record)
			}
			loaded += per
		}
		for i, err := range s.CommitGroup(ctx, group) {
			if err != nil {
				b.Fatalf("load: batch %d: %v", i, err)
			}
		}
	}
	if err := s.db.Flush(); err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st := s.Stats()
	// A benchmark with sub-benchmarks prints no result line of its own, so these figures are
	// logged rather than reported as metrics.
	b.Logf("store after the load:\n%s", s.db.Metrics())
	b.Logf("loaded %d entries in %v: disk %.1f B/entry, records %.1f B/entry, heap in use %.1f MiB, store memory %.1f MiB",
		total, took.Round(time.Millisecond), float64(st.DiskBytes)/float64(total), float64(recBytes)/float64(total),
		float64(ms.HeapInuse)/(1<<20), float64(st.MemBytes+uint64(st.CacheBytes))/(1<<20))
	b.Run("absent-record-id", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if got, err := s.FindRecordIDs(ctx, "wsp_0007", []string{"absent-" + strconv.Itoa(i)}); err != nil || len(got) != 0 {
				b.Fatal(got, err)
			}
		}
	})
	b.Run("present-record-id", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			c := i % chains
			id := fmt.Sprintf("wsp_%04d-%d", c, uint64(i)%sizes[c])
			if got, err := s.FindRecordIDs(ctx, fmt.Sprintf("wsp_%04d", c), []string{id}); err != nil || len(got) != 1 {
				b.Fatal(id, got, err)
			}
		}
	})
	b.Run("link", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			c := i % chains
			if _, found, err := s.FindLink(ctx, fmt.Sprintf("wsp_%04d", c), heads[c]); err != nil || !found {
				b.Fatal(found, err)
			}
		}
	})
	b.Run("page-of-100", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			c := i % chains
			es, err := s.Entries(ctx, fmt.Sprintf("wsp_%04d", c), store.Filter{From: uint64(i) % max(sizes[c]-100, 1), Limit: 100})
			if err != nil || len(es) != 100 {
				b.Fatal(len(es), err)
			}
		}
	})
	b.Run("commit-100", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			c := i % chains
			bt := paddedBatch(fmt.Sprintf("wsp_%04d", c), sizes[c], heads[c], 100, 400)
			if err := s.Commit(ctx, bt.Chain, bt.PrevSize, bt.Entries); err != nil {
				b.Fatal(err)
			}
			heads[c], sizes[c] = bt.Chain.Head, bt.Chain.Size
		}
	})
}
