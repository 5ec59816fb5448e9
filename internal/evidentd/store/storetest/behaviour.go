package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

var base = time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC)

// build returns n entries continuing a chain of size from at head prev, and the chain record after them.
func build(chain string, from uint64, prev ledger.Link, n int) ([]store.Entry, *store.ChainRecord) {
	var es []store.Entry
	for i := range n {
		seq := from + uint64(i)
		rec := fmt.Appendf(nil, `{"chain":%q,"seq":%d}`, chain, seq)
		l := ledger.NextLink(rec, prev)
		e := store.Entry{Chain: chain, Seq: seq, Prev: prev, Link: l, Arrival: base.Add(time.Duration(seq) * time.Second), Record: rec,
			RecordID: fmt.Sprintf("id-%d", seq), Method: []string{"a.m", "b.m"}[seq%2], Sender: []string{"s0", "s1", "s2"}[seq%3], Signed: seq%2 == 0}
		if seq%3 == 1 {
			e.Meta = fmt.Appendf(nil, `{"arrived":"2026-05-17T09:00:00.000Z","seq":%d}`, seq)
		}
		if seq%5 != 0 {
			e.TS = base.Add(time.Duration(seq) * time.Millisecond)
		} else {
			e.RecordID = "" // no id: NULL, never a conflict
		}
		es = append(es, e)
		prev = l
	}
	return es, &store.ChainRecord{ID: chain, Profile: "chap/0.3", Size: from + uint64(n), Head: prev,
		Tree: fmt.Appendf(nil, `{"size":%d}`, from+uint64(n)), State: []byte(`{"keys":{}}`)}
}

func testCommitLoadEntries(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.Open(t)
	if _, err := s.LoadChain(ctx, "c1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LoadChain of a missing chain: %v", err)
	}
	es1, c1 := build("c1", 0, ledger.Genesis, 10)
	if err := s.Commit(ctx, c1, 0, es1); err != nil {
		t.Fatal(err)
	}
	es2, c2 := build("c1", 10, c1.Head, 10)
	if err := s.Commit(ctx, c2, 10, es2); err != nil {
		t.Fatal(err)
	}
	// Another chain with its own entries and the same record ids.
	other, co := build("c2", 0, ledger.Genesis, 3)
	if err := s.Commit(ctx, co, 0, other); err != nil {
		t.Fatal(err)
	}
	all := append(slices.Clone(es1), es2...)
	got, err := s.LoadChain(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Size != 20 || got.Head != c2.Head || got.Profile != "chap/0.3" || !bytes.Equal(got.Tree, c2.Tree) || !bytes.Equal(got.State, c2.State) ||
		got.Closed || got.Created.IsZero() || time.Since(got.Created) > time.Minute {
		t.Fatalf("LoadChain = %+v", got)
	}
	ids, err := s.Chains(ctx)
	if err != nil || !slices.Equal(ids, []string{"c1", "c2"}) {
		t.Fatalf("Chains = %v, %v", ids, err)
	}
	match := func(f func(e store.Entry) bool) []store.Entry {
		var out []store.Entry
		for _, e := range all {
			if f(e) {
				out = append(out, e)
			}
		}
		return out
	}
	cases := []struct {
		name string
		f    store.Filter
		want []store.Entry
	}{
		{"all", store.Filter{}, all},
		{"from", store.Filter{From: 7}, all[7:]},
		{"from past end", store.Filter{From: 99}, nil},
		{"limit", store.Filter{Limit: 3}, all[:3]},
		{"from and limit", store.Filter{From: 15, Limit: 2}, all[15:17]},
		{"method", store.Filter{Method: "b.m"}, match(func(e store.Entry) bool { return e.Method == "b.m" })},
		{"sender", store.Filter{Sender: "s2"}, match(func(e store.Entry) bool { return e.Sender == "s2" })},
		{"method and sender", store.Filter{Method: "a.m", Sender: "s0"}, match(func(e store.Entry) bool { return e.Method == "a.m" && e.Sender == "s0" })},
		{"since", store.Filter{Since: base.Add(12 * time.Second)}, all[12:]},
		{"until", store.Filter{Until: base.Add(4 * time.Second)}, all[:4]},
		{"window", store.Filter{Since: base.Add(3 * time.Second), Until: base.Add(6 * time.Second)}, all[3:6]},
		{"window, sender and limit", store.Filter{Since: base.Add(2 * time.Second), Sender: "s1", Limit: 2}, match(func(e store.Entry) bool {
			return e.Seq >= 2 && e.Sender == "s1"
		})[:2]},
		{"unknown method", store.Filter{Method: "nope"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.Entries(ctx, "c1", c.f)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("%d entries, want %d", len(got), len(c.want))
			}
			for i := range got {
				if !entryEqual(got[i], c.want[i]) {
					t.Fatalf("entry %d:\n got %+v\nwant %+v", i, got[i], c.want[i])
				}
			}
		})
	}
	if got, err := s.Entries(ctx, "c2", store.Filter{}); err != nil || len(got) != 3 || !entryEqual(got[2], other[2]) {
		t.Fatalf("c2 entries %d, %v", len(got), err)
	}
	if got, err := s.Entries(ctx, "none", store.Filter{}); err != nil || len(got) != 0 {
		t.Fatalf("entries of a missing chain: %v, %v", got, err)
	}
}

