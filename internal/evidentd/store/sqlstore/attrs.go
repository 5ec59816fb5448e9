package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/evident-log/evident/internal/evidentd/store"
)

// attrNames returns the attribute names of m, sorted (stable SQL and row order).
func attrNames(m map[string][]string) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// attrValues is one attribute of an entry as stores keep it: its name and its indexable
// values, sorted and once.
type attrValues struct {
	name   string
	values []string
}

// indexedAttrs returns what a store keeps of the attributes m: the indexable ones
// (store.Indexable), names in order, each name's values sorted and once; nil when there
// are none.
func indexedAttrs(m map[string][]string) []attrValues {
	var out []attrValues
	for _, name := range attrNames(m) {
		var vals []string
		for _, v := range m[name] {
			if store.Indexable(name, v) {
				vals = append(vals, v)
			}
		}
		if len(vals) == 0 {
			continue
		}
		slices.Sort(vals)
		out = append(out, attrValues{name, slices.Compact(vals)})
	}
	return out
}

// insertAttrs writes the indexable attributes of entries inside tx, one row per value, in
// multi-row statements (without Dialect.AttrsInRow).
func (s *Store) insertAttrs(ctx context.Context, tx *sql.Tx, entries []store.Entry) error {
	var args []any
	size := 0
	for i := range entries {
		e := &entries[i]
		for _, a := range indexedAttrs(e.Attrs) {
			for _, v := range a.values {
				args = append(args, e.Chain, e.Seq, a.name, v)
				size += len(a.name) + len(v)
			}
		}
	}
	if err := s.insertRows(ctx, tx, s.d.InsertIgnore+` INTO `+s.d.Tables.Attrs+` (chain, seq, name, value)`, 4, args, size); err != nil {
		return fmt.Errorf("entry attributes: %w", s.conflict(err))
	}
	return nil
}

// loadAttrs fills the attributes of es (entries of chain in seq order), reading only the
// rows of those entries: a range of seqs where es is one, an IN list where it has gaps.
func (s *Store) loadAttrs(ctx context.Context, chain string, es []store.Entry) error {
	for start := 0; start < len(es); start += inChunk {
		part := es[start:min(start+inChunk, len(es))]
		first, last := part[0].Seq, part[len(part)-1].Seq
		var where string
		var args []any
		if last-first == uint64(len(part)-1) {
			where, args = `seq>=? AND seq<=?`, []any{chain, first, last}
		} else {
			where = `seq IN ` + placeholders(len(part))
			args = make([]any, 0, len(part)+1)
			args = append(args, chain)
			for _, e := range part {
				args = append(args, e.Seq)
			}
		}
		rows, err := s.r.QueryContext(ctx, `SELECT seq, name, value FROM `+s.d.Tables.Attrs+` WHERE chain=? AND `+where+` ORDER BY seq, name, value`, args...)
		if err != nil {
			return fmt.Errorf("entry attributes of %q: %w", chain, err)
		}
		if err := scanAttrs(rows, part); err != nil {
			return fmt.Errorf("entry attributes of %q: %w", chain, err)
		}
	}
	return nil
}

// scanAttrs reads rows of (seq, name, value), ordered by seq, into the Attrs of es (sorted
// by seq); rows of entries not in es are skipped. It closes rows.
func scanAttrs(rows *sql.Rows, es []store.Entry) error {
	defer rows.Close()
	i := 0
	for rows.Next() {
		var seq uint64
		var name, value string
		if err := rows.Scan(&seq, &name, &value); err != nil {
			return err
		}
		for i < len(es) && es[i].Seq < seq {
			i++
		}
		if i == len(es) {
			break
		}
		if es[i].Seq != seq {
			continue
		}
		if es[i].Attrs == nil {
			es[i].Attrs = map[string][]string{}
		}
		es[i].Attrs[name] = append(es[i].Attrs[name], value)
	}
	return rows.Err()
}

// encodeAttrs returns attrs (indexedAttrs) as the JSON object an entry's row keeps with
// Dialect.AttrsInRow, each name's values an array; "" when there are none. Migration 7 of
// the embedded store builds the same object from older rows with SQLite's JSON functions;
// decodeAttrs reads either.
func encodeAttrs(attrs []attrValues) string {
	if len(attrs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, a := range attrs {
		if i > 0 {
			b.WriteByte(',')
		}
		appendJSONString(&b, a.name)
		b.WriteString(`:[`)
		for j, v := range a.values {
			if j > 0 {
				b.WriteByte(',')
			}
			appendJSONString(&b, v)
		}
		b.WriteByte(']')
	}
	b.WriteByte('}')
	return b.String()
}

// appendJSONString writes s, valid UTF-8, to b as a JSON string.
func appendJSONString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b.WriteString(s[start:i])
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		}
		start = i + 1
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}

