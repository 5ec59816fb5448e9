package mysql

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
)

// The SQL this package writes, checked without a database.

func TestBatchLen(t *testing.T) {
	sized := func(n, size int) []store.Entry {
		es := make([]store.Entry, n)
		for i := range es {
			es[i].Record = make([]byte, size)
		}
		return es
	}
	for _, tc := range []struct {
		name string
		es   []store.Entry
		want int
	}{
		{"one", sized(1, 10), 1},
		{"few", sized(7, 10), 7},
		{"rows bound", sized(insertRows+1, 10), insertRows},
		{"bytes bound", sized(10, 1<<20), 3},
		{"one larger than the bound", sized(2, insertBytes*2), 1},
	} {
		if got := batchLen(tc.es); got != tc.want {
			t.Errorf("%s: batchLen = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestEntriesQuery holds the SELECT of Entries: the entries with their metadata joined,
// filtered by the attributes' rows.
func TestEntriesQuery(t *testing.T) {
	since := time.UnixMilli(1000)
	for _, tc := range []struct {
		name     string
		f        store.Filter
		where    string // what follows the fixed chain and seq conditions
		wantArgs []any
	}{
		{"none", store.Filter{}, ` ORDER BY e.seq`, []any{"c", uint64(0)}},
		{"from and limit", store.Filter{From: 5, Limit: 3}, ` ORDER BY e.seq LIMIT 3`, []any{"c", uint64(5)}},
		{"method sender since until", store.Filter{Method: "m", Sender: "s", Since: since, Until: since.Add(time.Second)},
			` AND e.method=? AND e.sender=? AND e.arrival>=? AND e.arrival<? ORDER BY e.seq`, []any{"c", uint64(0), "m", "s", int64(1000), int64(2000)}},
		{"attributes in name order", store.Filter{Attrs: map[string][]string{"z": {"1"}, "a": {"2", "3"}}},
			strings.Repeat(` AND e.seq IN (SELECT seq FROM ledger_entry_attrs WHERE chain=? AND name=? AND value=?)`, 3) + ` ORDER BY e.seq`,
			[]any{"c", uint64(0), "c", "a", "2", "c", "a", "3", "c", "z", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, args := entriesQuery("c", tc.f)
			want := `SELECT e.seq, e.prev, e.link, e.arrival, e.record, e.record_id, e.method, e.sender, e.ts, e.signed, m.meta FROM ledger_entries e LEFT JOIN ledger_entry_meta m ON m.chain=e.chain AND m.seq=e.seq WHERE e.chain=? AND e.seq>=?` + tc.where
			if q != want {
				t.Errorf("query\n%s\nwant\n%s", q, want)
			}
			if !slices.Equal(args, tc.wantArgs) {
				t.Errorf("args %v, want %v", args, tc.wantArgs)
			}
			if n := strings.Count(q, "?"); n != len(args) {
				t.Errorf("%d placeholders, %d args", n, len(args))
			}
		})
	}
}

func TestPlaceholders(t *testing.T) {
	for n, want := range map[int]string{1: "(?)", 3: "(?,?,?)"} {
		if got := placeholders(n); got != want {
			t.Errorf("placeholders(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestRowsQuery(t *testing.T) {
	if got, want := rowsQuery("INSERT INTO t (a, b)", 2, 3), "INSERT INTO t (a, b) VALUES (?,?),(?,?),(?,?)"; got != want {
		t.Errorf("rowsQuery = %q, want %q", got, want)
	}
}

// TestOrTerms: a lookup's terms are rounded up to a power of two, the last row repeated,
// so that a bounded set of statements serves every lookup.
func TestOrTerms(t *testing.T) {
	for _, tc := range []struct {
		rows, terms int
	}{{1, 1}, {2, 2}, {3, 4}, {4, 4}, {5, 8}, {maxUsedKeys - 1, maxUsedKeys}, {maxUsedKeys, maxUsedKeys}} {
		args := make([]any, 0, 2*tc.rows)
		for i := range tc.rows {
			args = append(args, "c", i)
		}
		where, got := orTerms(`(chain=? AND link=?)`, 2, args)
		if n := strings.Count(where, " OR ") + 1; n != tc.terms {
			t.Errorf("%d rows: %d terms, want %d", tc.rows, n, tc.terms)
		}
		if len(got) != 2*tc.terms || strings.Count(where, "?") != len(got) {
			t.Errorf("%d rows: %d args for %d placeholders, want %d", tc.rows, len(got), strings.Count(where, "?"), 2*tc.terms)
		}
		if !slices.Equal(got[:2*tc.rows], args[:2*tc.rows]) {
			t.Errorf("%d rows: the rows given changed", tc.rows)
		}
		for i := 2 * tc.rows; i < len(got); i += 2 {
			if got[i] != "c" || got[i+1] != tc.rows-1 {
				t.Errorf("%d rows: padding row %v, want the last row", tc.rows, got[i:i+2])
			}
		}
	}
}

// TestIndexedAttrs: the store keeps the indexable values of each attribute, names in order,
// values sorted and once.
func TestIndexedAttrs(t *testing.T) {
	long := strings.Repeat("v", store.MaxAttrValue+1)
	for _, tc := range []struct {
		name string
		in   map[string][]string
		want []attrValues
	}{
		{"none", nil, nil},
		{"empty values", map[string][]string{"a": {}}, nil},
		{"only unindexable", map[string][]string{"a": {long}, "": {"x"}, "b": {"\xff"}}, nil},
		{"sorted and once", map[string][]string{"z": {"2", "1", "2"}, "a": {"x"}}, []attrValues{{"a", []string{"x"}}, {"z", []string{"1", "2"}}}},
		{"unindexable values left out", map[string][]string{"a": {long, "ok", "\xfe"}}, []attrValues{{"a", []string{"ok"}}}},
		{"kept as given", map[string][]string{"t": {"q\"b\\s/\n\x01<é>"}}, []attrValues{{"t", []string{"q\"b\\s/\n\x01<é>"}}}},
	} {
		if got := indexedAttrs(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: indexedAttrs = %q, want %q", tc.name, got, tc.want)
		}
	}
}
