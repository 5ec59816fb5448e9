package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
)

// testRegistrations checks store.Registrations, for stores that implement it: content-
// addressed ids (the same id twice keeps the first), pending and completed registrations,
// policies, persistence across a reopen, and two handles racing to add one id.
func testRegistrations(t *testing.T, b Backend) {
	ctx := context.Background()
	s, ok := b.Open(t).(store.Registrations)
	if !ok {
		t.Skip("this store keeps no SCRAPI registrations")
	}
	now := time.UnixMilli(1767225600123).UTC()
	pol := &store.Registration{ID: "p1", Kind: store.KindPolicy, Statement: []byte("policy"), Issuer: "svc", Subject: "urn:evident:registration-policy", Received: now}
	if _, created, err := s.AddRegistration(ctx, pol); err != nil || !created {
		t.Fatalf("add policy: created=%v err=%v", created, err)
	}
	a := &store.Registration{ID: "a", Kind: store.KindStatement, Statement: []byte("stmt-a"), Issuer: "iss-a", Subject: "sub-a", PolicyID: "p1", Received: now}
	if _, created, err := s.AddRegistration(ctx, a); err != nil || !created {
		t.Fatalf("add: created=%v err=%v", created, err)
	}
	dup := *a
	dup.Statement = []byte("other")
	got, created, err := s.AddRegistration(ctx, &dup)
	if err != nil || created || !bytes.Equal(got.Statement, []byte("stmt-a")) {
		t.Fatalf("duplicate: created=%v err=%v got=%+v", created, err, got)
	}
	if _, _, err := s.AddRegistration(ctx, &store.Registration{ID: "x", Kind: "bogus"}); err == nil {
		t.Fatal("bogus kind accepted")
	}
	pend, err := s.PendingRegistrations(ctx)
	if err != nil || len(pend) != 2 || pend[0].ID != "p1" || pend[1].ID != "a" {
		t.Fatalf("pending = %+v, %v", pend, err)
	}
	if got, err := s.CompleteRegistration(ctx, "a", 7, []byte("cp"), []byte("rcpt")); err != nil || got.LogIndex != 7 || !got.Registered {
		t.Fatalf("complete = %+v, %v", got, err)
	}
	if got, err := s.CompleteRegistration(ctx, "a", 8, []byte("cp2"), []byte("rcpt2")); err != nil || got.LogIndex != 7 || string(got.Receipt) != "rcpt" {
		t.Fatalf("second completion = %+v, %v (the first must stand)", got, err)
	}
	if _, err := s.CompleteRegistration(ctx, "nope", 1, nil, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("complete unknown: %v", err)
	}
	if _, err := s.Registration(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	// Two handles add the same new id at once: exactly one creates it.
	other := b.Open(t).(store.Registrations)
	var wg sync.WaitGroup
	var mu sync.Mutex
	creations := 0
	for i, h := range []store.Registrations{s, other, s, other} {
		wg.Go(func() {
			r := &store.Registration{ID: "race", Kind: store.KindStatement, Statement: fmt.Appendf(nil, "stmt-%d", i), Issuer: "i", Subject: "s", Received: now}
			got, created, err := h.AddRegistration(ctx, r)
			if err != nil || got == nil || got.ID != "race" {
				t.Errorf("racing add: %+v, %v", got, err)
				return
			}
			if created {
				mu.Lock()
				creations++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if creations != 1 {
		t.Fatalf("%d handles created the same registration", creations)
	}
	check := func(s store.Registrations) {
		t.Helper()
		r, err := s.Registration(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if !r.Registered || r.LogIndex != 7 || string(r.Receipt) != "rcpt" || string(r.Checkpoint) != "cp" || r.PolicyID != "p1" || !r.Received.Equal(now) ||
			r.Issuer != "iss-a" || r.Subject != "sub-a" || r.Kind != store.KindStatement {
			t.Fatalf("registration %+v", r)
		}
		pols, err := s.Policies(ctx)
		if err != nil || len(pols) != 1 || pols[0].ID != "p1" {
			t.Fatalf("policies = %+v, %v", pols, err)
		}
		if pend, _ := s.PendingRegistrations(ctx); len(pend) != 2 || pend[0].ID != "p1" || pend[1].ID != "race" {
			t.Fatalf("pending = %+v", pend)
		}
	}
	check(s)
	s.(store.Store).Close()
	check(b.Open(t).(store.Registrations))
}
