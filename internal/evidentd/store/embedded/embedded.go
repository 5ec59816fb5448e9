// Package embedded is evidentd's embedded ledger store: one Pebble database (an LSM
// key-value engine in pure Go, github.com/cockroachdb/pebble/v2) in the data directory's
// "ledger" folder. Entries, their link and record-id indexes, the attribute index, chain
// state, seals, forks, evidence heads, SCITT registrations and claims are keys of that one
// database (keys.go); values are CBOR arrays (codec.go).
//
// Every write is one Pebble batch applied with Sync: it is in Pebble's write-ahead log and
// fsynced before the call returns, and atomic (all of it after a crash, or none). Pebble
// commits concurrent synced batches with one fsync of its log, so requests on different
// chains share fsyncs without a journal of ours. A chain's size, its record ids and links
// are checked under that chain's lock in this process; Pebble's LOCK file keeps any other
// process out of the database, so the checks and the write cannot interleave with another
// writer's.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"github.com/evident-log/evident/internal/durable"
	"github.com/evident-log/evident/internal/evidentd/store"
)

// Dir is the folder of the data directory that holds the database.
const Dir = "ledger"

// lockFile is the file in the database's folder that the process using it locks.
const lockFile = "evident.lock"

// formatVersion is the version of the key layout and value encoding (keys.go, codec.go),
// kept under keyFormat; Open refuses a database of another version.
const formatVersion = 1

// ErrInUse is returned by Open when another process has the database open.
var ErrInUse = errors.New("embedded ledger store: in use by another process")

// ErrFormat is returned by Open for a database whose layout version this build does not
// read.
var ErrFormat = errors.New("embedded ledger store: unknown format version")

// Options tune the store; the zero value is the default.
type Options struct {
	// CacheBytes is the block cache shared by reads (default 64 MiB), besides the
	// memtables.
	CacheBytes int64
	// MemTableBytes is the size of a memtable (default 32 MiB; Pebble keeps up to two
	// while one is flushed).
	MemTableBytes uint64
	// Logger receives Pebble's messages (default slog.Default()).
	Logger *slog.Logger
}

// Store is the embedded ledger store.
type Store struct {
	db    *pebble.DB
	cache *pebble.Cache

	locks [lockStripes]sync.Mutex // chain locks, by hash of the chain id (lockFor)
	seed  maphash.Seed

	regMu   sync.Mutex // orders registrations (registrations.go)
	regNext uint64     // the next registration's seq
	claimMu sync.Mutex // orders claims (claims.go)

	brokenMu sync.Mutex
	broken   error // the first failed write: Err

	unlock func() error // releases lockFile

	// closeMu is held for reading by every use of db, and for writing by Close: Pebble
	// panics on a closed database, where a call after Close gets ErrClosed.
	closeMu sync.RWMutex
	closed  bool
}

// ErrClosed is returned by a call on a closed Store.
var ErrClosed = errors.New("embedded ledger store: closed")

var (
	_ store.Store              = (*Store)(nil)
	_ store.GroupCommitter     = (*Store)(nil)
	_ store.Registrations      = (*Store)(nil)
	_ store.RegistrationLister = (*Store)(nil)
	_ store.Claims             = (*Store)(nil)
)

// lockStripes is how many chain locks there are: chains whose ids hash alike share one.
const lockStripes = 256

// Open opens (creating if needed) the database in dir.
func Open(ctx context.Context, dir string, o Options) (*Store, error) {
	if o.CacheBytes <= 0 {
		o.CacheBytes = 64 << 20
	}
	if o.MemTableBytes == 0 {
		o.MemTableBytes = 32 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open ledger store: %w", err)
	}
	// One process per database: Pebble's own lock says so in terms of its files; this one
	// names the cause.
	unlock, err := durable.Lock(filepath.Join(dir, lockFile), 0o600)
	if errors.Is(err, durable.ErrLocked) {
		return nil, fmt.Errorf("%s: %w", dir, ErrInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("open ledger store: %w", err)
	}
	// Pebble takes its memtables' memory out of the block cache: the cache holds both, the
	// blocks' share being what the two memtables leave. (A cache of CacheBytes alone,
	// with memtables of 32 MiB, held no block at all: BENCHMARKS.md, "Issue 35".)
	cache := pebble.NewCache(o.CacheBytes + 2*int64(o.MemTableBytes))
	opts := &pebble.Options{
		Cache:              cache,
		MemTableSize:       o.MemTableBytes,
		Logger:             pebbleLogger{o.Logger},
		FormatMajorVersion: pebble.FormatNewest,
	}
	// Bloom filters on every level: a record id or link that is not there (every one a
	// commit checks) is answered without reading a block.
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		cache.Unref()
		unlock()
		return nil, fmt.Errorf("open ledger store: %w", err)
	}
	s := &Store{db: db, cache: cache, seed: maphash.MakeSeed(), unlock: unlock}
	err = s.checkFormat()
	if err == nil {
		err = s.loadRegistrationSeq() // registrations.go
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// checkFormat writes the format version into a new database and refuses another one's.
func (s *Store) checkFormat() error {
	v, closer, err := s.db.Get(keyFormat)
	if errors.Is(err, pebble.ErrNotFound) {
		return s.apply(func(b *pebble.Batch) error { return b.Set(keyFormat, encodeUint(formatVersion), nil) })
	}
	if err != nil {
		return fmt.Errorf("open ledger store: %w", err)
	}
	defer closer.Close()
	got, err := decodeUint(v)
	if err != nil || got != formatVersion {
		return fmt.Errorf("%w: %x (this build reads %d)", ErrFormat, v, formatVersion)
	}
	return nil
}

// Close closes the database: what was acknowledged is on disk already. Closing twice
// does nothing.
func (s *Store) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.db.Close()
	s.cache.Unref()
	return errors.Join(err, s.unlock())
}

// open takes the read side of closeMu, or returns ErrClosed; the caller calls the
// function returned when done with db.
func (s *Store) open() (func(), error) {
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return nil, ErrClosed
	}
	return s.closeMu.RUnlock, nil
}

