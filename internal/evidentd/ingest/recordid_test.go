package ingest

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
)

// racingStore is a store on which another writer gets there first: its first Commit runs
// race, then commits.
type racingStore struct {
	store.Store
	once sync.Once
	race func()
}

func (s *racingStore) Commit(ctx context.Context, c *store.ChainRecord, prevSize uint64, es []store.Entry) error {
	s.once.Do(s.race)
	return s.Store.Commit(ctx, c, prevSize, es)
}

// replica is a pipeline sharing st with other replicas (Options.Shared).
func replica(t *testing.T, st store.Store) *Pipeline {
	t.Helper()
	p, err := New(Options{Store: st, Profiles: []ledger.Profile{chap.Adapter{}}, Shared: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRecordIDsAcrossReplicas: record ids are not looked up before a commit; the store's
// unique key refuses a reused one, on whichever replica it was stored. A reused id is then
// refused as id_reused, naming the record; an id a concurrent writer stored after the batch
// was admitted (the same batch sent through two replicas) is not a reuse: the batch is
// looked at again and acknowledged as duplicates.
func TestRecordIDsAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	bob := newMember("agent:bob")
	withID := func(ws, id string) []byte {
		e := bob.env(ws, "task.update", map[string]any{"x": id}, nil)
		e["id"] = id
		return bob.sign(t, e)
	}
	cases := []struct {
		name  string
		batch func(ws string) [][]byte                 // sent through replica B after A stored join, a
		race  func(ws string, batch [][]byte) [][]byte // stored through A just before B's commit (nil: nothing)
		check func(t *testing.T, got []Accepted, err error)
		size  int // the chain's size after both
	}{
		{"an id the other replica stored", func(ws string) [][]byte { return [][]byte{withID(ws, "b"), withID(ws, "a")} }, nil,
			func(t *testing.T, _ []Accepted, err error) { refusal(t, err, 1, ledger.CodeIDReused) }, 2},
		{"an id stored before, while the chain moved", func(ws string) [][]byte { return [][]byte{withID(ws, "a")} },
			func(ws string, _ [][]byte) [][]byte { return [][]byte{withID(ws, "c")} },
			func(t *testing.T, _ []Accepted, err error) { refusal(t, err, 0, ledger.CodeIDReused) }, 3},
		{"the same batch through both replicas", func(ws string) [][]byte { return [][]byte{withID(ws, "d"), withID(ws, "e")} },
			func(_ string, batch [][]byte) [][]byte { return batch },
			func(t *testing.T, got []Accepted, err error) {
				if err != nil || len(got) != 2 || !got[0].Duplicate || !got[1].Duplicate || got[0].Seq != 2 || got[1].Seq != 3 {
					t.Fatalf("got %+v, %v; want records 2 and 3 acknowledged as duplicates", got, err)
				}
			}, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := openStore(t, t.TempDir())
			const ws = "wsp"
			a := replica(t, st)
			if _, err := a.Ingest(ctx, ws, "", [][]byte{bob.join(t, ws), withID(ws, "a")}); err != nil {
				t.Fatal(err)
			}
			batch := c.batch(ws)
			bst := &racingStore{Store: st, race: func() {}}
			if c.race != nil {
				racing := c.race(ws, batch)
				bst.race = func() {
					if _, err := a.Ingest(ctx, ws, "", racing); err != nil {
						t.Errorf("the racing writer: %v", err)
					}
				}
			}
			got, err := replica(t, bst).Ingest(ctx, ws, "", batch)
			c.check(t, got, err)
			checkLinked(t, st, ws, c.size)
		})
	}
}
