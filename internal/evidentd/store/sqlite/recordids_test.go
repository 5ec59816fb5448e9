package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// TestEachRecordID: every (chain, record id) the entries hold, and nothing else (entries
// without an id, ids of other chains), chain by chain in seq order, in batches of at most
// n whatever the chains' sizes against n; fn's error stops the walk.
func TestEachRecordID(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var want []store.ChainRecordID
	for c, n := range []int{0, 1, 3, 7, 2, 10} { // chain sizes around and past the batch size
		chain := fmt.Sprintf("wsp_%d", c)
		head := ledger.Genesis
		var es []store.Entry
		for i := range n {
			rec := fmt.Appendf(nil, `{"c":%q,"i":%d}`, chain, i)
			l := ledger.NextLink(rec, head)
			e := store.Entry{Chain: chain, Seq: uint64(i), Prev: head, Link: l, Record: rec, Method: "m", Sender: "s"}
			if i%4 != 3 { // every fourth entry has no record id
				e.RecordID = fmt.Sprintf("id-%02d", n-1-i) // ids in the reverse of seq order
				want = append(want, store.ChainRecordID{Chain: chain, ID: e.RecordID})
			}
			es = append(es, e)
			head = l
		}
		rec := &store.ChainRecord{ID: chain, Profile: "chap/0.3", Size: uint64(n), Head: head, Tree: []byte("{}"), State: []byte("{}")}
		if err := s.Commit(ctx, rec, 0, es); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []int{1, 3, 4, 100} {
		var got []store.ChainRecordID
		calls := 0
		err := s.EachRecordID(ctx, n, func(keys []store.ChainRecordID) error {
			if len(keys) == 0 || len(keys) > n {
				t.Fatalf("n=%d: a batch of %d", n, len(keys))
			}
			calls++
			got = append(got, keys...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) { // chain by chain, in seq order
			t.Fatalf("n=%d: got %v\nwant %v", n, got, want)
		}
		if wantCalls := (len(want) + n - 1) / n; calls != wantCalls {
			t.Fatalf("n=%d: %d batches, want %d", n, calls, wantCalls)
		}
	}
	stop := errors.New("stop")
	calls := 0
	if err := s.EachRecordID(ctx, 2, func([]store.ChainRecordID) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("fn's error: %v after %d calls", err, calls)
	}
}
