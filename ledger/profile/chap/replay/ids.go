package replay

import (
	"bytes"
	"fmt"
	"sort"
	"time"

	"github.com/evident-log/evident/ledger/profile/chap"
)

// Index is the first pass of a replay. It reads the chain in order as a Builder does and
// keeps only what Bind needs: the records that create an object without carrying the id the
// Coordinator gave it (a task.create, the new task of an escalate.raise or control.supersede,
// a deliberate.open, whisper.ask or handoff.propose), with the Coordinator's arrival times,
// and the first record naming each id the chain never created with that id.
type Index struct {
	b     *Builder
	kinds map[string]*kindIDs
}

// creation is a record that created an object of some kind without naming its id.
type creation struct {
	seq      uint64
	at, prev int64 // the Coordinator's arrival time (Unix ms) of the record and of the one before it; -1 unknown
}

// kindIDs is what the first pass saw of one kind of object.
type kindIDs struct {
	creations []creation        // in chain order
	named     map[string]uint64 // id → seq of the first record naming it
	order     []string          // the ids of named, in the order they were first named
}

// NewIndex starts the first pass of a replay.
func NewIndex() *Index {
	ix := &Index{kinds: map[string]*kindIDs{}}
	ix.b = New("", "", nil)
	ix.b.scan = ix
	return ix
}

// Add reads the record at seq. Records must come in chain order, as to Builder.Add.
func (ix *Index) Add(seq uint64, r *chap.Record) { ix.b.Add(seq, r) }

func (ix *Index) kind(k string) *kindIDs {
	ki := ix.kinds[k]
	if ki == nil {
		ki = &kindIDs{named: map[string]uint64{}}
		ix.kinds[k] = ki
	}
	return ki
}

func (ix *Index) created(kind string, seq uint64, at, prev int64) {
	ki := ix.kind(kind)
	ki.creations = append(ki.creations, creation{seq: seq, at: at, prev: prev})
}

func (ix *Index) named(kind, id string, seq uint64) {
	ki := ix.kind(kind)
	if _, ok := ki.named[id]; !ok {
		ki.named[id] = seq
		ki.order = append(ki.order, id)
	}
}

// Bind works out, kind by kind, which named id each creation made, where the log determines
// it (docs/profiles/chap.md, "Binding the Coordinator's ids").
func (ix *Index) Bind() *Bindings {
	bd := &Bindings{fromGenesis: ix.b.fromGenesis, ids: map[string]idState{}, bySeq: map[creationKey]boundID{}}
	kinds := make([]string, 0, len(ix.kinds))
	for k := range ix.kinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		bd.solve(k, ix.kinds[k])
	}
	return bd
}

// create returns the key of the object of kind the record at seq creates without naming its
// id: the id the log binds to it, with why, else a provisional key "(<kind> of seq <seq>)".
func (b *Builder) create(kind string, seq uint64) (key, basis string) {
	if b.scan != nil {
		b.scan.created(kind, seq, b.at, b.prevAt)
	} else if id, basis, ok := b.ids.created(kind, seq); ok {
		return id, basis
	}
	return fmt.Sprintf("(%s of seq %d)", kind, seq), ""
}

// arrivalMs reads the Coordinator's arrival time from an audit entry's metadata
// ({seq, arrived, prev_hash}), in Unix milliseconds; -1 when there is none.
func arrivalMs(meta []byte) int64 {
	if len(meta) == 0 {
		return -1
	}
	// The metadata is canonical JSON (chap.Parse wrote it): the member is spelled one way, and
	// an RFC 3339 time holds no escapes.
	const key = `"arrived":"`
	i := bytes.Index(meta, []byte(key))
	if i < 0 {
		return -1
	}
	v := meta[i+len(key):]
	j := bytes.IndexByte(v, '"')
	if j < 0 {
		return -1
	}
	t, err := time.Parse(time.RFC3339Nano, string(v[:j]))
	if err != nil {
		return -1
	}
	return t.UnixMilli()
}
