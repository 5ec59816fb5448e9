package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// v1EntryIndexes are the unique indexes of the entries' links and record ids that schema
// versions 1 to 7 had (migration 8 drops them).
const v1EntryIndexes = `
CREATE UNIQUE INDEX IF NOT EXISTS entries_link ON entries(chain, link);
CREATE UNIQUE INDEX IF NOT EXISTS entries_record_id ON entries(chain, record_id) WHERE record_id IS NOT NULL;
`

// TestMigrateToVersion8 opens a database at schema version 7 holding more entries than one
// page of the migration's reads: migration 8 drops the two unique indexes and builds the
// runs of keys, after which every link and record id held is found at its seq and no
// other, a record id is refused again in its chain and not in another, and the WAL is
// truncated.
func TestMigrateToVersion8(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, schemaAt(7)+"PRAGMA user_version = 7;"); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	type held struct {
		links []ledger.Link
		ids   map[string]uint64
		head  ledger.Link
	}
	chains := map[string]*held{}
	for _, c := range []struct {
		chain string
		n     int
	}{{"a", 9000}, {"b", 5}, {"c", 1}} {
		h := &held{ids: map[string]uint64{}}
		prev := ledger.Genesis
		for seq := range c.n {
			rec := fmt.Appendf(nil, `{"chain":%q,"seq":%d}`, c.chain, seq)
			l := ledger.NextLink(rec, prev)
			var rid any
			if seq%5 != 4 { // every fifth entry has no record id
				id := fmt.Sprintf("id-%d", seq)
				rid, h.ids[id] = id, uint64(seq)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO entries (chain, seq, prev, link, arrival, inline_record, record_id, method, sender, signed) VALUES (?, ?, ?, ?, 0, ?, ?, 'm', 's', 1)`, c.chain, seq, prev[:], l[:], rec, rid); err != nil {
				t.Fatal(err)
			}
			h.links = append(h.links, l)
			prev = l
		}
		h.head = prev
		if _, err := tx.ExecContext(ctx, `INSERT INTO chains (id, profile, size, head, tree, state, created) VALUES (?, 'chap/0.3', ?, ?, '{}', '{}', '2026-01-01T00:00:00Z')`, c.chain, c.n, prev[:]); err != nil {
			t.Fatal(err)
		}
		chains[c.chain] = h
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s := openMigrated(t, path)
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() != 0 {
		t.Errorf("the WAL after the migration: %v; want it truncated", err)
	}
	var left int
	if err := s.w.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name IN ('entries_link', 'entries_record_id')`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d of the old indexes left (%v)", left, err)
	}
	for chain, h := range chains {
		for seq, l := range h.links {
			if seq%97 != 0 && seq != len(h.links)-1 && len(h.links) > 100 {
				continue
			}
			got, ok, err := s.FindLink(ctx, chain, l)
			if err != nil || !ok || got != uint64(seq) {
				t.Fatalf("chain %q: link of seq %d found at %d, %v (%v)", chain, seq, got, ok, err)
			}
		}
		var ids []string
		for id := range h.ids {
			ids = append(ids, id)
		}
		ids = append(ids, "id-4", "id-9000", "absent") // never held (seq 4 has no id), or past the chain
		used, err := s.FindRecordIDs(ctx, chain, ids)
		if err != nil {
			t.Fatal(err)
		}
		if len(used) != len(h.ids) {
			t.Fatalf("chain %q: %d record ids found, want %d", chain, len(used), len(h.ids))
		}
		for id, seq := range h.ids {
			if used[id] != seq {
				t.Fatalf("chain %q: record id %q found at %d, want %d", chain, id, used[id], seq)
			}
		}
		if _, ok, err := s.FindLink(ctx, chain, chains["a"].links[1]); chain != "a" && (ok || err != nil) {
			t.Fatalf("chain %q holds a link of chain a: %v, %v", chain, ok, err)
		}
	}
	// A record id of b is refused in b; one of a (not of b) is not.
	b := chains["b"]
	next := func(id string) error {
		rec := fmt.Appendf(nil, `{"chain":"b","new":%q}`, id)
		l := ledger.NextLink(rec, b.head)
		e := store.Entry{Chain: "b", Seq: 5, Prev: b.head, Link: l, Record: rec, RecordID: id, Method: "m", Sender: "s"}
		return s.Commit(ctx, &store.ChainRecord{ID: "b", Profile: "chap/0.3", Size: 6, Head: l, Tree: []byte("{}"), State: []byte("{}")}, 5, []store.Entry{e})
	}
	if err := next("id-3"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("record id id-3 again in b: %v, want ErrConflict", err)
	}
	if err := next("id-8000"); err != nil {
		t.Fatalf("a's record id id-8000 in b: %v", err)
	}
	if used, err := s.FindRecordIDs(ctx, "b", []string{"id-8000"}); err != nil || used["id-8000"] != 5 {
		t.Fatalf("b's new record id: %v, %v", used, err)
	}
}

// TestCommitRefusesTakenLink: Commit refuses an entry whose link the chain holds, as the
// unique index did before the keys moved to runs, and one whose link repeats in its batch.
func TestCommitRefusesTakenLink(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	head, err := commitRecs(t, s, 0, ledger.Genesis, []string{`{"n":0}`, `{"n":1}`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := ledger.NextLink([]byte(`{"n":0}`), ledger.Genesis)
	// An entry at seq 2 that claims the link of seq 0 (the store checks no hash).
	e := store.Entry{Chain: "c", Seq: 2, Prev: head, Link: first, Record: []byte(`{"n":2}`), Method: "m", Sender: "s"}
	c := &store.ChainRecord{ID: "c", Profile: "chap/0.3", Size: 3, Head: first, Tree: []byte("{}"), State: []byte("{}")}
	if err := s.Commit(ctx, c, 2, []store.Entry{e}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a taken link: %v, want ErrConflict", err)
	}
	l := ledger.NextLink([]byte(`{"n":2}`), head)
	e2 := e
	e.Link, e2.Seq, e2.Link = l, 3, l
	c.Size, c.Head = 4, l
	if err := s.Commit(ctx, c, 2, []store.Entry{e, e2}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a link twice in the batch: %v, want ErrConflict", err)
	}
	if all, err := s.Entries(ctx, "c", store.Filter{}); err != nil || len(all) != 2 {
		t.Fatalf("after the refusals: %d entries, %v", len(all), err)
	}
}
