package sqlite

import (
	"context"
	"testing"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// TestMigrateToVersion3 opens a database at schema version 2 holding an entry, checks that
// migration 3 adds the attribute table, that the old entry reads back without attributes
// (and is not matched by an attribute filter), and that new entries are filtered on theirs.
func TestMigrateToVersion3(t *testing.T) {
	ctx := context.Background()
	path, l0 := oldDatabase(t, schema+registrationsSchema, 2)

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.SchemaVersion(ctx); err != nil || v != migrations[len(migrations)-1].version {
		t.Fatalf("version %d, %v after migration", v, err)
	}
	l1 := ledger.NextLink([]byte(`{"a":1}`), l0)
	e := store.Entry{Chain: "c", Seq: 1, Prev: l0, Link: l1, Record: []byte(`{"a":1}`), Method: "m", Sender: "s",
		Attrs: map[string][]string{ledger.AttrTask: {"t1"}}, Meta: []byte(`{"seq":1}`)}
	if err := s.Commit(ctx, &store.ChainRecord{ID: "c", Profile: "chap/0.3", Size: 2, Head: l1, Tree: []byte("{}"), State: []byte("{}")}, 1, []store.Entry{e}); err != nil {
		t.Fatal(err)
	}
	all, err := s.Entries(ctx, "c", store.Filter{})
	if err != nil || len(all) != 2 || all[0].Attrs != nil || len(all[1].Attrs[ledger.AttrTask]) != 1 || all[0].Meta != nil || string(all[1].Meta) != `{"seq":1}` {
		t.Fatalf("entries after migration: %+v, %v", all, err)
	}
	got, err := s.Entries(ctx, "c", store.Filter{Attrs: map[string][]string{ledger.AttrTask: {"t1"}}})
	if err != nil || len(got) != 1 || got[0].Seq != 1 {
		t.Fatalf("filtered: %+v, %v", got, err)
	}
}
