package verifier

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/verifier/internal/testbundle"
)

// TestSliceEntryMeta replays a case slice of Coordinator audit entries: each entry's meta
// (the audit entry's seq) is checked as in a whole-chain replay, a recorded refusal is
// counted unsignable, and an entry whose meta seq was altered is refused.
func TestSliceEntryMeta(t *testing.T) {
	b := testbundle.Build(t, testbundle.Options{Entries: 10, UnchainedPrefix: 10, Participants: 3})
	ref := b.Manifest.Chains[0]
	var lines [][]byte
	for _, l := range b.Lines() {
		var e bundle.EntryLine
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatal(err)
		}
		if e.Meta == nil {
			t.Fatalf("seq %d has no meta: the fixture is not audit entries", e.Seq)
		}
		if e.Seq <= 2 || e.Seq == 5 || e.Seq == 7 { // the three joins and two messages
			lines = append(lines, l)
		}
	}
	// A recorded refusal at seq 9 (the entry there replaced): unsigned by design.
	refusal := []byte(`{"outcome":{"code":"forbidden"},"request":{"jsonrpc":"2.0","id":"r-1","method":"task.complete","params":{"task_id":"t9"}},"seq":9}`)
	prev := ledger.NextLink([]byte("an omitted entry"), ledger.Genesis)
	st, err := chap.Adapter{}.NewState(nil)
	if err != nil {
		t.Fatal(err)
	}
	adm, err := st.Admit(ledger.Position{Chain: ref.ID, Head: prev, Seq: 9}, refusal)
	if err != nil {
		t.Fatal(err)
	}
	if !adm.Unsignable || adm.Meta == nil {
		t.Fatalf("fixture: refusal admission %+v", adm)
	}
	line, err := json.Marshal(bundle.EntryLine{Seq: 9, Prev: prev, Link: ledger.NextLink(adm.Canonical, prev), Arrival: ledger.Timestamp(testbundle.Base), Record: adm.Canonical, Meta: adm.Meta})
	if err != nil {
		t.Fatal(err)
	}
	lines = append(lines, line)

	replay := func(t *testing.T, lines [][]byte) sliceResult {
		t.Helper()
		c := b.Clone()
		c.Files[bundle.SliceFile(ref.Dir)] = append(bytes.Join(lines, []byte("\n")), '\n')
		c.Digests()
		v := &verifier{ctx: context.Background(), r: c.Reader(t), files: map[string]*fileState{}}
		r := ref
		r.Slice = &bundle.SliceRef{Seal: 1, Selected: 3, Context: 3}
		return v.sliceEntries(r, nil) // no root: inclusion not evaluated, the replay is
	}
	check := func(res sliceResult, name CheckName) Check {
		for _, c := range res.checks {
			if c.Name == name {
				return c
			}
		}
		t.Fatalf("no %s check in %+v", name, res.checks)
		return Check{}
	}

	res := replay(t, lines)
	if c := check(res, CheckSliceEntries); c.Status != NotEvaluated || c.Code != CodeSliceProof {
		t.Fatalf("slice.entries %+v", c)
	}
	if c := check(res, CheckSliceSignatures); c.Status != Verified {
		t.Fatalf("slice.signatures %+v", c)
	}
	if res.lines != 6 || res.sigOK != 5 || res.unsignable != 1 || res.unsigned != 0 {
		t.Fatalf("lines %d, verified %d, unsignable %d, unsigned %d; want 6, 5, 1, 0", res.lines, res.sigOK, res.unsignable, res.unsigned)
	}

	// The meta seq of seq 5 altered: the audit entry says it sits elsewhere in the chain.
	var e bundle.EntryLine
	if err := json.Unmarshal(lines[3], &e); err != nil || e.Seq != 5 || !bytes.Contains(e.Meta, []byte(`"seq":5`)) {
		t.Fatalf("fixture: %s (%v)", lines[3], err)
	}
	e.Meta = bytes.Replace(e.Meta, []byte(`"seq":5`), []byte(`"seq":6`), 1)
	tampered, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	bad := append(append(append([][]byte(nil), lines[:3]...), tampered), lines[4:]...)
	c := check(replay(t, bad), CheckSliceEntries)
	if c.Status != Broken || c.Code != ledger.CodeWrongChain || c.Where != fmt.Sprintf("%s:4", bundle.SliceFile(ref.Dir)) {
		t.Fatalf("tampered meta seq: slice.entries %+v, want broken %s at line 4", c, ledger.CodeWrongChain)
	}
}
