package journal

import (
	"fmt"
	"testing"

	"github.com/evident-log/evident/internal/evidentd/store"
)

// TestIDFilter: every pair added is held, across the growth from one part to the next;
// about 1 % of pairs never added are taken for held; nothing is certain before the filter
// is ready or once it is off.
func TestIDFilter(t *testing.T) {
	f := newIDFilter(nil)
	key := func(i int) store.ChainRecordID {
		return store.ChainRecordID{Chain: fmt.Sprintf("wsp_%d", i%97), ID: fmt.Sprintf("req-%d", i)}
	}
	const n = firstFilterIDs + firstFilterIDs/2 // into the second part
	for i := range n {
		f.add(key(i))
	}
	if len(f.parts) != 2 || f.parts[0].n != firstFilterIDs {
		t.Fatalf("%d parts, the first holding %d", len(f.parts), f.parts[0].n)
	}
	if f.absent(key(0)) || f.absent(key(n+1)) {
		t.Fatal("a filter that is not ready says a pair is absent")
	}
	f.ready = true
	for i := range n {
		if f.absent(key(i)) {
			t.Fatalf("pair %d was added but is said absent", i)
		}
	}
	// The same id in another chain, and ids never added.
	taken := 0
	const fresh = 200_000
	for i := range fresh {
		k := key(n + i)
		if i%2 == 0 {
			k = store.ChainRecordID{Chain: "other", ID: fmt.Sprintf("req-%d", i)}
		}
		if !f.absent(k) {
			taken++
		}
	}
	if rate := float64(taken) / fresh; rate > 0.03 {
		t.Fatalf("%.2f %% of absent pairs taken for held", 100*rate)
	}
	t.Logf("%.3f %% of absent pairs taken for held, %d bytes for %d pairs", 100*float64(taken)/fresh, f.bytes(), n)

	// Past its memory bound the filter switches itself off, says so once, and then says
	// nothing is absent.
	offs := 0
	f = newIDFilter(func(pairs int) {
		offs++
		if pairs != firstFilterIDs {
			t.Errorf("switched off at %d pairs, want %d", pairs, firstFilterIDs)
		}
	})
	f.maxBytes = 2 * firstFilterIDs * filterBitsPerID / 8 // room for the first part, not the second
	f.ready = true
	for i := range firstFilterIDs + 10 {
		f.add(key(i))
	}
	if !f.off || offs != 1 || f.bytes() != 0 {
		t.Fatalf("off %v after %d calls, %d bytes kept", f.off, offs, f.bytes())
	}
	if f.absent(key(n + 1)) {
		t.Fatal("a filter that is off says a pair is absent")
	}
}
