package export

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/evident-log/evident/ledger"
)

// TestSealedInclusionCache: chain receipts cut from the cached whole tree are those of the
// one-pass prover, for two chains that do not both fit the budget (the least recently used one
// is dropped and rebuilt), across a later seal of a larger size, from concurrent requests, and
// with no cache at all.
func TestSealedInclusionCache(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	a, b := records(t, "wsp_a", 60), records(t, "wsp_b", 30)
	f.ingest(t, "wsp_a", a[:40])
	f.ingest(t, "wsp_b", b)
	sa, sb := f.seal(t, "wsp_a"), f.seal(t, "wsp_b")
	for _, budget := range []int64{int64(ledger.FullTreeBytes(50)), -1} {
		x := New(Config{Pipeline: f.pipeline, Store: f.store, Service: f.svc, TreeCache: budget})
		check := func(chain string, size, seq uint64, root string) {
			t.Helper()
			got, gotRoot, err := x.sealedInclusion(ctx, chain, size, root, seq)
			if err != nil {
				t.Fatal(err)
			}
			want, wantRoot, err := x.chainInclusion(ctx, chain, size, root, []uint64{seq})
			if err != nil {
				t.Fatal(err)
			}
			if gotRoot != wantRoot || len(got) != len(want[seq]) {
				t.Fatalf("budget %d, %s seq %d of %d: root %x path %d, prover root %x path %d", budget, chain, seq, size, gotRoot, len(got), wantRoot, len(want[seq]))
			}
			for i := range got {
				if !bytes.Equal(got[i], want[seq][i]) {
					t.Fatalf("budget %d, %s seq %d: hash %d differs", budget, chain, seq, i)
				}
			}
		}
		for _, seq := range []uint64{0, 5, 39} {
			check("wsp_a", 40, seq, sa.Seal.Root)
			check("wsp_b", 30, seq%30, sb.Seal.Root)
		}
		if x.trees.used > max(x.trees.budget, 0) {
			t.Fatalf("budget %d: %d bytes kept", budget, x.trees.used)
		}
		if budget < 0 && len(x.trees.m) != 0 {
			t.Fatalf("no cache, yet %d trees kept", len(x.trees.m))
		}
		// A wrong root is refused, not cached.
		if _, _, err := x.sealedInclusion(ctx, "wsp_b", 30, sa.Seal.Root, 1); err == nil {
			t.Fatal("a tree with another seal's root")
		}
		var wg sync.WaitGroup
		for seq := range uint64(30) {
			wg.Go(func() { check("wsp_b", 30, seq, sb.Seal.Root) })
		}
		wg.Wait()
	}
	// A later seal of a larger size replaces the chain's tree.
	f.ingest(t, "wsp_a", a[40:])
	sa2 := f.seal(t, "wsp_a")
	rc, top, _, err := f.x.EntryReceipt(ctx, "wsp_a", 55)
	if err != nil || top.Size != 60 || len(rc) == 0 {
		t.Fatalf("after the second seal: size %d, %v", top.Size, err)
	}
	if _, _, err := f.x.sealedInclusion(ctx, "wsp_a", 60, sa2.Seal.Root, 55); err != nil || f.x.trees.m["wsp_a"].size != 60 {
		t.Fatalf("tree of the later seal: %v", err)
	}
}
