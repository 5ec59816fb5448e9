package embedded

import (
	"context"
	"sync"
	"testing"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/storetest"
)

// TestConformance runs the ledger store suite. One process holds a database (Pebble locks
// it), so the handles the suite opens, which stand for other processes, share one Store;
// the store's own checks keep one writer per chain among them.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		sh := &shared{dir: t.TempDir()}
		return storetest.BackendFunc(sh.open)
	})
}

// shared hands out handles on one Store, which closes when the last handle does.
type shared struct {
	dir  string
	mu   sync.Mutex
	s    *Store
	refs int
}

func (sh *shared) open(t *testing.T) store.Store {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.s == nil {
		s, err := Open(context.Background(), sh.dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		sh.s = s
	}
	sh.refs++
	h := &handle{Store: sh.s, sh: sh}
	t.Cleanup(func() { h.Close() })
	return h
}

// handle is one handle of a shared Store.
type handle struct {
	*Store
	sh   *shared
	once sync.Once
}

func (h *handle) Close() error {
	var err error
	h.once.Do(func() {
		sh := h.sh
		sh.mu.Lock()
		defer sh.mu.Unlock()
		if sh.refs--; sh.refs == 0 {
			err = sh.s.Close()
			sh.s = nil
		}
	})
	return err
}
