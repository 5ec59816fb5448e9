package replay

import (
	"container/heap"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Bindings are the Coordinator-assigned ids the log determines: which record created each id
// the chain names but never carries at its creation, and, for the rest, why it is open.
type Bindings struct {
	fromGenesis bool
	ids         map[string]idState // kind + "\x00" + id → an id named but not bound
	bySeq       map[creationKey]boundID
}

type creationKey struct {
	kind string
	seq  uint64
}

type boundID struct{ id, basis string }

// idState is what the log says of an id it names and does not bind. The zero value: no
// creation in the chain can have made it (why says so).
type idState struct {
	open  bool     // some creations may have made it; the log does not say which
	code  string   // the note's code when open
	cands []uint64 // the seqs of the creations that may have made it
	why   string
}

// created returns the id the log binds to the object of kind the record at seq created.
func (bd *Bindings) created(kind string, seq uint64) (id, basis string, ok bool) {
	b, ok := bd.bySeq[creationKey{kind, seq}]
	return b.id, b.basis, ok
}

// lookup returns what the log says of an id of kind it names and does not bind.
func (bd *Bindings) lookup(kind, id string) idState { return bd.ids[kind+"\x00"+id] }

// clockSlackMs is how far apart, in milliseconds, the Coordinator's two readings of one clock
// may be taken to be (its arrival times are ISO strings cut to the millisecond, its ULIDs
// carry whole milliseconds too).
const clockSlackMs = 0

// ulidID is a named id that is a ULID, with the creations it may come from (indexes lo..hi).
type ulidID struct {
	id     string
	ms     int64
	hiName int // the last creation before the first record naming it
	lo, hi int
}

// model is one reading of the Coordinator's id scheme.
type model int

const (
	// clocked: the ids and the arrival times come from one wall clock, and the Coordinator
	// handles one call at a time (both reference Coordinators dispatch synchronously): an id
	// drawn while the record at seq s was handled has a ULID time no earlier than the arrival of
	// the record before s and no later than the arrival of s.
	clocked model = iota
	// ordered: only the ids' own order (ids drawn in different milliseconds sort in the order
	// they were drawn) and that an id is named only after its creation. The reference
	// Coordinators' test clocks (deterministic ids) follow this and not clocked.
	ordered
)

// solve binds the named ids of kind.
func (bd *Bindings) solve(kind string, k *kindIDs) {
	if !bd.fromGenesis {
		return // an id may have been created before the chain: nothing is forced
	}
	cr := k.creations
	n := len(cr)
	// hiName is the last creation before the first record naming id (-1: none).
	hiName := func(id string) int { return sort.Search(n, func(i int) bool { return cr[i].seq >= k.named[id] }) - 1 }
	var ul []*ulidID
	var other []string
	for _, id := range k.order {
		hi := hiName(id)
		if hi < 0 {
			bd.ids[kind+"\x00"+id] = idState{why: fmt.Sprintf("no record before seq %d creates a %s without naming its id", k.named[id], kind)}
			continue
		}
		if ms, ok := ulidMs(id); ok {
			ul = append(ul, &ulidID{id: id, ms: ms, hiName: hi})
		} else {
			other = append(other, id)
		}
	}
	taken := map[int]bool{}
	placed := false
	for _, m := range []model{clocked, ordered} {
		if m == clocked && !arrivalsKnown(cr) {
			continue
		}
		if pos, ok := place(ul, cr, m); ok {
			bd.bindPlaced(kind, ul, cr, pos, m, taken)
			placed = true
			break
		}
	}
	if !placed {
		for _, x := range ul {
			bd.ids[kind+"\x00"+x.id] = idState{open: true, code: NoteIDScheme, cands: seqsOf(cr, free(0, x.hiName, taken)),
				why: fmt.Sprintf("the %d %s ids the chain names do not fit the reference Coordinator's id scheme (ULIDs drawn while the creating call is handled, sorting in the order they were drawn, named only after it), so none is bound", len(ul), kind)}
		}
	}
	for _, id := range other {
		if n == 1 && len(ul)+len(other) == 1 {
			bd.bySeq[creationKey{kind, cr[0].seq}] = boundID{id: id, basis: fmt.Sprintf("the chain creates one %s without naming its id (seq %d) and names one such id", kind, cr[0].seq)}
			continue
		}
		cands := seqsOf(cr, free(0, hiName(id), taken))
		if len(cands) == 0 {
			bd.ids[kind+"\x00"+id] = idState{why: fmt.Sprintf("every record before seq %d that creates a %s without naming its id is bound to another id", k.named[id], kind)}
			continue
		}
		bd.ids[kind+"\x00"+id] = idState{open: true, code: NoteIDOpen, cands: cands,
			why: fmt.Sprintf("its id is not a ULID, so nothing in it says when it was drawn; it may come from the creation at %s", seqWords(cands))}
	}
}

// bindPlaced records the bindings of a placement: an id whose window holds one creation is
// bound to it; then one whose window holds one creation not bound to another.
func (bd *Bindings) bindPlaced(kind string, ul []*ulidID, cr []creation, pos [][2]int, m model, taken map[int]bool) {
	var open []int
	for i, x := range ul {
		if pos[i][0] == pos[i][1] {
			bd.bind(kind, x, cr, pos[i][0], m, len(ul))
			taken[pos[i][0]] = true
		} else {
			open = append(open, i)
		}
	}
	for _, i := range open {
		x := ul[i]
		idx := free(pos[i][0], pos[i][1], taken)
		if len(idx) == 1 {
			bd.bind(kind, x, cr, idx[0], m, len(ul))
			taken[idx[0]] = true
			continue
		}
		cands := seqsOf(cr, idx)
		why := fmt.Sprintf("the Coordinator drew it while handling one of the records at %s, each of which fits its ULID time (%s) and the order of the other %s ids; ids drawn in the same millisecond sort at random, and the log does not say which", seqWords(cands), msTime(x.ms), kind)
		if m == ordered {
			why = fmt.Sprintf("it may come from the creation at %s: the order of the %s ids the chain names allows each", seqWords(cands), kind)
		}
		bd.ids[kind+"\x00"+x.id] = idState{open: true, code: NoteIDOpen, cands: cands, why: why}
	}
}

// bind binds id x to the creation at index c and says why.
func (bd *Bindings) bind(kind string, x *ulidID, cr []creation, c int, m model, named int) {
	var basis string
	switch m {
	case clocked:
		basis = fmt.Sprintf("its ULID time %s is no later than the Coordinator's arrival time of seq %d (%s)", msTime(x.ms), cr[c].seq, msTime(cr[c].at))
		if cr[c].prev >= 0 {
			basis += fmt.Sprintf(" and no earlier than that of the record before it (%s)", msTime(cr[c].prev))
		}
		basis += fmt.Sprintf(", and of the %d %s ids the chain names, in the order of their ULID times, none else can come from that record", named, kind)
	default:
		basis = fmt.Sprintf("the Coordinator's ids sort in the order it drew them (a ULID leads with its creation time), an id is named only after its creation, and of the %d %s ids the chain names only this one can come from the record at seq %d", named, kind, cr[c].seq)
	}
	bd.bySeq[creationKey{kind, cr[c].seq}] = boundID{id: x.id, basis: basis}
}

// arrivalsKnown reports whether every creation carries the Coordinator's arrival time.
func arrivalsKnown(cr []creation) bool {
	for _, c := range cr {
		if c.at < 0 {
			return false
		}
	}
	return true
}

// place finds, for each id of ul, the window of creations it can come from under model m in
// any assignment that gives each id its own creation: ids drawn in an earlier millisecond come
// from earlier creations, ids of one millisecond in any order. ok is false when there is no
// such assignment (the ids do not follow the model).
func place(ul []*ulidID, cr []creation, m model) (pos [][2]int, ok bool) {
	n := len(cr)
	var maxAt, minPrev []int64
	if m == clocked {
		// Prefix maxima of the arrivals and suffix minima of the previous arrivals: the
		// windows stay intervals (widened, never narrowed) even if the clock stepped back.
		maxAt, minPrev = make([]int64, n), make([]int64, n)
		for i := range cr {
			maxAt[i] = cr[i].at
			if i > 0 {
				maxAt[i] = max(maxAt[i], maxAt[i-1])
			}
		}
		for i := n - 1; i >= 0; i-- {
			minPrev[i] = cr[i].prev
			if i < n-1 && minPrev[i+1] < minPrev[i] {
				minPrev[i] = minPrev[i+1]
			}
		}
	}
	for _, x := range ul {
		x.lo, x.hi = 0, x.hiName
		if m == clocked {
			x.lo = sort.Search(n, func(i int) bool { return maxAt[i] >= x.ms-clockSlackMs })
			hiT := sort.Search(n, func(i int) bool { return minPrev[i] > x.ms+clockSlackMs }) - 1
			x.hi = min(x.hi, hiT)
		}
		if x.lo > x.hi {
			return nil, false
		}
	}
	order := make([]int, len(ul))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return ul[order[a]].ms < ul[order[b]].ms })
	// groups of one millisecond, in time order
	var groups [][]int
	for i := 0; i < len(order); {
		j := i
		for j < len(order) && ul[order[j]].ms == ul[order[i]].ms {
			j++
		}
		groups = append(groups, order[i:j])
		i = j
	}
	minStart, maxEnd := make([]int, len(groups)), make([]int, len(groups))
	prevEnd := -1
	for g, members := range groups {
		minStart[g] = prevEnd + 1
		end, ok := packLeft(ul, members, prevEnd+1)
		if !ok {
			return nil, false
		}
		prevEnd = end
	}
	nextStart := n
	for g := len(groups) - 1; g >= 0; g-- {
		maxEnd[g] = nextStart - 1
		start, ok := packRight(ul, groups[g], nextStart-1)
		if !ok {
			return nil, false
		}
		nextStart = start
	}
	pos = make([][2]int, len(ul))
	for g, members := range groups {
		for _, i := range members {
			lo, hi := max(ul[i].lo, minStart[g]), min(ul[i].hi, maxEnd[g])
			if lo > hi {
				return nil, false
			}
			pos[i] = [2]int{lo, hi}
		}
	}
	return pos, true
}