func entryEqual(a, b store.Entry) bool {
	return a.Chain == b.Chain && a.Seq == b.Seq && a.Prev == b.Prev && a.Link == b.Link && a.Arrival.Equal(b.Arrival) &&
		bytes.Equal(a.Record, b.Record) && a.RecordID == b.RecordID && a.Method == b.Method && a.Sender == b.Sender &&
		a.TS.Equal(b.TS) && a.Signed == b.Signed && bytes.Equal(a.Meta, b.Meta) && (a.Meta == nil) == (b.Meta == nil)
}

func testCommitConflicts(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.Open(t)
	es, c := build("c", 0, ledger.Genesis, 4)
	// A new chain must be committed with prevSize 0.
	if err := s.Commit(ctx, c, 3, es); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("new chain with prevSize 3: %v", err)
	}
	if err := s.Commit(ctx, c, 0, es); err != nil {
		t.Fatal(err)
	}
	// So must a batch of no entries, which only the chain's size can refuse.
	if err := s.Commit(ctx, c, 0, nil); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("existing chain committed with prevSize 0 and no entries: %v", err)
	}
	more, c2 := build("c", 4, c.Head, 2)
	for _, stale := range []uint64{0, 3, 5} {
		if err := s.Commit(ctx, c2, stale, more); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("stale prevSize %d: %v", stale, err)
		}
	}
	// A duplicate record_id refuses the whole batch.
	dup := slices.Clone(more)
	dup[1].RecordID = es[1].RecordID
	if err := s.Commit(ctx, c2, 4, dup); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("duplicate record_id: %v", err)
	}
	// A duplicate record_id within the batch too.
	dup = slices.Clone(more)
	dup[1].RecordID = dup[0].RecordID
	if err := s.Commit(ctx, c2, 4, dup); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("duplicate record_id within a batch: %v", err)
	}
	// Nothing of the refused commits was stored.
	got, err := s.LoadChain(ctx, "c")
	if err != nil || got.Size != 4 || got.Head != c.Head {
		t.Fatalf("after refused commits: %+v, %v", got, err)
	}
	if all, _ := s.Entries(ctx, "c", store.Filter{}); len(all) != 4 {
		t.Fatalf("%d entries after refused commits", len(all))
	}
	if err := s.Commit(ctx, c2, 4, more); err != nil {
		t.Fatal(err)
	}
	if all, _ := s.Entries(ctx, "c", store.Filter{}); len(all) != 6 {
		t.Fatalf("%d entries", len(all))
	}
}

