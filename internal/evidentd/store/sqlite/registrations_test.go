package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
)

func TestRegistrations(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
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
	// The same id again: the first one is kept and returned.
	dup := *a
	dup.Statement = []byte("other")
	got, created, err := s.AddRegistration(ctx, &dup)
	if err != nil || created || !bytes.Equal(got.Statement, []byte("stmt-a")) {
		t.Fatalf("duplicate: created=%v err=%v stmt=%q", created, err, got.Statement)
	}
	if _, _, err := s.AddRegistration(ctx, &store.Registration{ID: "x", Kind: "bogus"}); err == nil {
		t.Fatal("bogus kind accepted")
	}
	pend, err := s.PendingRegistrations(ctx)
	if err != nil || len(pend) != 2 || pend[0].ID != "p1" || pend[1].ID != "a" {
		t.Fatalf("pending = %+v, %v", pend, err)
	}
	if _, err := s.CompleteRegistration(ctx, "a", 7, []byte("cp"), []byte("rcpt")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CompleteRegistration(ctx, "nope", 1, nil, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("complete unknown: %v", err)
	}
	r, err := s.Registration(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Registered || r.LogIndex != 7 || string(r.Receipt) != "rcpt" || string(r.Checkpoint) != "cp" || r.PolicyID != "p1" || !r.Received.Equal(now) {
		t.Fatalf("registration %+v", r)
	}
	if _, err := s.Registration(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	pols, err := s.Policies(ctx)
	if err != nil || len(pols) != 1 || pols[0].ID != "p1" {
		t.Fatalf("policies = %+v, %v", pols, err)
	}
	s.Close()

	// Reopening keeps the data and the schema version.
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.SchemaVersion(ctx); err != nil || v != migrations[len(migrations)-1].version {
		t.Fatalf("schema version %d, %v", v, err)
	}
	if pend, _ := s.PendingRegistrations(ctx); len(pend) != 1 || pend[0].ID != "p1" {
		t.Fatalf("pending after reopen = %+v", pend)
	}
}

// TestMigrateFromVersion1 opens a database created by the base schema alone (as written
// before migrations existed) and checks the migration adds the registrations table.
func TestMigrateFromVersion1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, schema+"PRAGMA user_version = 1;"); err != nil {
		t.Fatal(err)
	}
	var n int
	db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'scitt_registrations'`).Scan(&n)
	if n != 0 {
		t.Fatal("base schema already has the table")
	}
	db.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, _ := s.SchemaVersion(ctx); v != 2 && v < migrations[len(migrations)-1].version {
		t.Fatalf("version %d after migration", v)
	}
	if _, _, err := s.AddRegistration(ctx, &store.Registration{ID: "a", Kind: store.KindStatement, Statement: []byte{1}, Received: time.Now()}); err != nil {
		t.Fatalf("after migration: %v", err)
	}
}
