package log

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/testinfra"
)

// TestFind appends entries across an entry-bundle boundary and finds them again, also
// after a reopen (when no in-memory state remembers them), and waits for checkpoints that
// cover an index.
func TestFind(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir+"/keys", dir+"/log", 100*time.Millisecond)
	ctx := t.Context()
	at := map[uint64][]byte{} // index → entry (concurrent appends land in any order)
	for _, a := range appendConcurrently(t, l, "find", 300) {
		at[a.index] = a.entry
	}
	check := func(l *Log) {
		t.Helper()
		for _, c := range []struct {
			entry []byte
			from  uint64
			want  uint64
			found bool
		}{
			{at[0], 0, 0, true},
			{at[270], 0, 270, true},
			{at[270], 270, 270, true},
			{at[270], 271, 0, false},
			{at[299], 256, 299, true},
			{at[5], 1000, 0, false},
			{testEntry("find", 300), 0, 0, false},
		} {
			got, found, err := l.Find(ctx, c.entry, c.from)
			if err != nil || found != c.found || (found && got != c.want) {
				t.Fatalf("Find(%x…, from %d) = %d, %v, %v; want %d, %v", c.entry[:4], c.from, got, found, err, c.want, c.found)
			}
		}
		if _, _, err := l.Find(ctx, []byte("short"), 0); !errors.Is(err, ErrInvalidEntry) {
			t.Fatalf("Find of a short entry: %v", err)
		}
		cp, err := l.CheckpointCovering(ctx, 299)
		if c, verr := VerifyCheckpoint(cp, l.VerifierKey()); err != nil || verr != nil || c.Size != 300 {
			t.Fatalf("CheckpointCovering(299) = %v, %v, %v", c, err, verr)
		}
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if _, err := l.CheckpointCovering(short, 300); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("CheckpointCovering beyond the log: %v", err)
		}
	}
	check(l)
	closeLog(t, l)
	reopened := openTestLog(t, dir+"/keys", dir+"/log", 100*time.Millisecond)
	defer closeLog(t, reopened)
	check(reopened)
}

// TestAWSFindAcrossReplicas finds, through one replica, an entry another replica
// appended: what a replica taking over a dead replica's claim does.
func TestAWSFindAcrossReplicas(t *testing.T) {
	dsn, s3srv := testinfra.MySQLDatabase(t), testinfra.S3Server(t)
	signer, _, err := LoadOrCreateKey(filepath.Join(t.TempDir(), "keys"), testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	l1 := awsTestLog(t, signer, dsn, s3srv)
	l2 := awsTestLog(t, signer, dsn, s3srv)
	a := appendConcurrently(t, l1, "aws-find", 3)
	for _, x := range a {
		got, found, err := l2.Find(t.Context(), x.entry, 0)
		if err != nil || !found || got != x.index {
			t.Fatalf("Find through the other replica = %d, %v, %v; want %d", got, found, err, x.index)
		}
	}
	if _, found, err := l2.Find(t.Context(), testEntry("aws-find", 3), 0); err != nil || found {
		t.Fatalf("Find of an entry never appended = %v, %v", found, err)
	}

	// Once Tessera's MySQL antispam has followed the log, the other replica (which never
	// saw these entries in memory) appending one again gets its first index.
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var next uint64
		if err := db.QueryRowContext(t.Context(), `SELECT nextIdx FROM AntispamFollowCoord WHERE id = 0`).Scan(&next); err != nil {
			t.Fatal(err)
		}
		if next >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the antispam follower is at %d after 30 s, want 3", next)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, x := range a {
		idx, _, err := l2.Append(t.Context(), x.entry)
		if err != nil || idx != x.index {
			t.Fatalf("append again through the other replica = %d, %v; want its first index %d", idx, err, x.index)
		}
	}
	if size, err := l2.Size(t.Context()); err != nil || size != 3 {
		t.Fatalf("log size %d, %v after appending duplicates; want 3", size, err)
	}
}
