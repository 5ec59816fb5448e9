package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/recordfile"
	"github.com/evident-log/evident/ledger"
)

// commitRecs commits recs as the next entries of chain c of s (at size), with record ids
// ids (none where "") and returns the new head.
func commitRecs(t *testing.T, s *Store, size uint64, head ledger.Link, recs []string, ids []string) (ledger.Link, error) {
	t.Helper()
	var es []store.Entry
	for i, r := range recs {
		l := ledger.NextLink([]byte(r), head)
		e := store.Entry{Chain: "c", Seq: size + uint64(i), Prev: head, Link: l, Record: []byte(r), Method: "m", Sender: "s"}
		if ids != nil {
			e.RecordID = ids[i]
		}
		es = append(es, e)
		head = l
	}
	c := &store.ChainRecord{ID: "c", Profile: "chap/0.3", Size: size + uint64(len(recs)), Head: head, Tree: []byte("{}"), State: []byte("{}")}
	return head, s.Commit(context.Background(), c, size, es)
}

// rawRow reads the stored record and place of entry seq of chain c straight from the
// database file.
func rawRow(t *testing.T, path string, seq int) (record []byte, off sql.NullInt64) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(`SELECT record, rec_off FROM entries WHERE chain = 'c' AND seq = ?`, seq).Scan(&record, &off); err != nil {
		t.Fatal(err)
	}
	return record, off
}

func keptBytes(t *testing.T, s *Store) int64 {
	t.Helper()
	n, err := keptSize(context.Background(), s.w)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMigrateToVersion6 opens a database at schema version 5 holding an entry whose record
// is in the table: it reads back as it was, a new entry's record goes to the record file
// (its row holding an empty record and a place), and one read returns both.
func TestMigrateToVersion6(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	v5 := schema
	for _, m := range migrations {
		if m.version <= 5 {
			v5 += m.stmts[0]
		}
	}
	if _, err := db.ExecContext(ctx, v5+"PRAGMA user_version = 5;"); err != nil {
		t.Fatal(err)
	}
	l0 := ledger.NextLink([]byte(`{"a":0}`), ledger.Genesis)
	if _, err := db.ExecContext(ctx, `INSERT INTO entries (chain, seq, prev, link, arrival, record, method, sender, signed) VALUES ('c', 0, ?, ?, 0, '{"a":0}', 'm', 's', 0)`, ledger.Genesis[:], l0[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO chains (id, profile, size, head, tree, state, created) VALUES ('c', 'chap/0.3', 1, ?, '{}', '{}', '2026-01-01T00:00:00Z')`, l0[:]); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.SchemaVersion(ctx); err != nil || v != 6 {
		t.Fatalf("version %d, %v after migration", v, err)
	}
	if _, err := commitRecs(t, s, 1, l0, []string{`{"a":1}`, `{"a":2}`}, nil); err != nil {
		t.Fatal(err)
	}
	all, err := s.Entries(ctx, "c", store.Filter{})
	if err != nil || len(all) != 3 {
		t.Fatalf("entries: %+v, %v", all, err)
	}
	for i, want := range []string{`{"a":0}`, `{"a":1}`, `{"a":2}`} {
		if string(all[i].Record) != want {
			t.Fatalf("entry %d: record %q, want %q", i, all[i].Record, want)
		}
	}
	if rec, off := rawRow(t, path, 0); string(rec) != `{"a":0}` || off.Valid {
		t.Fatalf("the migrated row: record %q, place %v; want its record in the table", rec, off)
	}
	if rec, off := rawRow(t, path, 2); len(rec) != 0 || !off.Valid {
		t.Fatalf("a new row: record %q, place %v; want an empty record and a place", rec, off)
	}
	raw, err := os.ReadFile(recordfile.PathFor(path))
	if err != nil || !bytes.Contains(raw, []byte(`{"a":2}`)) || int64(len(raw)) != 8+keptBytes(t, s) {
		t.Fatalf("the record file (%d bytes, %v) does not hold the new records as the database counts them (%d)", len(raw), err, keptBytes(t, s))
	}
}

// TestRecordFileRolledBack: a commit refused after its records were written to the file
// (a taken record id) leaves the database's count of the file as it was; the next commit
// writes over what the refused one left, and everything reads back, also after reopening.
func TestRecordFileRolledBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	head, err := commitRecs(t, s, 0, ledger.Genesis, []string{`{"n":0}`}, []string{"r0"})
	if err != nil {
		t.Fatal(err)
	}
	kept := keptBytes(t, s)
	if _, err := commitRecs(t, s, 1, head, []string{`{"n":1,"refused":"a long record past the kept end"}`}, []string{"r0"}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a taken record id: %v, want ErrConflict", err)
	}
	if got := keptBytes(t, s); got != kept {
		t.Fatalf("a refused commit moved the kept size from %d to %d", kept, got)
	}
	if st, _ := os.Stat(recordfile.PathFor(path)); st.Size() <= 8+kept {
		t.Fatalf("the refused commit wrote nothing past the kept end (%d bytes): the test proves nothing", st.Size())
	}
	if _, err := commitRecs(t, s, 1, head, []string{`{"n":1}`}, []string{"r1"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	all, err := s.Entries(ctx, "c", store.Filter{})
	if err != nil || len(all) != 2 || string(all[0].Record) != `{"n":0}` || string(all[1].Record) != `{"n":1}` {
		t.Fatalf("entries: %+v, %v", all, err)
	}
}

// TestRecordFileDamaged: a record file that does not hold what the database names — a
// flipped byte, cut short, gone — is an error wrapping recordfile.ErrCorrupt, on the read
// of the damaged record or at open; never other bytes.
func TestRecordFileDamaged(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := commitRecs(t, s, 0, ledger.Genesis, []string{`{"n":0}`, `{"n":1,"x":"the second record"}`}, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	rp := recordfile.PathFor(path)
	good, err := os.ReadFile(rp)
	if err != nil {
		t.Fatal(err)
	}

	flipped := bytes.Clone(good)
	flipped[bytes.Index(good, []byte("second"))] ^= 0x20
	os.WriteFile(rp, flipped, 0o644)
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if es, err := s.Entries(ctx, "c", store.Filter{Limit: 1}); err != nil || len(es) != 1 {
		t.Fatalf("the undamaged first record: %+v, %v", es, err)
	}
	if es, err := s.Entries(ctx, "c", store.Filter{}); !errors.Is(err, recordfile.ErrCorrupt) {
		t.Fatalf("a flipped byte: %+v, %v; want ErrCorrupt", es, err)
	}
	s.Close()

	for name, content := range map[string][]byte{"cut short": good[:len(good)-3], "gone": nil} {
		if content == nil {
			os.Remove(rp)
		} else {
			os.WriteFile(rp, content, 0o644)
		}
		if s, err := Open(ctx, path); !errors.Is(err, recordfile.ErrCorrupt) {
			if err == nil {
				s.Close()
			}
			t.Errorf("%s: Open = %v, want ErrCorrupt", name, err)
		}
	}
}
