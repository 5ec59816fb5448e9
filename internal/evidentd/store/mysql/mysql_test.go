package mysql

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/storetest"
	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/ledger"
)

// TestConformance runs the ledger store suite on a fresh database per subtest of the
// MariaDB/MySQL server in EVIDENT_TEST_MYSQL_DSN; every handle the suite opens is its own
// connection pool, as another evidentd replica would have. It runs twice: with the DSN as
// the tests give it (small statements carry their values in their text) and with a character
// set named in the DSN (every statement with values is prepared).
func TestConformance(t *testing.T) {
	for _, params := range []string{"", "?charset=utf8mb4"} {
		t.Run("dsn"+params, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) storetest.Backend {
				dsn := testinfra.MySQLDatabase(t) + params
				return storetest.BackendFunc(func(t *testing.T) store.Store {
					s, err := Open(context.Background(), dsn, Options{})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { s.Close() })
					return s
				})
			})
		})
	}
}

// TestStatementsPrepared counts the statements the server prepares for one Commit: none for
// a small batch (its values are written into the statements, one round trip each), one for a
// batch whose records are large (sent apart from the statement, not lexed), and one per
// statement with values when the DSN names a character set.
func TestStatementsPrepared(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		params  string
		entries int
		record  int // bytes per record
		want    int
	}{
		{"one small entry", "", 1, 100, 0},
		{"a large batch", "", 50, 1000, 1},
		{"DSN with a character set", "?charset=utf8mb4", 1, 100, 3}, // a new chain: its INSERT, the entries, the attributes
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Open(ctx, testinfra.MySQLDatabase(t)+c.params, Options{MaxOpenConns: 1}) // one connection: its session counts
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			es, rec := entries("c", c.entries, c.record)
			before := prepared(t, s)
			if err := s.Commit(ctx, rec, 0, es); err != nil {
				t.Fatal(err)
			}
			if got := prepared(t, s) - before; got != c.want {
				t.Fatalf("%d statements prepared, want %d", got, c.want)
			}
			stored, err := s.Entries(ctx, "c", store.Filter{})
			if err != nil || len(stored) != c.entries || !bytes.Equal(stored[c.entries-1].Record, es[c.entries-1].Record) {
				t.Fatalf("read back %d entries (%v), want %d", len(stored), err, c.entries)
			}
		})
	}
}

// prepared returns how many statements s's connection has prepared.
func prepared(t *testing.T, s *Store) int {
	t.Helper()
	var name string
	var n int
	if err := s.db.QueryRow(`SHOW SESSION STATUS LIKE 'Com_stmt_prepare'`).Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// entries returns n linked entries of a new chain with records of size bytes (binary, every
// byte value, so escaping is exercised) and an attribute each, and the chain record after them.
func entries(chain string, n, size int) ([]store.Entry, *store.ChainRecord) {
	var es []store.Entry
	prev := ledger.Genesis
	for i := range n {
		rec := make([]byte, size)
		for j := range rec {
			rec[j] = byte(i + j)
		}
		l := ledger.NextLink(rec, prev)
		es = append(es, store.Entry{Chain: chain, Seq: uint64(i), Prev: prev, Link: l, Arrival: time.UnixMilli(int64(i)), Record: rec,
			RecordID: fmt.Sprintf("id-%d", i), Method: "a.m", Sender: "s", Attrs: map[string][]string{ledger.AttrTask: {"t"}}})
		prev = l
	}
	return es, &store.ChainRecord{ID: chain, Profile: "chap/0.3", Size: uint64(n), Head: prev, Tree: []byte(`{}`), State: []byte(`{}`)}
}

func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	dsn := testinfra.MySQLDatabase(t)
	cases := []struct {
		name string
		dsn  string
		prep func(t *testing.T, db *sql.DB)
		want error
	}{
		{"no database in DSN", "u:p@tcp(127.0.0.1:1)/", nil, nil},
		{"malformed DSN", "not a dsn", nil, nil},
		{"other schema version", dsn, func(t *testing.T, db *sql.DB) {
			if _, err := db.Exec(`UPDATE ledger_schema SET version = 99`); err != nil {
				t.Fatal(err)
			}
		}, ErrSchema},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.prep != nil {
				s, err := Open(ctx, c.dsn, Options{})
				if err != nil {
					t.Fatal(err)
				}
				c.prep(t, s.db)
				s.Close()
			}
			s, err := Open(ctx, c.dsn, Options{})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("Open: %v, want %v", err, c.want)
			}
		})
	}
}

// TestLargestRecord: the largest record one INSERT carries is what max_allowed_packet leaves
// after 64 KiB; on a server it is read from the server.
func TestLargestRecord(t *testing.T) {
	for _, tc := range []struct {
		packet int64
		want   int
	}{
		{16 << 20, 16<<20 - 64<<10}, // MariaDB's default: below the default record limit
		{64 << 20, 64<<20 - 64<<10}, // MySQL's default
		{32 << 10, 0},
	} {
		if got := largestRecord(tc.packet); got != tc.want {
			t.Errorf("largestRecord(%d) = %d, want %d", tc.packet, got, tc.want)
		}
	}
	s, err := Open(context.Background(), testinfra.MySQLDatabase(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n, err := s.LargestRecord(context.Background())
	if err != nil || n <= 0 || (n+64<<10)%1024 != 0 {
		t.Fatalf("LargestRecord = %d, %v: want max_allowed_packet (whole KiB) less 64 KiB", n, err)
	}
}
