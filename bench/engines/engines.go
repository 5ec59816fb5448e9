package engines

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/dgraph-io/badger/v4"
)

// ErrDuplicate is returned by Commit when a record id is already present.
var ErrDuplicate = errors.New("duplicate record id")

// Engine is the store's use of one key-value engine.
type Engine interface {
	// Commit checks the chain's state and that no record id of envs is
	// present, then writes the envelopes and the chain's new state in one
	// atomic batch: durable (fsynced) before it returns if sync is set.
	Commit(chain []byte, envs []Envelope, state []byte, sync bool) error
	// Get reads key's value; found is false if the key is absent.
	Get(key []byte) (found bool, n int, err error)
	// Scan reads the values of up to n keys with prefix from start on.
	Scan(prefix, start []byte, n int) (int, error)
	// Flush makes everything written so far part of the engine's tables.
	Flush() error
	Close() error
}

// Names are the engines, in benchmark order.
var Names = []string{"pebble", "badger"}

// Open opens engine name in dir; syncWrites asks for the durable mode a
// committed batch needs (Badger's is a database option, Pebble's is per batch).
func Open(name, dir string, syncWrites bool) (Engine, error) {
	switch name {
	case "pebble":
		return OpenPebble(dir)
	case "badger":
		return OpenBadger(dir, syncWrites)
	}
	return nil, fmt.Errorf("no engine %q", name)
}

// Pebble adapts a *pebble.DB.
type Pebble struct{ DB *pebble.DB }

// OpenPebble opens Pebble with its defaults (4 MiB memtable, 8 MiB block
// cache), except that its informational log lines are dropped.
func OpenPebble(dir string) (*Pebble, error) {
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		return nil, err
	}
	return &Pebble{db}, nil
}

// quietLogger drops Pebble's Infof lines and keeps its errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	pebble.DefaultLogger.Errorf(format, args...)
}
func (quietLogger) Fatalf(format string, args ...any) {
	pebble.DefaultLogger.Fatalf(format, args...)
}

// Commit does the lookups on the database, then applies one batch with
// pebble.Sync: concurrent committers share the WAL's fsync (group commit).
func (p *Pebble) Commit(chain []byte, envs []Envelope, state []byte, sync bool) error {
	if _, _, err := p.Get(ChainKey(chain)); err != nil {
		return err
	}
	for i := range envs {
		found, _, err := p.Get(RecordKey(chain, envs[i].RecordID))
		if err != nil {
			return err
		}
		if found {
			return ErrDuplicate
		}
	}
	b := p.DB.NewBatch()
	defer b.Close()
	for i := range envs {
		for _, kv := range Writes(chain, &envs[i]) {
			if err := b.Set(kv.K, kv.V, nil); err != nil {
				return err
			}
		}
	}
	if err := b.Set(ChainKey(chain), state, nil); err != nil {
		return err
	}
	if sync {
		return b.Commit(pebble.Sync)
	}
	return b.Commit(pebble.NoSync)
}

// Get reads one key.
func (p *Pebble) Get(key []byte) (bool, int, error) {
	v, closer, err := p.DB.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	n := len(v)
	return true, n, closer.Close()
}

// Scan iterates from start within prefix.
func (p *Pebble) Scan(prefix, start []byte, n int) (int, error) {
	it, err := p.DB.NewIter(&pebble.IterOptions{LowerBound: start, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return 0, err
	}
	got, size := 0, 0
	for ok := it.First(); ok && got < n; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return got, err
		}
		size += len(v)
		got++
	}
	if err := it.Close(); err != nil {
		return got, err
	}
	if size == 0 && got > 0 {
		return got, errors.New("empty values")
	}
	return got, nil
}

// Flush flushes the memtable.
func (p *Pebble) Flush() error { return p.DB.Flush() }

// Close closes the database.
func (p *Pebble) Close() error { return p.DB.Close() }

// BadgerMemTableSize, BadgerNumMemtables and BadgerBlockCacheSize are the
// memory settings used instead of Badger's defaults (64 MiB x 5 memtables and
// a 256 MiB block cache, ~576 MiB before indexes): 32 MiB x 3 and 64 MiB,
// ~160 MiB.
const (
	BadgerMemTableSize   = 32 << 20
	BadgerNumMemtables   = 3
	BadgerBlockCacheSize = 64 << 20
)

// Badger adapts a *badger.DB.
type Badger struct{ DB *badger.DB }