// packLeft gives the ids members (indexes into ul) distinct creations from start on, each
// within its window, as early as possible (earliest deadline first); it returns the last one
// used, the least any assignment can use.
func packLeft(ul []*ulidID, members []int, start int) (int, bool) {
	if len(members) == 1 {
		x := ul[members[0]]
		p := max(start, x.lo)
		return p, p <= x.hi
	}
	m := append([]int(nil), members...)
	sort.Slice(m, func(a, b int) bool { return ul[m[a]].lo < ul[m[b]].lo })
	h := &intHeap{}
	p, i, last := start, 0, -1
	for done := 0; done < len(m); done++ {
		if h.Len() == 0 && ul[m[i]].lo > p {
			p = ul[m[i]].lo
		}
		for i < len(m) && ul[m[i]].lo <= p {
			heap.Push(h, ul[m[i]].hi)
			i++
		}
		if heap.Pop(h).(int) < p {
			return 0, false
		}
		last = p
		p++
	}
	return last, true
}

// packRight is packLeft from the other end: the creations at or before end, as late as
// possible; it returns the first one used, the greatest any assignment can use.
func packRight(ul []*ulidID, members []int, end int) (int, bool) {
	if len(members) == 1 {
		x := ul[members[0]]
		p := min(end, x.hi)
		return p, p >= x.lo
	}
	m := append([]int(nil), members...)
	sort.Slice(m, func(a, b int) bool { return ul[m[a]].hi > ul[m[b]].hi })
	h := &intHeap{}
	p, i, first := end, 0, -1
	for done := 0; done < len(m); done++ {
		if h.Len() == 0 && ul[m[i]].hi < p {
			p = ul[m[i]].hi
		}
		for i < len(m) && ul[m[i]].hi >= p {
			heap.Push(h, -ul[m[i]].lo) // a max-heap of lo
			i++
		}
		if -heap.Pop(h).(int) > p {
			return 0, false
		}
		first = p
		p--
	}
	return first, true
}