func testFindLinkAndRecordIDs(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.Open(t)
	const n = 1203
	es, c := build("c", 0, ledger.Genesis, n)
	if err := s.Commit(ctx, c, 0, es); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, 600, n - 1} {
		seq, ok, err := s.FindLink(ctx, "c", es[i].Link)
		if err != nil || !ok || seq != uint64(i) {
			t.Fatalf("FindLink(%d) = %d %v %v", i, seq, ok, err)
		}
	}
	if _, ok, err := s.FindLink(ctx, "c", ledger.Genesis); ok || err != nil {
		t.Fatalf("FindLink(genesis) = %v %v", ok, err)
	}
	if _, ok, err := s.FindLink(ctx, "other", es[3].Link); ok || err != nil {
		t.Fatalf("FindLink in another chain = %v %v", ok, err)
	}
	// Ask for every id plus as many unknown ones: more than two chunks of 500.
	var ids []string
	want := map[string]uint64{}
	for _, e := range es {
		if e.RecordID != "" {
			ids = append(ids, e.RecordID)
			want[e.RecordID] = e.Seq
		}
		ids = append(ids, fmt.Sprintf("unknown-%d", e.Seq))
	}
	if len(ids) < 1500 {
		t.Fatalf("only %d ids", len(ids))
	}
	got, err := s.FindRecordIDs(ctx, "c", ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d ids found, want %d", len(got), len(want))
	}
	for id, seq := range want {
		if got[id] != seq {
			t.Fatalf("id %s at %d, want %d", id, got[id], seq)
		}
	}
	if got, err := s.FindRecordIDs(ctx, "other", ids); err != nil || len(got) != 0 {
		t.Fatalf("ids in another chain: %v %v", got, err)
	}
	if got, err := s.FindRecordIDs(ctx, "c", nil); err != nil || len(got) != 0 {
		t.Fatalf("no ids: %v %v", got, err)
	}
	if got, err := s.FindRecordIDs(ctx, "c", []string{"id-1"}); err != nil || len(got) != 1 || got["id-1"] != 1 {
		t.Fatalf("one id: %v %v", got, err)
	}
}

