package verifier

import (
	"bytes"
	"strings"
	"testing"
)

// TestWriteTextLinkage: the text report prints the linkage coverage counts when a chain has them.
func TestWriteTextLinkage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		linkage *Linkage
		want    string
	}{
		{"with linkage", &Linkage{EntriesTotal: 10, EntriesChecked: 7, EntriesUnchecked: 3, CheckedFromSeq: 3},
			"linkage (the Coordinator's chain): entries_total 10, entries_checked 7, entries_unchecked 3 (unchained prefix), entries_named 0, checked_from_seq 3"},
		{"without", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := &Report{Verdict: NotEvaluated, Chains: []ChainReport{{ID: "w", Profile: "chap/0.3", Linkage: tc.linkage}}}
			var b bytes.Buffer
			if err := rep.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			got := strings.Contains(b.String(), "linkage (records'")
			if tc.want == "" && got || tc.want != "" && !strings.Contains(b.String(), tc.want) {
				t.Fatalf("report:\n%s\nwant %q", b.String(), tc.want)
			}
		})
	}
}