// intHeap is a min-heap of ints.
type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// free returns the indexes lo..hi of the creations not taken.
func free(lo, hi int, taken map[int]bool) []int {
	var out []int
	for i := lo; i <= hi; i++ {
		if !taken[i] {
			out = append(out, i)
		}
	}
	return out
}

// seqsOf returns the seqs of the creations at idx.
func seqsOf(cr []creation, idx []int) []uint64 {
	out := make([]uint64, len(idx))
	for k, i := range idx {
		out[k] = cr[i].seq
	}
	return out
}

// seqWords names seqs for a reader: "seq 4", "seqs 4, 5 and 9", at most ten shown.
func seqWords(seqs []uint64) string {
	if len(seqs) == 1 {
		return fmt.Sprintf("seq %d", seqs[0])
	}
	shown := seqs
	if len(shown) > 10 {
		shown = shown[:10]
	}
	parts := make([]string, len(shown))
	for i, s := range shown {
		parts[i] = fmt.Sprint(s)
	}
	if len(seqs) > len(shown) {
		return fmt.Sprintf("seqs %s … (%d in all)", strings.Join(parts, ", "), len(seqs))
	}
	return fmt.Sprintf("seqs %s and %s", strings.Join(parts[:len(parts)-1], ", "), parts[len(parts)-1])
}

// ulidMs returns the creation time (Unix ms) a Coordinator id carries: a ULID, bare or after a
// kind prefix ("tsk_", "dlb_", "art_", "hnd_"). ok is false when id is not one.
func ulidMs(id string) (ms int64, ok bool) {
	u := id
	if _, rest, cut := strings.Cut(id, "_"); cut {
		u = rest
	}
	if len(u) != 26 {
		return 0, false
	}
	var v int64
	for i := 0; i < 26; i++ {
		d := strings.IndexByte(crockford, u[i])
		if d < 0 {
			return 0, false
		}
		if i < 10 {
			v = v<<5 | int64(d)
		}
	}
	if v >= 1<<48 {
		return 0, false
	}
	return v, true
}

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

func msTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}