func testSealsAndForks(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.Open(t)
	es, c := build("c", 0, ledger.Genesis, 5)
	if err := s.Commit(ctx, c, 0, es); err != nil {
		t.Fatal(err)
	}
	esB, cB := build("b", 0, ledger.Genesis, 1)
	if err := s.Commit(ctx, cB, 0, esB); err != nil {
		t.Fatal(err)
	}
	seal0 := &store.Seal{Chain: "c", N: 0, Size: 5, Statement: []byte("stmt-0"), EntryHash: [32]byte{1}, SealedAt: base.Add(time.Hour)}
	c.LastSeal, c.SealedSize = ledger.Link(seal0.EntryHash).String(), 5
	if err := s.AddSeal(ctx, c, seal0); err != nil {
		t.Fatal(err)
	}
	// A seal for a chain whose size moved is a conflict.
	stale := *c
	stale.Size = 4
	if err := s.AddSeal(ctx, &stale, &store.Seal{Chain: "c", N: 1, Size: 4, Statement: []byte("x"), SealedAt: base}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("AddSeal on a stale chain: %v", err)
	}
	sealB := &store.Seal{Chain: "b", N: 0, Size: 1, Closed: true, Statement: []byte("stmt-b"), EntryHash: [32]byte{2}, SealedAt: base.Add(2 * time.Hour)}
	cB.Closed = true
	if err := s.AddSeal(ctx, cB, sealB); err != nil {
		t.Fatal(err)
	}
	pending, err := s.PendingSeals(ctx)
	if err != nil || len(pending) != 2 || pending[0].Chain != "b" || pending[1].Chain != "c" || pending[1].Registered {
		t.Fatalf("PendingSeals = %+v, %v", pending, err)
	}
	if got, err := s.CompleteSeal(ctx, "c", 0, 42, []byte("checkpoint"), []byte("receipt")); err != nil || got.LogIndex != 42 || !got.Registered ||
		string(got.Receipt) != "receipt" || string(got.Statement) != "stmt-0" {
		t.Fatalf("CompleteSeal = %+v, %v", got, err)
	}
	// A second completion (another replica, a retry) changes nothing and answers with the first.
	if got, err := s.CompleteSeal(ctx, "c", 0, 43, []byte("other checkpoint"), []byte("other receipt")); err != nil || got.LogIndex != 42 ||
		string(got.Receipt) != "receipt" || string(got.Checkpoint) != "checkpoint" {
		t.Fatalf("second CompleteSeal = %+v, %v", got, err)
	}
	if _, err := s.CompleteSeal(ctx, "c", 7, 1, nil, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("CompleteSeal of a missing seal: %v", err)
	}
	pending, _ = s.PendingSeals(ctx)
	if len(pending) != 1 || pending[0].Chain != "b" || !pending[0].Closed || !bytes.Equal(pending[0].Statement, []byte("stmt-b")) {
		t.Fatalf("PendingSeals after completion = %+v", pending)
	}
	// Second seal of c.
	es2, c2 := build("c", 5, c.Head, 2)
	c2.LastSeal, c2.SealedSize = c.LastSeal, c.SealedSize
	if err := s.Commit(ctx, c2, 5, es2); err != nil {
		t.Fatal(err)
	}
	seal1 := &store.Seal{Chain: "c", N: 1, Size: 7, Statement: []byte("stmt-1"), EntryHash: [32]byte{3}, SealedAt: base.Add(3 * time.Hour)}
	c2.LastSeal, c2.SealedSize = ledger.Link(seal1.EntryHash).String(), 7
	if err := s.AddSeal(ctx, c2, seal1); err != nil {
		t.Fatal(err)
	}
	if err := s.AddSeal(ctx, c2, seal1); err == nil {
		t.Fatal("the same seal number stored twice")
	}

	f1 := &store.Fork{Chain: "c", Seq: 3, ExistingSeq: 3, Record: []byte(`{"fork":1}`), Arrival: base.Add(time.Minute)}
	f2 := &store.Fork{Chain: "c", Seq: 1, ExistingSeq: 1, Record: []byte(`{"fork":2}`), Arrival: base.Add(2 * time.Minute)}
	for _, f := range []*store.Fork{f1, f2} {
		if err := s.RecordFork(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	check := func(s store.Store) {
		t.Helper()
		seals, err := s.Seals(ctx, "c")
		if err != nil || len(seals) != 2 {
			t.Fatalf("Seals = %+v, %v", seals, err)
		}
		s0, s1 := seals[0], seals[1]
		if s0.N != 0 || s0.Size != 5 || !s0.Registered || s0.LogIndex != 42 || string(s0.Checkpoint) != "checkpoint" || string(s0.Receipt) != "receipt" ||
			s0.EntryHash != seal0.EntryHash || !s0.SealedAt.Equal(seal0.SealedAt) || string(s0.Statement) != "stmt-0" {
			t.Fatalf("seal 0 = %+v", s0)
		}
		if s1.N != 1 || s1.Size != 7 || s1.Registered || s1.LogIndex != 0 || s1.Receipt != nil || s1.Closed {
			t.Fatalf("seal 1 = %+v", s1)
		}
		forks, err := s.Forks(ctx, "c")
		if err != nil || len(forks) != 2 {
			t.Fatalf("Forks = %+v, %v", forks, err)
		}
		for i, want := range []*store.Fork{f1, f2} {
			got := forks[i]
			if got.Chain != want.Chain || got.Seq != want.Seq || got.ExistingSeq != want.ExistingSeq || !bytes.Equal(got.Record, want.Record) || !got.Arrival.Equal(want.Arrival) {
				t.Fatalf("fork %d = %+v", i, got)
			}
		}
		if forks, _ := s.Forks(ctx, "b"); len(forks) != 0 {
			t.Fatalf("forks of b: %+v", forks)
		}
		got, err := s.LoadChain(ctx, "c")
		if err != nil || got.Size != 7 || got.Head != c2.Head || got.LastSeal != c2.LastSeal || got.SealedSize != 7 {
			t.Fatalf("chain c = %+v, %v", got, err)
		}
		gb, err := s.LoadChain(ctx, "b")
		if err != nil || !gb.Closed {
			t.Fatalf("chain b = %+v, %v", gb, err)
		}
		es, err := s.Entries(ctx, "c", store.Filter{})
		if err != nil || len(es) != 7 || !entryEqual(es[6], es2[1]) {
			t.Fatalf("entries %d, %v", len(es), err)
		}
		pending, _ := s.PendingSeals(ctx)
		if len(pending) != 2 || pending[0].Chain != "b" || pending[1].Chain != "c" || pending[1].N != 1 {
			t.Fatalf("pending %+v", pending)
		}
	}
	check(s)
	// Everything persists across a close and reopen of the store.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := b.Open(t)
	check(s2)
	// And the reopened store keeps accepting writes where the chain left off.
	es3, c3 := build("c", 7, c2.Head, 1)
	if err := s2.Commit(ctx, c3, 7, es3); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s2.FindLink(ctx, "c", es3[0].Link); !ok || err != nil {
		t.Fatalf("FindLink after reopen: %v %v", ok, err)
	}
}