// errAttrs is the error of a row whose attributes are not a JSON object of arrays of
// strings: a database written by something other than this package.
var errAttrs = errors.New("stored attributes are not a JSON object of arrays of strings")

// decodeAttrs reads the attributes of an entry's row (encodeAttrs): a JSON object of at
// least one name, each an array of strings.
func decodeAttrs(b []byte) (map[string][]string, error) {
	var raw map[string][]*string
	if err := json.Unmarshal(b, &raw); err != nil || len(raw) == 0 {
		return nil, fmt.Errorf("%w: %.60q", errAttrs, b)
	}
	m := make(map[string][]string, len(raw))
	for name, ps := range raw {
		if ps == nil {
			return nil, fmt.Errorf("%w: %.60q", errAttrs, b)
		}
		vs := make([]string, len(ps))
		for i, p := range ps {
			if p == nil {
				return nil, fmt.Errorf("%w: %.60q", errAttrs, b)
			}
			vs[i] = *p
		}
		m[name] = vs
	}
	return m, nil
}

// attrKey is a distinct attribute value of a chain: one row of Tables.AttrValues.
type attrKey struct{ chain, name, value string }

// insertAttrSeqs indexes the attributes of entries inside tx (Dialect.AttrsInRow), kept[i]
// those of entries[i] (indexedAttrs): the number of each distinct value, added to the
// dictionary when new, then a row (number, seq) per value of each entry, in multi-row
// statements.
func (s *Store) insertAttrSeqs(ctx context.Context, tx *sql.Tx, entries []store.Entry, kept [][]attrValues) error {
	ids := map[attrKey]int64{}
	var keys []attrKey
	n := 0
	for i := range entries {
		for _, a := range kept[i] {
			for _, v := range a.values {
				n++
				k := attrKey{entries[i].Chain, a.name, v}
				if _, ok := ids[k]; !ok {
					ids[k] = 0
					keys = append(keys, k)
				}
			}
		}
	}
	if n == 0 {
		return nil
	}
	if err := s.attrIDs(ctx, tx, keys, ids); err != nil {
		return fmt.Errorf("entry attributes: %w", err)
	}
	args := make([]any, 0, 2*n)
	for i := range entries {
		for _, a := range kept[i] {
			for _, v := range a.values {
				args = append(args, ids[attrKey{entries[i].Chain, a.name, v}], entries[i].Seq)
			}
		}
	}
	if err := s.insertRows(ctx, tx, s.d.InsertIgnore+` INTO `+s.d.Tables.AttrSeqs+` (value, seq)`, 2, args, 0); err != nil {
		return fmt.Errorf("entry attributes: %w", s.conflict(err))
	}
	return nil
}

// attrIDs sets ids[k] to the dictionary's number of each of keys, inside tx, numbering
// those it lacks. The numbers of committed rows never change: rows are only ever added.
func (s *Store) attrIDs(ctx context.Context, tx *sql.Tx, keys []attrKey, ids map[attrKey]int64) error {
	scan := func(rows *sql.Rows) error {
		defer rows.Close()
		for rows.Next() {
			var k attrKey
			var id int64
			if err := rows.Scan(&id, &k.chain, &k.name, &k.value); err != nil {
				return err
			}
			ids[k] = id
		}
		return rows.Err()
	}
	t := s.d.Tables.AttrValues
	for part := range slices.Chunk(keys, maxUsedKeys) {
		args := make([]any, 0, 3*len(part))
		for _, k := range part {
			args = append(args, k.chain, k.name, k.value)
		}
		where, args := orTerms(`(chain=? AND name=? AND value=?)`, 3, args)
		rows, err := s.queryTx(ctx, tx, `SELECT id, chain, name, value FROM `+t+` WHERE `+where, args...)
		if err != nil {
			return err
		}
		if err := scan(rows); err != nil {
			return err
		}
	}
	var missing []any
	for _, k := range keys {
		if ids[k] == 0 {
			missing = append(missing, k.chain, k.name, k.value)
		}
	}
	for len(missing) > 0 {
		n := min(len(missing)/3, maxUsedKeys)
		// Inside the write transaction no other writer adds these rows: an error here is
		// not a conflict to retry.
		rows, err := tx.QueryContext(ctx, rowsQuery(`INSERT INTO `+t+` (chain, name, value)`, 3, n)+` RETURNING id, chain, name, value`, missing[:3*n]...)
		if err != nil {
			return err
		}
		if err := scan(rows); err != nil {
			return err
		}
		missing = missing[3*n:]
	}
	for _, k := range keys {
		if ids[k] == 0 {
			return fmt.Errorf("no number for attribute %q=%.40q of %q", k.name, k.value, k.chain)
		}
	}
	return nil
}
