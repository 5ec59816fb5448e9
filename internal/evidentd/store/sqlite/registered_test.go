package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
)

func TestRegistered(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	add := func(id, kind, iss string, idx uint64, done bool) {
		t.Helper()
		if _, _, err := s.AddRegistration(ctx, &store.Registration{ID: id, Kind: kind, Statement: []byte(id), Issuer: iss, Subject: "s", Received: now}); err != nil {
			t.Fatal(err)
		}
		if done {
			if _, err := s.CompleteRegistration(ctx, id, idx, []byte("cp"), []byte("r")); err != nil {
				t.Fatal(err)
			}
		}
	}
	add("p1", store.KindPolicy, "svc", 0, true)
	add("b", store.KindStatement, "iss-b", 5, true) // received first, logged later
	add("a", store.KindStatement, "iss-a", 2, true)
	add("c", store.KindStatement, "iss-a", 0, false) // pending: not listed
	add("d", store.KindStatement, "iss-a", 9, true)
	for _, tc := range []struct {
		kind, issuer string
		want         []string
	}{
		{store.KindStatement, "", []string{"a", "b", "d"}},
		{store.KindStatement, "iss-a", []string{"a", "d"}},
		{store.KindStatement, "nobody", nil},
		{store.KindPolicy, "", []string{"p1"}},
	} {
		got, err := s.Registered(ctx, tc.kind, tc.issuer)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range got {
			ids = append(ids, r.ID)
		}
		if len(ids) != len(tc.want) {
			t.Fatalf("Registered(%s, %q) = %v, want %v", tc.kind, tc.issuer, ids, tc.want)
		}
		for i := range ids {
			if ids[i] != tc.want[i] {
				t.Fatalf("Registered(%s, %q) = %v, want %v", tc.kind, tc.issuer, ids, tc.want)
			}
		}
	}
}
