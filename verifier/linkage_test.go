package verifier_test

import (
	"encoding/json"
	"testing"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/verifier"
	"github.com/evident-log/evident/verifier/internal/testbundle"
)

// TestLinkageRules gives the linkage, timestamp and evidence_head rules each a passing and a
// failing fixture, built with real signatures, seals and receipts.
func TestLinkageRules(t *testing.T) {
	type want struct {
		check  verifier.CheckName
		status verifier.Status
		code   verifier.Code
	}
	tests := []struct {
		name    string
		o       testbundle.Options
		head    func(b *testbundle.Bundle) *ledger.Link
		want    want
		verdict verifier.Status
		linkage *verifier.Linkage
	}{
		{name: "linked from genesis", o: testbundle.Options{Entries: 20},
			want: want{"chain.linkage", verifier.Verified, ""}, verdict: verifier.Verified,
			linkage: &verifier.Linkage{EntriesTotal: 20, EntriesChecked: 20, EntriesUnchecked: 0, EntriesNamed: 20, CheckedFromSeq: 0}},
		{name: "unchained prefix", o: testbundle.Options{Entries: 20, UnchainedPrefix: 6},
			want: want{"chain.linkage", verifier.NotEvaluated, verifier.CodeUnchainedPrefix}, verdict: verifier.NotEvaluated,
			linkage: &verifier.Linkage{EntriesTotal: 20, EntriesChecked: 14, EntriesUnchecked: 6, EntriesNamed: 14, CheckedFromSeq: 6}},
		{name: "nothing chained", o: testbundle.Options{Entries: 10, UnchainedPrefix: 10},
			want: want{"chain.linkage", verifier.NotEvaluated, verifier.CodeUnchainedPrefix}, verdict: verifier.NotEvaluated,
			linkage: &verifier.Linkage{EntriesTotal: 10, EntriesChecked: 0, EntriesUnchecked: 10, CheckedFromSeq: 10}},
		{name: "bare envelopes from genesis: every link recomputed", o: testbundle.Options{Entries: 20, Bare: true},
			want: want{"chain.linkage", verifier.Verified, ""}, verdict: verifier.Verified,
			linkage: &verifier.Linkage{EntriesTotal: 20, EntriesChecked: 20, EntriesUnchecked: 0, CheckedFromSeq: 0}},
		{name: "timestamps non-decreasing", o: testbundle.Options{Entries: 20},
			want: want{"chain.timestamps", verifier.Verified, ""}, verdict: verifier.Verified},
		{name: "a sender's clock steps back: warning, verdict unchanged", o: testbundle.Options{Entries: 20, TSBack: []int{10}},
			want: want{"chain.timestamps", verifier.Verified, verifier.CodeTSRegression}, verdict: verifier.Verified},
		{name: "evidence_head is the head", o: testbundle.Options{Entries: 20},
			head: func(b *testbundle.Bundle) *ledger.Link { h := b.Manifest.Chains[0].Head; return &h },
			want: want{"chain.evidence_head", verifier.Verified, ""}, verdict: verifier.Verified},
		{name: "evidence_head is an earlier entry", o: testbundle.Options{Entries: 20},
			head: func(b *testbundle.Bundle) *ledger.Link {
				lines := b.Lines()
				var e struct{ Link ledger.Link }
				mustJSON(t, lines[15], &e)
				return &e.Link
			},
			want: want{"chain.evidence_head", verifier.Broken, verifier.CodeEvidenceHead}, verdict: verifier.Broken},
		{name: "evidence_head is no link of the chain", o: testbundle.Options{Entries: 20},
			head: func(b *testbundle.Bundle) *ledger.Link {
				l := ledger.NextLink([]byte("elsewhere"), ledger.Genesis)
				return &l
			},
			want: want{"chain.evidence_head", verifier.Broken, verifier.CodeEvidenceHead}, verdict: verifier.Broken},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := testbundle.Build(t, tc.o)
			if tc.head != nil {
				b.Manifest.Chains[0].EvidenceHead = tc.head(b)
			}
			rep := verify(t, b.Reader(t))
			cs := checksNamed(rep, tc.want.check)
			if len(cs) != 1 || cs[0].Status != tc.want.status || cs[0].Code != tc.want.code {
				t.Fatalf("%s = %+v, want %+v\n%s", tc.want.check, cs, tc.want, text(t, rep))
			}
			if rep.Verdict != tc.verdict {
				t.Fatalf("verdict %s, want %s\n%s", rep.Verdict, tc.verdict, text(t, rep))
			}
			if tc.linkage != nil {
				if got := rep.Chains[0].Linkage; got == nil || *got != *tc.linkage {
					t.Fatalf("linkage %+v, want %+v", got, tc.linkage)
				}
			}
		})
	}
}

func mustJSON(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
