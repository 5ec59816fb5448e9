package storetest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/ledger"
)

// attrsOf gives entry seq of the attribute test its attributes: a task per seq%3, a
// refusal every 7th, tags "even" and "five", a logical id on every 4th, on seq 11 a value
// over store.MaxAttrValue (not indexed), and on seq 17 odd tags: characters JSON escapes,
// non-ASCII, one twice, and one not valid UTF-8 (not indexed).
func attrsOf(seq uint64) map[string][]string {
	a := map[string][]string{ledger.AttrTask: {fmt.Sprintf("t%d", seq%3)}, ledger.AttrOutcome: {"accepted"}}
	if seq%7 == 0 {
		a[ledger.AttrOutcome] = []string{"refused"}
	}
	var tags []string
	if seq%2 == 0 {
		tags = append(tags, "even")
	}
	if seq%5 == 0 {
		tags = append(tags, "five")
	}
	if tags != nil {
		a[ledger.AttrTag] = tags
	}
	if seq%4 == 0 {
		a[ledger.AttrLogicalID] = []string{"lgl_" + fmt.Sprint(seq/8)}
	}
	if seq == 11 {
		a["long"] = []string{strings.Repeat("x", store.MaxAttrValue+1)}
	}
	if seq == 17 {
		a[ledger.AttrTag] = []string{oddTag, "é€😀", "", "dup", "dup", "\xff"}
	}
	if seq == 13 {
		return nil // an entry without attributes
	}
	return a
}

// oddTag is a tag of characters a JSON encoding must escape.
const oddTag = "q\"b\\s/\b\f\n\r\t\x01\x1f\x7f<>&"

// indexed is what a store returns for attrsOf(seq): every indexable value, sorted, once.
func indexed(seq uint64) map[string][]string {
	out := map[string][]string{}
	for k, vs := range attrsOf(seq) {
		for _, v := range vs {
			if store.Indexable(k, v) {
				out[k] = append(out[k], v)
			}
		}
		slices.Sort(out[k])
		out[k] = slices.Compact(out[k])
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// testAttrFilters: attributes are stored with their entries, read back by Entries, and
// select entries (AND over names and values) together with every other filter, in
// chain order, per chain; a refused Commit leaves no attribute behind.
func testAttrFilters(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.Open(t)
	var all []store.Entry
	head := ledger.Genesis
	for _, chain := range []string{"a", "b"} {
		prev := ledger.Genesis
		for from := uint64(0); from < 30; from += 15 {
			es, c := build(chain, from, prev, 15)
			for i := range es {
				es[i].Attrs = attrsOf(es[i].Seq)
			}
			if err := s.Commit(ctx, c, from, es); err != nil {
				t.Fatal(err)
			}
			prev = c.Head
			if chain == "a" {
				all = append(all, es...)
				head = c.Head
			}
		}
	}
	// A refused batch (the chain moved) stores none of its attributes.
	ghost, gc := build("a", 30, head, 2)
	for i := range ghost {
		ghost[i].Attrs = map[string][]string{ledger.AttrTask: {"ghost"}}
	}
	if err := s.Commit(ctx, gc, 29, ghost); err == nil {
		t.Fatal("a commit against a stale size was accepted")
	}

	match := func(f func(seq uint64, a map[string][]string) bool) []uint64 {
		var out []uint64
		for _, e := range all {
			if f(e.Seq, indexed(e.Seq)) {
				out = append(out, e.Seq)
			}
		}
		return out
	}
	has := func(a map[string][]string, name, v string) bool { return slices.Contains(a[name], v) }
	cases := []struct {
		name string
		f    store.Filter
		want []uint64
	}{
		{"task", store.Filter{Attrs: map[string][]string{ledger.AttrTask: {"t1"}}}, match(func(_ uint64, a map[string][]string) bool { return has(a, ledger.AttrTask, "t1") })},
		{"task and tag", store.Filter{Attrs: map[string][]string{ledger.AttrTask: {"t0"}, ledger.AttrTag: {"even"}}},
			match(func(_ uint64, a map[string][]string) bool {
				return has(a, ledger.AttrTask, "t0") && has(a, ledger.AttrTag, "even")
			})},
		{"two tags", store.Filter{Attrs: map[string][]string{ledger.AttrTag: {"even", "five"}}},
			match(func(_ uint64, a map[string][]string) bool {
				return has(a, ledger.AttrTag, "even") && has(a, ledger.AttrTag, "five")
			})},
		{"refused", store.Filter{Attrs: map[string][]string{ledger.AttrOutcome: {"refused"}}}, []uint64{0, 7, 14, 21, 28}},
		{"logical id", store.Filter{Attrs: map[string][]string{ledger.AttrLogicalID: {"lgl_1"}}}, []uint64{8, 12}},
		{"attribute, method and from", store.Filter{From: 10, Method: "a.m", Attrs: map[string][]string{ledger.AttrTag: {"five"}}}, []uint64{10, 20}},
		{"attribute, sender and window", store.Filter{Sender: "s0", Since: base.Add(3 * time.Second), Until: base.Add(25 * time.Second),
			Attrs: map[string][]string{ledger.AttrOutcome: {"accepted"}}}, []uint64{3, 6, 9, 12, 15, 18, 24}},
		{"attribute and limit", store.Filter{Limit: 3, Attrs: map[string][]string{ledger.AttrTask: {"t2"}}}, []uint64{2, 5, 8}},
		{"odd value", store.Filter{Attrs: map[string][]string{ledger.AttrTag: {oddTag, "é€😀"}}}, []uint64{17}},
		{"empty value", store.Filter{Attrs: map[string][]string{ledger.AttrTag: {""}}}, []uint64{17}},
		{"value not valid UTF-8 is not indexed", store.Filter{Attrs: map[string][]string{ledger.AttrTag: {"\xff"}}}, nil},
		{"unknown value", store.Filter{Attrs: map[string][]string{ledger.AttrTask: {"ghost"}}}, nil},
		{"value over the bound is not indexed", store.Filter{Attrs: map[string][]string{"long": {strings.Repeat("x", store.MaxAttrValue+1)}}}, nil},
		{"tasks are exclusive", store.Filter{Attrs: map[string][]string{ledger.AttrTask: {"t0", "t1"}}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.Entries(ctx, "a", c.f)
			if err != nil {
				t.Fatal(err)
			}
			var seqs []uint64
			for _, e := range got {
				seqs = append(seqs, e.Seq)
				if !entryEqual(e, all[e.Seq]) {
					t.Fatalf("entry %d:\n got %+v\nwant %+v", e.Seq, e, all[e.Seq])
				}
				if want := indexed(e.Seq); !maps.EqualFunc(e.Attrs, want, slices.Equal) {
					t.Fatalf("entry %d attributes %v, want %v", e.Seq, e.Attrs, want)
				}
			}
			if !slices.Equal(seqs, c.want) {
				t.Fatalf("seqs %v, want %v", seqs, c.want)
			}
		})
	}
	// Another handle (another process) reads the same attributes.
	got, err := b.Open(t).Entries(ctx, "b", store.Filter{Attrs: map[string][]string{ledger.AttrTask: {"t1"}, ledger.AttrTag: {"even"}}})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for _, e := range got {
		if e.Chain != "b" {
			t.Fatalf("entry of chain %q", e.Chain)
		}
		seqs = append(seqs, e.Seq)
	}
	if want := []uint64{4, 10, 16, 22, 28}; !slices.Equal(seqs, want) {
		t.Fatalf("chain b: seqs %v, want %v", seqs, want)
	}
}
