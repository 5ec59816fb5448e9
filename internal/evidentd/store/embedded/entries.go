package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// Commit implements store.Store.
func (s *Store) Commit(ctx context.Context, c *store.ChainRecord, prevSize uint64, entries []store.Entry) error {
	return s.CommitGroup(ctx, []store.Batch{{Chain: c, PrevSize: prevSize, Entries: entries}})[0]
}

// CommitGroup implements store.GroupCommitter: the batches that pass their checks are
// written in one Pebble batch, with one fsync.
func (s *Store) CommitGroup(ctx context.Context, batches []store.Batch) []error {
	errs := make([]error, len(batches))
	chains := make([]string, len(batches))
	for i := range batches {
		chains[i] = batches[i].Chain.ID
	}
	defer s.lockChains(chains...)()
	wb := s.db.NewBatch()
	defer wb.Close()
	ok := 0
	for i := range batches {
		if err := ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		created, err := s.checkBatch(&batches[i])
		if err == nil {
			err = putBatch(wb, &batches[i], created)
		}
		if errs[i] = err; errs[i] != nil {
			errs[i] = fmt.Errorf("commit chain %q: %w", batches[i].Chain.ID, errs[i])
			continue
		}
		ok++
	}
	if ok == 0 {
		return errs
	}
	if err := s.commit(wb); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("commit chain %q: %w", batches[i].Chain.ID, err)
			}
		}
	}
	return errs
}

// checkBatch checks b against the database, under its chain's lock, and returns the
// chain's creation time to keep, or why b is refused: store.ErrConflict when the chain
// moved or a record id is taken.
func (s *Store) checkBatch(b *store.Batch) (time.Time, error) {
	c := b.Chain
	created := c.Created
	head := ledger.Genesis
	stored, found, err := s.get(chainKey(c.ID))
	switch {
	case err != nil:
		return created, fmt.Errorf("load chain: %w", err)
	case !found && b.PrevSize != 0:
		return created, fmt.Errorf("chain %q absent, expected at size %d: %w", c.ID, b.PrevSize, store.ErrConflict)
	case found:
		cur, err := decodeChain(c.ID, stored)
		if err != nil {
			return created, err
		}
		if cur.Size != b.PrevSize {
			return created, fmt.Errorf("chain %q at size %d, expected %d: %w", c.ID, cur.Size, b.PrevSize, store.ErrConflict)
		}
		created, head = cur.Created, cur.Head
	case created.IsZero():
		created = time.Now()
	}
	if err := checkLinks(b, head); err != nil {
		var bad *badLinkError
		if errors.As(err, &bad) { // a link the chain holds is a conflict, like a record id
			if seq, used, lerr := s.getUint(linkKey(c.ID, bad.link)); lerr == nil && used {
				return created, fmt.Errorf("link %s already at seq %d: %w", bad.link, seq, store.ErrConflict)
			}
		}
		return created, err
	}
	return created, s.checkRecordIDs(b)
}

// checkLinks checks that b's entries continue the chain whose head is head: each entry's
// link hashes its record after its predecessor's link (ledger.NextLink), the first one's
// predecessor being head, each entry's seq the next, and the chain's new head and size
// those of the last entry. A link the chain holds cannot come again without a SHA-256
// collision, so links need no look-up; an entry that does not continue the head is
// store.ErrConflict, as another writer moved the chain.
func checkLinks(b *store.Batch, head ledger.Link) error {
	c := b.Chain
	prev, seq := head, b.PrevSize
	for i := range b.Entries {
		e := &b.Entries[i]
		switch {
		case e.Chain != c.ID:
			return fmt.Errorf("entry %d names chain %q, not %q", e.Seq, e.Chain, c.ID)
		case e.Seq != seq:
			return fmt.Errorf("entry seq %d where the chain's next is %d: %w", e.Seq, seq, store.ErrConflict)
		case e.Prev != prev:
			return fmt.Errorf("entry %d names predecessor %s, not the chain's %s: %w", e.Seq, e.Prev, prev, store.ErrConflict)
		case ledger.NextLink(e.Record, e.Prev) != e.Link:
			return &badLinkError{seq: e.Seq, link: e.Link, prev: e.Prev}
		}
		prev, seq = e.Link, seq+1
	}
	if len(b.Entries) > 0 && (c.Head != prev || c.Size != seq) {
		return fmt.Errorf("chain %q: new head %s at size %d, but its entries end in %s at %d", c.ID, c.Head, c.Size, prev, seq)
	}
	return nil
}

// badLinkError is an entry whose link is not the hash of its record after its
// predecessor's.
type badLinkError struct {
	seq        uint64
	link, prev ledger.Link
}

func (e *badLinkError) Error() string {
	return fmt.Sprintf("entry %d: link %s is not the hash of its record after %s", e.seq, e.link, e.prev)
}

