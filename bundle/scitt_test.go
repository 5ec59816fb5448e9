package bundle

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestParseSCITTIndex(t *testing.T) {
	good, err := os.ReadFile("testdata/scitt-registrations.json")
	if err != nil {
		t.Fatal(err)
	}
	x, err := ParseSCITTIndex(good)
	if err != nil || len(x.Policies) != 2 || len(x.Statements) != 1 || *x.Policies[0].InForce.UntilIndex != 3 {
		t.Fatalf("golden index: %+v, %v", x, err)
	}
	const p1 = "1111111111111111111111111111111111111111111111111111111111111111"
	for _, tc := range []struct{ name, old, new string }{
		{"format", "evident-scitt-registrations/v1", "evident-scitt-registrations/v2"},
		{"unknown field", `"selection": "all",`, `"selection": "all", "extra": 1,`},
		{"policy file", "scitt/policies/000001.cose", "scitt/policies/000007.cose"},
		{"interval gap", `"until_index": 3`, `"until_index": 2`},
		{"interval time", `"until": "2026-05-17T10:00:00Z"`, `"until": "2026-05-17T09:30:00Z"`},
		{"from index", `"from_index": 3`, `"from_index": 4`},
		{"open-ended middle", `"until_index": 3, `, ``},
		{"unknown policy", `"policy": "` + p1 + `"`, `"policy": "` + strings.Repeat("4", 64) + `"`},
		{"uppercase id", `"id": "3333`, `"id": "AAAA`},
		{"no issuer", `"issuer": "https://build.example"`, `"issuer": ""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := strings.Replace(string(good), tc.old, tc.new, 1)
			if b == string(good) {
				t.Fatal("mutation did not apply")
			}
			if _, err := ParseSCITTIndex([]byte(b)); !errors.Is(err, ErrSCITTIndex) {
				t.Fatalf("err = %v, want ErrSCITTIndex", err)
			}
		})
	}
}