// OpenBadger opens Badger with its defaults except SyncWrites, the memory
// settings above and warnings-only logging.
func OpenBadger(dir string, syncWrites bool) (*Badger, error) {
	opt := badger.DefaultOptions(dir).
		WithSyncWrites(syncWrites).
		WithMemTableSize(BadgerMemTableSize).
		WithNumMemtables(BadgerNumMemtables).
		WithBlockCacheSize(BadgerBlockCacheSize).
		WithLoggingLevel(badger.WARNING)
	db, err := badger.Open(opt)
	if err != nil {
		return nil, err
	}
	return &Badger{db}, nil
}

// Commit does the lookups and the writes in one read-write transaction
// (atomic; with SyncWrites its commit returns after the value log's fsync,
// which Badger's single writer shares among the transactions it batches). The
// sync argument is ignored: Badger's durability is the database's SyncWrites.
func (bd *Badger) Commit(chain []byte, envs []Envelope, state []byte, _ bool) error {
	txn := bd.DB.NewTransaction(true)
	defer txn.Discard()
	if _, err := txn.Get(ChainKey(chain)); err != nil && !errors.Is(err, badger.ErrKeyNotFound) {
		return err
	}
	for i := range envs {
		_, err := txn.Get(RecordKey(chain, envs[i].RecordID))
		if err == nil {
			return ErrDuplicate
		}
		if !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
	}
	for i := range envs {
		for _, kv := range Writes(chain, &envs[i]) {
			if err := txn.Set(kv.K, kv.V); err != nil {
				return err
			}
		}
	}
	if err := txn.Set(ChainKey(chain), state); err != nil {
		return err
	}
	return txn.Commit()
}

// Get reads one key in a read-only transaction.
func (bd *Badger) Get(key []byte) (found bool, n int, err error) {
	err = bd.DB.View(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		return item.Value(func(v []byte) error { n = len(v); return nil })
	})
	return found, n, err
}

// Scan iterates from start within prefix.
func (bd *Badger) Scan(prefix, start []byte, n int) (int, error) {
	got := 0
	err := bd.DB.View(func(txn *badger.Txn) error {
		o := badger.DefaultIteratorOptions
		o.Prefix = prefix
		o.PrefetchSize = n
		it := txn.NewIterator(o)
		defer it.Close()
		for it.Seek(start); it.Valid() && got < n; it.Next() {
			if err := it.Item().Value(func(v []byte) error {
				if len(v) == 0 {
					return errors.New("empty value")
				}
				return nil
			}); err != nil {
				return err
			}
			got++
		}
		return nil
	})
	return got, err
}

// Flush is a no-op: Badger flushes its memtables on Close.
func (bd *Badger) Flush() error { return nil }

// Close closes the database, flushing the memtables.
func (bd *Badger) Close() error { return bd.DB.Close() }

func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// Load writes n envelopes per chain over chains chains without fsync and
// without the uniqueness lookups, in batches of batch envelopes (Pebble:
// NoSync batches; Badger: a WriteBatch,
// which splits itself into transactions, opened with SyncWrites off).
func Load(e Engine, chains, n, batch int) error {
	if bd, ok := e.(*Badger); ok {
		wb := bd.DB.NewWriteBatch()
		defer wb.Cancel()
		for ci := 0; ci < chains; ci++ {
			chain := ChainName(ci)
			var head [32]byte
			for s := 0; s < n; s++ {
				env := NewEnvelope(ci, chain, uint64(s))
				for _, kv := range Writes(chain, &env) {
					if err := wb.Set(kv.K, kv.V); err != nil {
						return err
					}
				}
				head = env.Link
			}
			if err := wb.Set(ChainKey(chain), StateValue(chain, uint64(n-1), head)); err != nil {
				return err
			}
		}
		return wb.Flush()
	}
	envs := make([]Envelope, 0, batch)
	for ci := 0; ci < chains; ci++ {
		chain := ChainName(ci)
		for s := 0; s < n; s += batch {
			envs = envs[:0]
			for j := s; j < s+batch && j < n; j++ {
				envs = append(envs, NewEnvelope(ci, chain, uint64(j)))
			}
			last := envs[len(envs)-1]
			b := e.(*Pebble).DB.NewBatch()
			for i := range envs {
				for _, kv := range Writes(chain, &envs[i]) {
					if err := b.Set(kv.K, kv.V, nil); err != nil {
						return err
					}
				}
			}
			if err := b.Set(ChainKey(chain), StateValue(chain, last.Seq, last.Link), nil); err != nil {
				return err
			}
			if err := b.Commit(pebble.NoSync); err != nil {
				return err
			}
			b.Close()
		}
	}
	return nil
}