// checkRecordIDs refuses with store.ErrConflict a batch that uses a record id twice or one
// its chain holds: the one check of record ids' uniqueness. The look-ups share one
// iterator, which Pebble's Bloom filters answer for ids not there without reading blocks.
func (s *Store) checkRecordIDs(b *store.Batch) error {
	chain := b.Chain.ID
	ids := make(map[string]uint64, len(b.Entries))
	for i := range b.Entries {
		e := &b.Entries[i]
		if e.RecordID == "" {
			continue
		}
		if seq, dup := ids[e.RecordID]; dup {
			return fmt.Errorf("record id %q at seq %d and %d: %w", e.RecordID, seq, e.Seq, store.ErrConflict)
		}
		ids[e.RecordID] = e.Seq
	}
	if len(ids) == 0 {
		return nil
	}
	prefix := ck(tagRecordID, chain, 0)
	it, release, err := s.iter(context.Background(), prefix, upperBound(prefix))
	if err != nil {
		return err
	}
	defer release()
	key := prefix
	for i := range b.Entries {
		e := &b.Entries[i]
		if e.RecordID == "" {
			continue
		}
		key = append(key[:len(prefix)], e.RecordID...)
		if it.SeekPrefixGE(key) && bytes.Equal(it.Key(), key) {
			v, err := it.ValueAndErr()
			if err != nil {
				return err
			}
			seq, _ := decodeUint(v)
			return fmt.Errorf("record id %q already used at seq %d: %w", e.RecordID, seq, store.ErrConflict)
		}
		if err := it.Error(); err != nil {
			return fmt.Errorf("record id %q: %w", e.RecordID, err)
		}
	}
	return nil
}

// putBatch adds b's writes to wb: the chain's new state, keeping its creation time, and its
// entries with their indexes.
func putBatch(wb *pebble.Batch, b *store.Batch, created time.Time) error {
	c := b.Chain
	next := *c
	next.Created = created
	if err := wb.Set(chainKey(c.ID), encodeChain(&next), nil); err != nil {
		return err
	}
	for i := range b.Entries {
		if err := putEntry(wb, &b.Entries[i]); err != nil {
			return err
		}
	}
	return nil
}

// putEntry adds to wb the entry e and its index keys.
func putEntry(wb *pebble.Batch, e *store.Entry) error {
	attrs := store.IndexedAttrs(e.Attrs)
	seq := encodeUint(e.Seq)
	err := wb.Set(entryKey(e.Chain, e.Seq), encodeEntry(e, attrs), nil)
	if err == nil {
		err = wb.Set(linkKey(e.Chain, e.Link), seq, nil)
	}
	if err == nil && e.RecordID != "" {
		err = wb.Set(recordIDKey(e.Chain, e.RecordID), seq, nil)
	}
	for name, values := range attrs {
		for _, v := range values {
			if err == nil {
				err = wb.Set(append(attrPrefix(e.Chain, name, v), seq...), nil, nil)
			}
		}
	}
	return err
}

// LoadChain implements store.Store.
func (s *Store) LoadChain(ctx context.Context, id string) (*store.ChainRecord, error) {
	v, found, err := s.get(chainKey(id))
	if err != nil {
		return nil, fmt.Errorf("load chain %q: %w", id, err)
	}
	if !found {
		return nil, fmt.Errorf("chain %q: %w", id, store.ErrNotFound)
	}
	return decodeChain(id, v)
}

// FindLink implements store.Store.
func (s *Store) FindLink(ctx context.Context, chain string, l ledger.Link) (uint64, bool, error) {
	seq, found, err := s.getUint(linkKey(chain, l))
	if err != nil {
		return 0, false, fmt.Errorf("find link: %w", err)
	}
	return seq, found, nil
}

// FindRecordIDs implements store.Store.
func (s *Store) FindRecordIDs(ctx context.Context, chain string, ids []string) (map[string]uint64, error) {
	out := make(map[string]uint64)
	for _, id := range ids {
		seq, found, err := s.getUint(recordIDKey(chain, id))
		if err != nil {
			return nil, fmt.Errorf("find record ids: %w", err)
		}
		if found {
			out[id] = seq
		}
	}
	return out, nil
}

