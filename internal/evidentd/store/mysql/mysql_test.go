package mysql

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/storetest"
	"github.com/evident-log/evident/internal/testinfra"
)

// TestConformance runs the ledger store suite on a fresh database per subtest of the
// MariaDB/MySQL server in EVIDENT_TEST_MYSQL_DSN; every handle the suite opens is its own
// connection pool, as another evidentd replica would have.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		dsn := testinfra.MySQLDatabase(t)
		return storetest.BackendFunc(func(t *testing.T) store.Store {
			s, err := Open(context.Background(), dsn, Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
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
