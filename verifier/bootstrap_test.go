package verifier_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/verifier"
	"github.com/evident-log/evident/verifier/internal/testbundle"
)

// TestCHAPBootstrap: a workspace.create signed with the key its sender's following join
// introduces is verified by that join (chap.bootstrap verified); one whose key never arrives
// leaves the chain broken under chap.bootstrap, although every record was admitted.
func TestCHAPBootstrap(t *testing.T) {
	for _, tc := range []struct {
		kid     string
		verdict verifier.Status
		status  verifier.Status
		code    verifier.Code
	}{
		{"k0-1", verifier.Verified, verifier.Verified, ""},
		{"k0-other", verifier.Broken, verifier.Broken, verifier.Code(chap.CodeBootstrapUnverified)},
	} {
		t.Run(tc.kid, func(t *testing.T) {
			b := testbundle.Build(t, testbundle.Options{Entries: 12, CreateKid: tc.kid})
			rep := verify(t, b.Reader(t))
			cs := checksNamed(rep, chap.CheckBootstrap)
			if len(cs) != 1 {
				t.Fatalf("%d chap.bootstrap checks\n%s", len(cs), text(t, rep))
			}
			c := cs[0]
			if rep.Verdict != tc.verdict || c.Status != tc.status || c.Code != tc.code {
				t.Fatalf("verdict %s, check %+v\n%s", rep.Verdict, c, text(t, rep))
			}
			if tc.code != "" && (c.Where != "seq 0" || !strings.Contains(c.Detail, "k0-other")) {
				t.Fatalf("check %+v", c)
			}
			if cv := rep.Chains[0].Coverage; cv.EntriesTotal != 13 {
				t.Fatalf("coverage %+v", cv)
			}
		})
	}
}

// TestCHAPBootstrapUnsignedJoin: a join that carries no signature, introducing the key the
// workspace.create was signed with, verifies the create but is counted unsigned, not as a
// verified signature of its own.
func TestCHAPBootstrapUnsignedJoin(t *testing.T) {
	b := testbundle.Build(t, testbundle.Options{Entries: 12, CreateKid: "k0-1", Bare: true})
	base := verify(t, b.Reader(t)).Chains[0].Coverage

	// The same chain with participant 0's join (seq 1) sent unsigned, relinked.
	chain, err := ledger.NewChain("ws-1", chap.Adapter{})
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	for _, l := range b.Lines() {
		var e bundle.EntryLine
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatal(err)
		}
		rec := []byte(e.Record)
		if e.Seq == 1 {
			var m map[string]any
			if err := json.Unmarshal(rec, &m); err != nil || m["method"] != "participant.join" || m["sig"] == nil {
				t.Fatalf("seq 1 is not a signed join: %s", rec)
			}
			delete(m, "sig")
			if rec, err = json.Marshal(m); err != nil {
				t.Fatal(err)
			}
		}
		arrival, err := time.Parse(time.RFC3339Nano, e.Arrival)
		if err != nil {
			t.Fatal(err)
		}
		a, err := chain.AppendStored(rec, e.Meta, arrival)
		if err != nil {
			t.Fatalf("seq %d: %v", e.Seq, err)
		}
		out, err := json.Marshal(bundle.EntryLine{Seq: a.Seq, Prev: a.Prev, Link: a.Link, Arrival: e.Arrival, Record: a.Admission.Canonical, Meta: e.Meta})
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, out)
	}
	b.SetLines(lines)
	rep := verify(t, b.Reader(t))
	cv := rep.Chains[0].Coverage
	if cv.EntriesChecked != base.EntriesChecked || cv.SignaturesVerified != base.SignaturesVerified-1 || cv.Unsigned != base.Unsigned+1 {
		t.Fatalf("coverage %+v, want one signature fewer and one unsigned more than %+v\n%s", cv, base, text(t, rep))
	}
	if cs := checksNamed(rep, chap.CheckBootstrap); len(cs) != 1 || cs[0].Status != verifier.Verified {
		t.Fatalf("chap.bootstrap %+v\n%s", cs, text(t, rep))
	}
	cs := checksNamed(rep, verifier.CheckChainUnsigned)
	if len(cs) != 1 || len(cs[0].Evidence) == 0 || cs[0].Evidence[0] != "seq 1" {
		t.Fatalf("chain.unsigned %+v\n%s", cs, text(t, rep))
	}
}
