package embedded

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"
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

// TestOpenRefuses: a database another handle holds is refused with ErrInUse, and one of an
// unknown format version with ErrFormat; neither changes anything.
func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, dir, Options{}); !errors.Is(err, ErrInUse) {
		t.Fatalf("a second Open: %v, want ErrInUse", err)
	}
	if err := s.apply(func(b *pebble.Batch) error { return b.Set(keyFormat, encodeUint(formatVersion+1), nil) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	if _, err := s.LoadChain(ctx, "c"); !errors.Is(err, ErrClosed) {
		t.Fatalf("LoadChain after Close: %v, want ErrClosed", err)
	}
	if _, err := Open(ctx, dir, Options{}); !errors.Is(err, ErrFormat) {
		t.Fatalf("Open of format %d: %v, want ErrFormat", formatVersion+1, err)
	}
	// The refused Open released the database: the next one gets as far as the format.
	if _, err := Open(ctx, dir, Options{}); !errors.Is(err, ErrFormat) {
		t.Fatalf("Open again: %v, want ErrFormat", err)
	}
}