// Entries implements store.Store. With attribute filters the entries are found through
// the index of the first filter value, the others checked on each entry.
func (s *Store) Entries(ctx context.Context, chain string, f store.Filter) ([]store.Entry, error) {
	var out []store.Entry
	keep := func(e *store.Entry) bool {
		return (f.Method == "" || e.Method == f.Method) && (f.Sender == "" || e.Sender == f.Sender) &&
			(f.Since.IsZero() || ms(e.Arrival) >= f.Since.UnixMilli()) && (f.Until.IsZero() || ms(e.Arrival) < f.Until.UnixMilli()) &&
			hasAttrs(e.Attrs, f.Attrs)
	}
	// add decodes the entry at seq, keeps it if the filter takes it, and says whether the
	// scan goes on.
	add := func(seq uint64, v []byte) (bool, error) {
		e, err := decodeEntry(chain, seq, v)
		if err != nil {
			return false, err
		}
		if keep(&e) {
			out = append(out, e)
		}
		return f.Limit <= 0 || len(out) < f.Limit, nil
	}
	name, value, byAttr := firstAttr(f.Attrs)
	if !byAttr {
		prefix := ck(tagEntry, chain, 0)
		err := s.scan(ctx, entryKey(chain, f.From), upperBound(prefix), func(k, v []byte) (bool, error) {
			return add(lastUint64(k), v)
		})
		if err != nil {
			return nil, fmt.Errorf("entries of %q: %w", chain, err)
		}
		return out, nil
	}
	if !store.Indexable(name, value) {
		return nil, nil // never indexed: matches nothing
	}
	prefix := attrPrefix(chain, name, value)
	from := append(slices.Clip(prefix), encodeUint(f.From)...)
	err := s.scan(ctx, from, upperBound(prefix), func(k, _ []byte) (bool, error) {
		seq := lastUint64(k)
		v, found, err := s.getOpen(entryKey(chain, seq)) // scan holds closeMu
		if err != nil || !found {
			return false, fmt.Errorf("attribute index names seq %d: %w", seq, errOr(err, ErrCorrupt))
		}
		return add(seq, v)
	})
	if err != nil {
		return nil, fmt.Errorf("entries of %q: %w", chain, err)
	}
	return out, nil
}

func errOr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// firstAttr returns the first filter value, names in order.
func firstAttr(m map[string][]string) (name, value string, ok bool) {
	names := make([]string, 0, len(m))
	for n, vs := range m {
		if len(vs) > 0 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "", "", false
	}
	slices.Sort(names)
	return names[0], m[names[0]][0], true
}

// hasAttrs reports whether have carries every value of every name of want.
func hasAttrs(have, want map[string][]string) bool {
	for name, values := range want {
		for _, v := range values {
			if _, found := slices.BinarySearch(have[name], v); !found || !store.Indexable(name, v) {
				return false
			}
		}
	}
	return true
}

// scan calls fn with the keys and values from lower (inclusive) to upper (exclusive), in
// order, until fn returns false or an error. The value is only valid during the call.
func (s *Store) scan(ctx context.Context, lower, upper []byte, fn func(k, v []byte) (bool, error)) error {
	it, release, err := s.iter(ctx, lower, upper)
	if err != nil {
		return err
	}
	defer release()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n++; n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		if more, err := fn(it.Key(), v); err != nil || !more {
			return err
		}
	}
	return it.Error()
}

// iter returns an iterator over the keys from lower (inclusive) to upper (exclusive), and
// the function that closes it and lets Close go on; closeMu is held between the two.
func (s *Store) iter(ctx context.Context, lower, upper []byte) (*pebble.Iterator, func(), error) {
	done, err := s.open()
	if err != nil {
		return nil, nil, err
	}
	it, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		done()
		return nil, nil, err
	}
	return it, func() { it.Close(); done() }, nil
}

// Chains implements store.Store.
func (s *Store) Chains(ctx context.Context) ([]string, error) {
	var out []string
	err := s.scan(ctx, []byte{tagChain}, []byte{tagChain + 1}, func(k, _ []byte) (bool, error) {
		out = append(out, string(k[1:]))
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("chains: %w", err)
	}
	return out, nil
}

// ListChains implements store.Store.
func (s *Store) ListChains(ctx context.Context, after string, limit int) ([]store.ChainRecord, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []store.ChainRecord
	from := chainKey(after)
	err := s.scan(ctx, from, []byte{tagChain + 1}, func(k, v []byte) (bool, error) {
		if bytes.Equal(k, from) {
			return true, nil
		}
		c, err := decodeChain(string(k[1:]), v)
		if err != nil {
			return false, err
		}
		c.Tree, c.State = nil, nil
		out = append(out, *c)
		return len(out) < limit, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list chains after %q: %w", after, err)
	}
	return out, nil
}

// lastKey returns a copy of the greatest key that begins with prefix.
func (s *Store) lastKey(ctx context.Context, prefix []byte) (key []byte, found bool, err error) {
	it, release, err := s.iter(ctx, prefix, upperBound(prefix))
	if err != nil {
		return nil, false, err
	}
	defer release()
	if it.Last() {
		key, found = append([]byte(nil), it.Key()...), true
	}
	return key, found, it.Error()
}
