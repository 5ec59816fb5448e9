package verifier

import "testing"

// TestIDSet: an id is refused the second time with the seq that first used it, on either
// side of 2^32; distinct ids never are.
func TestIDSet(t *testing.T) {
	s := newIDSet()
	for _, tc := range []struct {
		id        string
		seq       uint64
		wantFirst uint64
		wantUsed  bool
	}{
		{"a", 0, 0, false},
		{"b", 1, 0, false},
		{"a", 2, 0, true},
		{"big", 1<<32 - 1, 0, false},
		{"bigger", 1 << 32, 0, false},
		{"big", 1 << 40, 1<<32 - 1, true},
		{"bigger", 1<<32 + 5, 1 << 32, true},
		{"b", 1 << 33, 1, true},
		{"", 7, 0, false},
		{"", 8, 7, true},
	} {
		first, used := s.add(tc.id, tc.seq)
		if first != tc.wantFirst || used != tc.wantUsed {
			t.Errorf("add(%q, %d) = %d, %v; want %d, %v", tc.id, tc.seq, first, used, tc.wantFirst, tc.wantUsed)
		}
	}
	if len(s.low) != 4 || len(s.high) != 1 {
		t.Errorf("%d ids below 2^32, %d from it; want 4 and 1", len(s.low), len(s.high))
	}
}
