package bundle

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const kidA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

func TestParseKeyHistory(t *testing.T) {
	ok := `{"format":"evident-key-history/v1","keys":[{"kid":"` + kidA + `","cose_key":"pAEBIAYhWCA=","use":["statement","receipt"],"not_before":"2026-01-01T00:00:00Z","not_after":"2026-02-01T00:00:00Z"}],
	"checkpoint_keys":[{"vkey":"log+1+AQ==","role":"primary","not_before":"2026-01-01T00:00:00Z"}]}`
	h, err := ParseKeyHistory([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	k, found := h.Lookup([]byte{0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa})
	if !found {
		t.Fatal("lookup")
	}
	for _, tc := range []struct {
		at   string
		want bool
	}{
		{"2025-12-31T23:59:59Z", false},
		{"2026-01-01T00:00:00Z", true},
		{"2026-01-15T00:00:00Z", true},
		{"2026-02-01T00:00:00Z", true},
		{"2026-02-01T00:00:02Z", false},
	} {
		at, _ := time.Parse(time.RFC3339, tc.at)
		if got := k.ValidAt(at); got != tc.want {
			t.Errorf("ValidAt(%s) = %v", tc.at, got)
		}
	}
	bad := []struct{ name, doc, want string }{
		{"format", strings.Replace(ok, "v1", "v9", 1), "format"},
		{"unknown field", strings.Replace(ok, `"keys"`, `"extra":1,"keys"`, 1), "unknown field"},
		{"short kid", strings.Replace(ok, kidA, "abcd", 1), "kid"},
		{"bad use", strings.Replace(ok, `"statement",`, `"signing",`, 1), "use"},
		{"window reversed", strings.Replace(ok, "2026-02-01", "2025-02-01", 1), "before"},
		{"bad time", strings.Replace(ok, "2026-02-01T00:00:00Z", "yesterday", 1), "not_after"},
		{"bad role", strings.Replace(ok, "primary", "backup", 1), "role"},
		{"duplicate kid", strings.Replace(ok, `}],`, `},{"kid":"`+kidA+`","cose_key":"AQ==","use":[],"not_before":"2026-01-01T00:00:00Z"}],`, 1), "twice"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseKeyHistory([]byte(tc.doc))
			if !errors.Is(err, ErrKeyHistory) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrKeyHistory mentioning %q", err, tc.want)
			}
		})
	}
}

func FuzzParseKeyHistory(f *testing.F) {
	f.Add([]byte(`{"format":"evident-key-history/v1","keys":[{"kid":"` + kidA + `","cose_key":"AQ==","use":["receipt"],"not_before":"2026-01-01T00:00:00Z"}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseKeyHistory(data)
		if err != nil {
			return
		}
		b, err := h.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseKeyHistory(b); err != nil {
			t.Fatalf("re-parse: %v", err)
		}
	})
}
