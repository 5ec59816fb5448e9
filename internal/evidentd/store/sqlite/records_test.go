package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/recordfile"
	"github.com/evident-log/evident/ledger"
)

// commitRecs commits recs as the next entries of chain c of s (at size), with record ids
// ids (none where "") and returns the new head.
func commitRecs(t *testing.T, s *Store, size uint64, head ledger.Link, recs []string, ids []string) (ledger.Link, error) {
	t.Helper()
	return commitRecsCtx(t, context.Background(), s, size, head, recs, ids)
}

// commitRecsCtx is commitRecs with ctx.
func commitRecsCtx(t *testing.T, ctx context.Context, s *Store, size uint64, head ledger.Link, recs []string, ids []string) (ledger.Link, error) {
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
	return head, s.Commit(ctx, c, size, es)
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
	if err := db.QueryRow(`SELECT inline_record, rec_off FROM entries WHERE chain = 'c' AND seq = ?`, seq).Scan(&record, &off); err != nil {
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
	path, l0 := oldDatabase(t, schemaAt(5), 5)
	s := openMigrated(t, path)
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
	// An evidentd from before the record file, which knows the column as "record", fails.
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var old []byte
	if err := db.QueryRow(`SELECT record FROM entries WHERE chain = 'c' AND seq = 2`).Scan(&old); err == nil {
		t.Fatalf("the column of records is still named record (%q): an older evidentd would read it", old)
	}
	raw, err := os.ReadFile(recordfile.PathFor(path))
	if err != nil || !bytes.Contains(raw, []byte(`{"a":2}`)) || int64(len(raw)) != 8+keptBytes(t, s) {
		t.Fatalf("the record file (%d bytes, %v) does not hold the new records as the database counts them (%d)", len(raw), err, keptBytes(t, s))
	}
}

// TestRecordFileRolledBack: a commit that fails after its records were written to the
// file (its context ends there) leaves the database's count of the file as it was; the next
// commit writes over what the failed one left, and everything reads back, also after
// reopening.
func TestRecordFileRolledBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	var cancel context.CancelFunc // set: the next Put ends its commit's context before writing
	s, err := open(ctx, path, nil, func() {
		if cancel != nil {
			cancel()
			cancel = nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	head, err := commitRecs(t, s, 0, ledger.Genesis, []string{`{"n":0}`}, []string{"r0"})
	if err != nil {
		t.Fatal(err)
	}
	kept := keptBytes(t, s)
	cctx, c := context.WithCancel(ctx)
	cancel = c
	if _, err := commitRecsCtx(t, cctx, s, 1, head, []string{`{"n":1,"refused":"a long record past the kept end"}`}, []string{"r1"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a commit whose context ends in its write: %v, want context.Canceled", err)
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

// TestCancelledCommitWritesNothingOver: a commit whose context ends after it read the
// record file's kept size and before it wrote there keeps the database's write lock until
// it has rolled back, so another store on the same database (another process) cannot
// commit records at that size in between and have them written over.
func TestCancelledCommitWritesNothingOver(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	ctxA, cancel := context.WithCancel(ctx)
	paused, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	a, err := open(ctx, path, nil, func() {
		once.Do(func() {
			cancel()
			close(paused)
			<-resume
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	big := bytes.Repeat([]byte("a"), 64<<10)
	recA := append(append([]byte(`{"a":"`), big...), `"}`...)
	la := ledger.NextLink(recA, ledger.Genesis)
	doneA := make(chan error, 1)
	go func() {
		doneA <- a.Commit(ctxA, &store.ChainRecord{ID: "a", Profile: "chap/0.3", Size: 1, Head: la, Tree: []byte("{}"), State: []byte("{}")}, 0,
			[]store.Entry{{Chain: "a", Seq: 0, Prev: ledger.Genesis, Link: la, Record: recA, Method: "m", Sender: "s"}})
	}()
	<-paused
	doneB := make(chan error, 1)
	go func() {
		_, err := commitRecs(t, b, 0, ledger.Genesis, []string{`{"b":"acknowledged"}`}, nil)
		doneB <- err
	}()
	select {
	case err := <-doneB:
		t.Errorf("the second store committed (%v) while the first, its context ended, still held the kept size", err)
		doneB <- err
	case <-time.After(300 * time.Millisecond):
	}
	close(resume)
	if err := <-doneA; err == nil {
		t.Error("the cancelled commit succeeded")
	}
	if err := <-doneB; err != nil {
		t.Fatalf("the second store's commit: %v", err)
	}
	es, err := b.Entries(ctx, "c", store.Filter{})
	if err != nil || len(es) != 1 || string(es[0].Record) != `{"b":"acknowledged"}` {
		t.Fatalf("the acknowledged entry: %+v, %v", es, err)
	}
}

// TestRecordNotItsOwnRefused: a record file whose frames are not the ones the database
// placed there (a file from another backup, bytes written over) is refused on read even
// where every frame checks: the record must be the one its entry's link hashes.
func TestRecordNotItsOwnRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := commitRecs(t, s, 0, ledger.Genesis, []string{`{"amount":100}`, `{"amount":999}`}, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	rp := recordfile.PathFor(path)
	raw, err := os.ReadFile(rp)
	if err != nil {
		t.Fatal(err)
	}
	// Two frames of the same length: swapped, each still checks.
	n := (len(raw) - 8) / 2
	swapped := append(append(append([]byte{}, raw[:8]...), raw[8+n:]...), raw[8:8+n]...)
	if err := os.WriteFile(rp, swapped, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if es, err := s.Entries(ctx, "c", store.Filter{}); !errors.Is(err, recordfile.ErrCorrupt) {
		t.Fatalf("swapped records: %+v, %v; want ErrCorrupt", es, err)
	}
}

// TestHostilePlaceRefused: a place in the database that the record file cannot hold (a
// damaged or tampered row) is an error wrapping recordfile.ErrCorrupt, not a panic or an
// allocation of what it names.
func TestHostilePlaceRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := commitRecs(t, s, 0, ledger.Genesis, []string{`{"n":0}`}, nil); err != nil {
		t.Fatal(err)
	}
	for _, set := range []string{"rec_len = -1", "rec_len = 0", "rec_len = 1099511627776", "rec_off = -13", "rec_off = 4611686018427387904"} {
		if _, err := s.w.ExecContext(ctx, `UPDATE entries SET `+set+` WHERE chain = 'c' AND seq = 0`); err != nil {
			t.Fatal(err)
		}
		if es, err := s.Entries(ctx, "c", store.Filter{}); !errors.Is(err, recordfile.ErrCorrupt) {
			t.Errorf("%s: %+v, %v; want ErrCorrupt", set, es, err)
		}
		s.w.ExecContext(ctx, `UPDATE entries SET rec_off = 0, rec_len = 7 WHERE chain = 'c' AND seq = 0`)
	}
	if es, err := s.Entries(ctx, "c", store.Filter{}); err != nil || string(es[0].Record) != `{"n":0}` {
		t.Fatalf("the place put back: %+v, %v", es, err)
	}
}

// TestNewerSchemaRefused: a database a later evidentd migrated further than this one knows
// is refused at open, not read with columns this one does not know of.
func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	last := migrations[len(migrations)-1].version
	if _, err := s.w.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", last+1)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := Open(ctx, path); err == nil || !strings.Contains(err.Error(), "newer than this evidentd knows") {
		if err == nil {
			s.Close()
		}
		t.Fatalf("a newer schema: %v", err)
	}
}

// schemaAt returns the statements that create the schema of version v: the base schema
// and the migrations up to v.
func schemaAt(v int) string {
	s := schema
	if v < 8 {
		s += v1EntryIndexes // keys_test.go
	}
	for _, m := range migrations {
		if m.version <= v {
			s += strings.Join(m.stmts, "")
		}
	}
	return s
}

// openMigrated opens the database at path, which Open migrates, closes it when the test
// ends, and fails the test unless it is at the last schema version.
func openMigrated(t *testing.T, path string) *Store {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if v, err := s.SchemaVersion(ctx); err != nil || v != migrations[len(migrations)-1].version {
		t.Fatalf("version %d, %v after migration", v, err)
	}
	return s
}

// oldDatabase creates a database with schema (the statements of some version) at version
// user_version, holding chain "c" with one entry whose record, {"a":0}, is in the table;
// it returns the database's path and the entry's link.
func oldDatabase(t *testing.T, schema string, version int) (string, ledger.Link) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, fmt.Sprintf("%sPRAGMA user_version = %d;", schema, version)); err != nil {
		t.Fatal(err)
	}
	l0 := ledger.NextLink([]byte(`{"a":0}`), ledger.Genesis)
	if _, err := db.ExecContext(ctx, `INSERT INTO entries (chain, seq, prev, link, arrival, record, method, sender, signed) VALUES ('c', 0, ?, ?, 0, '{"a":0}', 'm', 's', 0)`, ledger.Genesis[:], l0[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO chains (id, profile, size, head, tree, state, created) VALUES ('c', 'chap/0.3', 1, ?, '{}', '{}', '2026-01-01T00:00:00Z')`, l0[:]); err != nil {
		t.Fatal(err)
	}
	return path, l0
}