// Err returns why the store takes no more writes, or nil: a write or fsync of Pebble's log
// that failed, after which what the log holds is not known.
func (s *Store) Err() error {
	s.brokenMu.Lock()
	defer s.brokenMu.Unlock()
	return s.broken
}

// Checkpoint writes a consistent copy of the database, as of now, into dir (which must not
// exist), while the store goes on serving: sstables are hard-linked where the file system
// allows it, and the log is copied up to the last acknowledged write.
func (s *Store) Checkpoint(ctx context.Context, dir string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	done, err := s.open()
	if err != nil {
		return err
	}
	defer done()
	if err := s.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("checkpoint of the ledger store: %w", err)
	}
	return nil
}

// Stats describes the database for metrics and operators.
type Stats struct {
	DiskBytes  uint64 // bytes of the database's files on disk
	Sstables   int64  // sstable files
	MemBytes   uint64 // bytes held by memtables
	CacheBytes int64  // bytes held by the block cache
}

// Stats returns the database's current figures.
func (s *Store) Stats() Stats {
	done, err := s.open()
	if err != nil {
		return Stats{}
	}
	defer done()
	m := s.db.Metrics()
	var tables int64
	for _, l := range m.Levels {
		tables += l.TablesCount
	}
	return Stats{DiskBytes: m.DiskSpaceUsage(), Sstables: tables, MemBytes: m.MemTable.Size, CacheBytes: m.BlockCache.Size}
}

// apply builds a batch with fill and commits it durably; a failure of the write itself
// breaks the store (Err).
func (s *Store) apply(fill func(b *pebble.Batch) error) error {
	b := s.db.NewBatch()
	defer b.Close()
	if err := fill(b); err != nil {
		return err
	}
	return s.commit(b)
}

// commit applies b durably.
func (s *Store) commit(b *pebble.Batch) error {
	if err := s.Err(); err != nil {
		return fmt.Errorf("ledger store: an earlier write failed: %w", err)
	}
	done, err := s.open()
	if err != nil {
		return err
	}
	defer done()
	if err := b.Commit(pebble.Sync); err != nil {
		s.brokenMu.Lock()
		if s.broken == nil {
			s.broken = err
		}
		s.brokenMu.Unlock()
		return fmt.Errorf("ledger store write: %w", err)
	}
	return nil
}

// get returns a copy of the value of key, or found = false.
func (s *Store) get(key []byte) (v []byte, found bool, err error) {
	done, err := s.open()
	if err != nil {
		return nil, false, err
	}
	defer done()
	return s.getOpen(key)
}

// getOpen is get for a caller that holds the read side of closeMu already (a scan's
// function): taking it again would wait behind a Close waiting for the first.
func (s *Store) getOpen(key []byte) (v []byte, found bool, err error) {
	val, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	v = append([]byte(nil), val...)
	closer.Close()
	return v, true, nil
}

// getUint returns the value of key decoded as a number, or found = false.
func (s *Store) getUint(key []byte) (n uint64, found bool, err error) {
	v, found, err := s.get(key)
	if err != nil || !found {
		return 0, false, err
	}
	n, err = decodeUint(v)
	return n, err == nil, err
}

// lockFor returns the lock of chain.
func (s *Store) lockFor(chain string) int {
	return int(maphash.String(s.seed, chain) % lockStripes)
}

// lockChains locks the chains' locks, each once and in order (so that two callers never
// wait on each other's), and returns the function that unlocks them.
func (s *Store) lockChains(chains ...string) func() {
	var held [lockStripes]bool
	for _, c := range chains {
		held[s.lockFor(c)] = true
	}
	for i := range held {
		if held[i] {
			s.locks[i].Lock()
		}
	}
	return func() {
		for i := range held {
			if held[i] {
				s.locks[i].Unlock()
			}
		}
	}
}

// pebbleLogger passes Pebble's messages to slog.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug("ledger store", "msg", fmt.Sprintf(format, args...))
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error("ledger store", "err", fmt.Sprintf(format, args...))
}

func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error("ledger store: fatal", "err", msg)
	panic("ledger store: " + msg)
}
