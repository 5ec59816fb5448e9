package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/storetest"
)

// TestConformance runs the ledger store suite on a database file per subtest; every
// handle the suite opens is its own Store on that file, as another process would be.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		path := filepath.Join(t.TempDir(), "ledger.db")
		return storetest.BackendFunc(func(t *testing.T) store.Store {
			s, err := Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}
