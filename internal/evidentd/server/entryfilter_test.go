package server

import (
	"net/http/httptest"
	"testing"
)

func TestEntryFilter(t *testing.T) {
	for _, tc := range []struct {
		q     string
		attrs int
		ok    bool
	}{
		{"task_id=t1&tag=a&tag=b&outcome=refused", 4, true},
		{"task=t1&logical_id=l&attr.kind=x", 3, true},
		{"method=m&sender=s&since=2026-01-01T00:00:00Z", 0, true},
		{"outcome=maybe", 0, false},
		{"tag=", 0, false},
		{"until=never", 0, false},
	} {
		f, err := entryFilter(httptest.NewRequest("GET", "/?"+tc.q, nil))
		n := 0
		for _, v := range f.Attrs {
			n += len(v)
		}
		if (err == nil) != tc.ok || tc.ok && n != tc.attrs {
			t.Errorf("%s: %d attrs, %v", tc.q, n, err)
		}
	}
}

// FuzzEntryFilter: any query either fails or yields bounded, non-empty attribute values.
func FuzzEntryFilter(f *testing.F) {
	f.Add("task_id=t1&tag=a&outcome=accepted")
	f.Add("attr.x=1&attr.=2&since=2026-01-01T00:00:00Z")
	f.Fuzz(func(t *testing.T, q string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.URL.RawQuery = q
		fl, err := entryFilter(r)
		if err != nil {
			return
		}
		n := 0
		for name, vs := range fl.Attrs {
			for _, v := range vs {
				if name == "" || v == "" {
					t.Fatalf("empty attribute %q=%q from %q", name, v, q)
				}
				n++
			}
		}
		if n > maxAttrFilters {
			t.Fatalf("%d attribute filters", n)
		}
	})
}
