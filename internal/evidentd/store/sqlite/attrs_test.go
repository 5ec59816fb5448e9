package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
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
	s := openMigrated(t, path)
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

// TestMigrateToVersion7 opens a database at schema version 6 whose entries have attributes
// (entry_attrs) and metadata (entry_meta): migration 7 carries both into the entries' rows
// and the numbered index, drops the old tables, and every read and filter answers as
// before; a new entry's value shares the number of the same value migrated.
func TestMigrateToVersion7(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, schemaAt(6)+"PRAGMA user_version = 6;"); err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	head := map[string]ledger.Link{}
	for _, c := range []struct {
		chain string
		n     int
	}{{"c", 4}, {"d", 1}} {
		prev := ledger.Genesis
		for seq := range c.n {
			rec := fmt.Appendf(nil, `{"chain":%q,"seq":%d}`, c.chain, seq)
			l := ledger.NextLink(rec, prev)
			exec(`INSERT INTO entries (chain, seq, prev, link, arrival, inline_record, method, sender, signed) VALUES (?, ?, ?, ?, 0, ?, 'm', 's', 1)`, c.chain, seq, prev[:], l[:], rec)
			prev = l
		}
		head[c.chain] = prev
		exec(`INSERT INTO chains (id, profile, size, head, tree, state, created) VALUES (?, 'chap/0.3', ?, ?, '{}', '{}', '2026-01-01T00:00:00Z')`, c.chain, c.n, prev[:])
	}
	want := map[uint64]map[string][]string{
		0: {ledger.AttrOutcome: {"accepted"}, ledger.AttrTask: {"t1"}, ledger.AttrTag: {"a\"q\\", "b", "c\x01\n", "d\b\f\x7f"}},
		1: {ledger.AttrOutcome: {"accepted"}, ledger.AttrTask: {"t2"}, ledger.AttrLogicalID: {"é €"}},
		3: {ledger.AttrOutcome: {"refused"}, ledger.AttrTask: {"t1"}},
	}
	for seq, attrs := range want {
		for name, vs := range attrs {
			for _, v := range slices.Backward(vs) { // the rows' order is not the values' order
				exec(`INSERT INTO entry_attrs (chain, seq, name, value) VALUES ('c', ?, ?, ?)`, seq, name, v)
			}
		}
	}
	exec(`INSERT INTO entry_attrs (chain, seq, name, value) VALUES ('d', 0, ?, 't1')`, ledger.AttrTask)
	exec(`INSERT INTO entry_meta (chain, seq, meta) VALUES ('c', 1, '{"seq":1}'), ('c', 3, '{"seq":3}')`)
	db.Close()

	s := openMigrated(t, path)
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() != 0 {
		t.Errorf("the WAL after the migration: %v, %v; want it truncated", fi.Size(), err)
	}
	all, err := s.Entries(ctx, "c", store.Filter{})
	if err != nil || len(all) != 4 {
		t.Fatalf("entries: %+v, %v", all, err)
	}
	for _, e := range all {
		if !reflect.DeepEqual(e.Attrs, want[e.Seq]) {
			t.Errorf("seq %d: attributes %q, want %q", e.Seq, e.Attrs, want[e.Seq])
		}
		if wantMeta := map[uint64]string{1: `{"seq":1}`, 3: `{"seq":3}`}[e.Seq]; string(e.Meta) != wantMeta || (wantMeta == "") != (e.Meta == nil) {
			t.Errorf("seq %d: meta %q, want %q", e.Seq, e.Meta, wantMeta)
		}
	}
	seqs := func(chain string, attrs map[string][]string) []uint64 {
		t.Helper()
		es, err := s.Entries(ctx, chain, store.Filter{Attrs: attrs})
		if err != nil {
			t.Fatal(err)
		}
		var out []uint64
		for _, e := range es {
			out = append(out, e.Seq)
		}
		return out
	}
	for _, tc := range []struct {
		attrs map[string][]string
		want  []uint64
	}{
		{map[string][]string{ledger.AttrTask: {"t1"}}, []uint64{0, 3}},
		{map[string][]string{ledger.AttrTag: {"c\x01\n"}}, []uint64{0}},
		{map[string][]string{ledger.AttrTag: {"a\"q\\", "b"}}, []uint64{0}},
		{map[string][]string{ledger.AttrTask: {"t1"}, ledger.AttrOutcome: {"refused"}}, []uint64{3}},
		{map[string][]string{ledger.AttrLogicalID: {"é €"}}, []uint64{1}},
		{map[string][]string{ledger.AttrTask: {"t3"}}, nil},
		{map[string][]string{ledger.AttrTask: {"t1", "t2"}}, nil},
	} {
		if got := seqs("c", tc.attrs); !slices.Equal(got, tc.want) {
			t.Errorf("filter %q: seqs %v, want %v", tc.attrs, got, tc.want)
		}
	}
	if got := seqs("d", map[string][]string{ledger.AttrTask: {"t1"}}); !slices.Equal(got, []uint64{0}) {
		t.Errorf("chain d, filter t1: seqs %v", got)
	}
	for _, table := range []string{"entry_attrs", "entry_meta"} {
		var n int
		if err := s.w.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name = ?`, table).Scan(&n); err != nil || n != 0 {
			t.Errorf("table %s: %d, %v; want it dropped", table, n, err)
		}
	}

	// A new entry carrying a migrated value: the value keeps its one number.
	rec := []byte(`{"chain":"c","seq":4}`)
	l4 := ledger.NextLink(rec, head["c"])
	e := store.Entry{Chain: "c", Seq: 4, Prev: head["c"], Link: l4, Record: rec, Method: "m", Sender: "s",
		Attrs: map[string][]string{ledger.AttrTask: {"t1"}, ledger.AttrTag: {"b", "d\b\f\x7f", "c\x01\n", "a\"q\\"}, ledger.AttrOutcome: {"accepted"}}}
	if err := s.Commit(ctx, &store.ChainRecord{ID: "c", Profile: "chap/0.3", Size: 5, Head: l4, Tree: []byte("{}"), State: []byte("{}")}, 4, []store.Entry{e}); err != nil {
		t.Fatal(err)
	}
	if got := seqs("c", map[string][]string{ledger.AttrTask: {"t1"}}); !slices.Equal(got, []uint64{0, 3, 4}) {
		t.Errorf("filter t1 after a new entry: seqs %v", got)
	}
	var rows int
	if err := s.w.QueryRowContext(ctx, `SELECT count(*) FROM attr_values WHERE chain = 'c' AND name = ? AND value = 't1'`, ledger.AttrTask).Scan(&rows); err != nil || rows != 1 {
		t.Errorf("%d dictionary rows of t1 in c, %v; want 1", rows, err)
	}
	// The migrated row and the new one, with the same attributes, hold the same text.
	var old, cur string
	if err := s.w.QueryRowContext(ctx, `SELECT (SELECT attrs FROM entries WHERE chain = 'c' AND seq = 0), (SELECT attrs FROM entries WHERE chain = 'c' AND seq = 4)`).Scan(&old, &cur); err != nil || old != cur {
		t.Errorf("attributes text: migrated %q, new %q (%v)", old, cur, err)
	}
}
