package storetest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// testLargeBatches commits batches larger than one SQL statement holds — many entries,
// and entries whose records add up to megabytes — and reads them back whole and through
// filters that select every entry, every third one and a single one, so reads of entries
// and of their attributes cross every chunk boundary an implementation may have.
func testLargeBatches(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.Open(t)

	const many = 1234
	es, c := build("many", 0, ledger.Genesis, many)
	for i := range es {
		es[i].Attrs = map[string][]string{"third": {fmt.Sprint(es[i].Seq%3 == 0)}, "seq": {fmt.Sprint(es[i].Seq)}}
	}
	if err := s.Commit(ctx, c, 0, es); err != nil {
		t.Fatal(err)
	}

	// A few records of 1.5 MiB each.
	big, cb := build("big", 0, ledger.Genesis, 6)
	prev := ledger.Genesis
	for i := range big {
		big[i].Record = bytes.Repeat([]byte{'a' + byte(i)}, 3<<19)
		big[i].Prev = prev
		big[i].Link = ledger.NextLink(big[i].Record, prev)
		prev = big[i].Link
	}
	cb.Head = prev
	if err := s.Commit(ctx, cb, 0, big); err != nil {
		t.Fatal(err)
	}
	got, err := s.Entries(ctx, "big", store.Filter{})
	if err != nil || len(got) != len(big) {
		t.Fatalf("big entries: %d, %v", len(got), err)
	}
	for i := range got {
		if !bytes.Equal(got[i].Record, big[i].Record) || got[i].Link != big[i].Link {
			t.Fatalf("big entry %d differs", i)
		}
	}

	every := func(uint64) bool { return true }
	for _, tc := range []struct {
		name string
		f    store.Filter
		want func(seq uint64) bool
	}{
		{"all", store.Filter{}, every},
		{"from 700", store.Filter{From: 700}, func(seq uint64) bool { return seq >= 700 }},
		{"every third", store.Filter{Attrs: map[string][]string{"third": {"true"}}}, func(seq uint64) bool { return seq%3 == 0 }},
		{"one", store.Filter{Attrs: map[string][]string{"seq": {"1001"}}}, func(seq uint64) bool { return seq == 1001 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Entries(ctx, "many", tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var want []uint64
			for seq := range uint64(many) {
				if tc.want(seq) {
					want = append(want, seq)
				}
			}
			seqs := make([]uint64, len(got))
			for i, e := range got {
				seqs[i] = e.Seq
				if !entryEqual(e, es[e.Seq]) {
					t.Fatalf("entry %d: got %+v, want %+v", e.Seq, e, es[e.Seq])
				}
				if want := es[e.Seq].Attrs; len(e.Attrs) != len(want) || !slices.Equal(e.Attrs["seq"], want["seq"]) || !slices.Equal(e.Attrs["third"], want["third"]) {
					t.Fatalf("entry %d attributes %v, want %v", e.Seq, e.Attrs, want)
				}
			}
			if !slices.Equal(seqs, want) {
				t.Fatalf("got %d entries, want %d (first got %v)", len(seqs), len(want), seqs[:min(5, len(seqs))])
			}
		})
	}
}
