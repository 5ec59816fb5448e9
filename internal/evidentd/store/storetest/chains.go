package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// testListChains: ListChains pages through every chain in id order with its size and head,
// each chain once, and an empty store or a page past the last chain lists nothing.
func testListChains(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.Open(t)
	if got, err := s.ListChains(ctx, "", 10); err != nil || len(got) != 0 {
		t.Fatalf("empty store: %v, %v", got, err)
	}
	want := map[string]*store.ChainRecord{}
	for i, id := range []string{"wsp_b", "wsp_a", "run-1", "wsp_c", "a:b"} {
		es, c := build(id, 0, ledger.Genesis, i+1)
		c.ID = id
		if err := s.Commit(ctx, c, 0, es); err != nil {
			t.Fatal(err)
		}
		want[id] = c
	}
	order := []string{"a:b", "run-1", "wsp_a", "wsp_b", "wsp_c"}
	for _, limit := range []int{1, 2, 5, 100} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			var got []string
			after := ""
			for pages := 0; ; pages++ {
				if pages > len(order) {
					t.Fatalf("no end after %d pages: %v", pages, got)
				}
				page, err := s.ListChains(ctx, after, limit)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) > limit {
					t.Fatalf("%d chains in a page of %d", len(page), limit)
				}
				for _, c := range page {
					w := want[c.ID]
					if w == nil || c.Size != w.Size || c.Head != w.Head || c.Profile != w.Profile || c.Closed || c.Created.IsZero() {
						t.Fatalf("chain %+v, want %+v", c, w)
					}
					got = append(got, c.ID)
				}
				if len(page) < limit {
					break
				}
				after = page[len(page)-1].ID
			}
			if fmt.Sprint(got) != fmt.Sprint(order) {
				t.Fatalf("listed %v, want %v", got, order)
			}
		})
	}
	if got, err := s.ListChains(ctx, "wsp_c", 10); err != nil || len(got) != 0 {
		t.Fatalf("after the last chain: %v, %v", got, err)
	}
	if got, err := s.ListChains(ctx, "", 0); err != nil || len(got) != 0 {
		t.Fatalf("limit 0: %v, %v", got, err)
	}
}
