package sqlite

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/evidentd/store/journal"
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

// TestConformanceJournaled runs the ledger store suite on the journaled store. Only one
// Journaled may be open on a database, as only one process may: the handles the suite opens
// share it (the last one closed closes it), and a handle opened after all were closed opens
// the database and its journal again.
func TestConformanceJournaled(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		dir := t.TempDir()
		sh := &sharedJournaled{path: filepath.Join(dir, "ledger.db"), journal: filepath.Join(dir, "journal")}
		return storetest.BackendFunc(sh.open)
	})
}

// sharedJournaled hands out handles on one Journaled.
type sharedJournaled struct {
	path, journal string
	mu            sync.Mutex
	j             *Journaled
	refs          int
}

func (s *sharedJournaled) open(t *testing.T) store.Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.j == nil {
		j, err := OpenJournaled(context.Background(), s.path, s.journal, journal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.j = j
	}
	s.refs++
	h := &journaledHandle{Journaled: s.j, shared: s}
	t.Cleanup(func() { h.Close() })
	return h
}

// journaledHandle is one handle of a sharedJournaled.
type journaledHandle struct {
	*Journaled
	shared *sharedJournaled
	once   sync.Once
}

func (h *journaledHandle) Close() error {
	var err error
	h.once.Do(func() {
		s := h.shared
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.refs--; s.refs == 0 {
			err = s.j.Close()
			s.j = nil
		}
	})
	return err
}
