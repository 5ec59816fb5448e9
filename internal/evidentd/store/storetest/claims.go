package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
)

// claims returns the store.Claims of a handle, failing the test when the store has none.
func claims(t *testing.T, s store.Store) store.Claims {
	t.Helper()
	c, ok := s.(store.Claims)
	if !ok {
		t.Fatalf("%T does not implement store.Claims", s)
	}
	return c
}

// testClaims checks the claims on log entries: one owner at a time, a lease that expires,
// the log size of the first claim kept, and the first recorded index standing for ever.
func testClaims(t *testing.T, b Backend) {
	ctx := context.Background()
	a, other := claims(t, b.Open(t)), claims(t, b.Open(t))
	e := [32]byte{0xe1}

	c, err := a.ClaimEntry(ctx, e, "A", time.Minute, 10)
	if err != nil || !c.Held || c.Earlier || c.From != 10 || c.Owner != "A" || c.Appended {
		t.Fatalf("first claim = %+v, %v", c, err)
	}
	// Another owner cannot take a live claim; it learns who holds it and until when.
	c, err = other.ClaimEntry(ctx, e, "B", time.Minute, 12)
	if err != nil || c.Held || !c.Earlier || c.Owner != "A" || c.From != 10 || time.Until(c.Until) < 30*time.Second {
		t.Fatalf("claim held by another = %+v, %v", c, err)
	}
	if ok, err := other.RenewClaim(ctx, e, "B", time.Minute); err != nil || ok {
		t.Fatalf("renewal by a non-owner = %v, %v", ok, err)
	}
	if ok, err := a.RenewClaim(ctx, e, "A", time.Minute); err != nil || !ok {
		t.Fatalf("renewal by the owner = %v, %v", ok, err)
	}

	// A lease that expired is taken over; the first claim's log size stays.
	if ok, err := a.RenewClaim(ctx, e, "A", -time.Second); err != nil || !ok {
		t.Fatalf("shortening the lease = %v, %v", ok, err)
	}
	c, err = other.ClaimEntry(ctx, e, "B", time.Minute, 12)
	if err != nil || !c.Held || !c.Earlier || c.Owner != "B" || c.From != 10 {
		t.Fatalf("take-over of an expired claim = %+v, %v", c, err)
	}
	if ok, err := a.RenewClaim(ctx, e, "A", time.Minute); err != nil || ok {
		t.Fatalf("renewal by the owner whose claim was taken over = %v, %v", ok, err)
	}

	// The first recorded index stands; a recorded entry cannot be claimed again.
	if idx, err := other.EntryAppended(ctx, e, 11); err != nil || idx != 11 {
		t.Fatalf("EntryAppended = %d, %v", idx, err)
	}
	if idx, err := a.EntryAppended(ctx, e, 99); err != nil || idx != 11 {
		t.Fatalf("second EntryAppended = %d, %v (the first must stand)", idx, err)
	}
	c, err = a.ClaimEntry(ctx, e, "C", time.Minute, 20)
	if err != nil || c.Held || !c.Appended || c.Index != 11 {
		t.Fatalf("claim of an appended entry = %+v, %v", c, err)
	}
	if ok, err := other.RenewClaim(ctx, e, "B", time.Minute); err != nil || ok {
		t.Fatalf("renewal of an appended entry = %v, %v", ok, err)
	}

	// ExpireClaims frees live claims (not appended ones).
	f := [32]byte{0xf1}
	if c, err := a.ClaimEntry(ctx, f, "A", time.Hour, 30); err != nil || !c.Held {
		t.Fatalf("claim f = %+v, %v", c, err)
	}
	if err := other.ExpireClaims(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := other.ClaimEntry(ctx, f, "B", time.Minute, 31); err != nil || !c.Held || c.From != 30 {
		t.Fatalf("claim after ExpireClaims = %+v, %v", c, err)
	}
	if c, err := other.ClaimEntry(ctx, e, "B", time.Minute, 31); err != nil || c.Held || !c.Appended || c.Index != 11 {
		t.Fatalf("appended entry after ExpireClaims = %+v, %v", c, err)
	}

	// Many owners race for one entry through two handles: exactly one holds it.
	g := [32]byte{0x91}
	var wg sync.WaitGroup
	var mu sync.Mutex
	held := 0
	start := make(chan struct{})
	for i := range 16 {
		h := a
		if i%2 == 1 {
			h = other
		}
		wg.Go(func() {
			<-start
			c, err := h.ClaimEntry(ctx, g, fmt.Sprintf("owner-%d", i), time.Minute, 40)
			if err != nil {
				t.Error(err)
				return
			}
			if c.Held {
				mu.Lock()
				held++
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if held != 1 {
		t.Fatalf("%d owners hold one entry's claim", held)
	}
}
