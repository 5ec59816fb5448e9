package sqlite

import (
	"context"
	"database/sql"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var migrateEntries = flag.Int("migrate-entries", 100_000, "entries of the database BenchmarkMigrateToVersion7 upgrades")

// BenchmarkMigrateToVersion7 times the upgrade of a schema-6 database of one chain of
// -migrate-entries entries, each with two attribute values (its outcome, and a task id
// shared by ten entries) and every other one with metadata, the way an evidentd of
// version 6 stored them: migration 7 carries them into the entries' rows. Building the
// database is not timed.
func BenchmarkMigrateToVersion7(b *testing.B) {
	ctx := context.Background()
	n := *migrateEntries
	var took time.Duration
	for b.Loop() {
		b.StopTimer()
		path := filepath.Join(b.TempDir(), "ledger.db")
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, schemaAt(6)+"PRAGMA user_version = 6;"); err != nil {
			b.Fatal(err)
		}
		q := `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM n WHERE i < ?) `
		for _, s := range []string{
			q + `INSERT INTO entries (chain, seq, prev, link, arrival, inline_record, record_id, method, sender, signed) SELECT 'c', i, randomblob(32), randomblob(32), i, '', 'env_'||hex(randomblob(8)), 'task.update', 'did:web:example.com:bot', 1 FROM n`,
			q + `INSERT INTO entry_attrs (chain, seq, name, value) SELECT 'c', i, 'outcome', 'accepted' FROM n`,
			q + `INSERT INTO entry_attrs (chain, seq, name, value) SELECT 'c', i, 'task_id', 'tsk_'||(i/10) FROM n`,
			q + `INSERT INTO entry_meta (chain, seq, meta) SELECT 'c', i, '{"seq":'||i||'}' FROM n WHERE i%2=0`,
			`PRAGMA wal_checkpoint(TRUNCATE)`,
		} {
			if _, err := db.ExecContext(ctx, s, n-1); err != nil {
				b.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		s, err := Open(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
		b.StopTimer()
		if v, err := s.SchemaVersion(ctx); err != nil || v != 7 {
			b.Fatalf("version %d, %v", v, err)
		}
		s.Close()
		os.Remove(path)
		b.StartTimer()
	}
	b.ReportMetric(float64(took.Microseconds())/float64(n*b.N), "µs/entry")
}
