package chap

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/evident-log/evident/ledger"
)

// TestAppendIdentifiedIsAppendBy: admitting a record from the Identity its Identify read
// (ingest's path for a batch's first record) gives what AppendBy gives — the same
// admission, refusal and chain state — for every record of the reference Coordinators'
// chains in order, and for each record offered again or out of its place.
func TestAppendIdentifiedIsAppendBy(t *testing.T) {
	at := time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC)
	for _, impl := range []string{"ts", "py"} {
		for _, journey := range []string{"small", "unchained-prefix", "full"} {
			t.Run(impl+"/"+journey, func(t *testing.T) {
				recs := refAudit(t, impl, journey)
				r0, err := Parse(recs[0])
				if err != nil {
					t.Fatal(err)
				}
				by, err := ledger.NewChain(r0.Workspace, Adapter{})
				if err != nil {
					t.Fatal(err)
				}
				identified, _ := ledger.NewChain(r0.Workspace, Adapter{})
				refused := 0
				for i, rec := range recs {
					for _, other := range [][]byte{recs[(i+1)%len(recs)], recs[max(i-1, 0)]} {
						// Offered out of place (or again): on copies, both refuse alike.
						if ok := sameAppend(t, by.Clone(), identified.Clone(), other, at); !ok {
							refused++
						}
					}
					if ok := sameAppend(t, by, identified, rec, at); !ok {
						t.Fatalf("record %d refused", i)
					}
				}
				if refused == 0 {
					t.Fatal("no record offered out of place was refused: the refusals went untested")
				}
			})
		}
	}
}

// sameAppend appends rec to by with AppendBy and to identified with AppendIdentified, fails
// the test unless both do the same, and reports whether rec was admitted.
func sameAppend(t *testing.T, by, identified *ledger.Chain, rec []byte, at time.Time) bool {
	t.Helper()
	a, aerr := by.AppendBy(rec, at, "")
	var b *ledger.Appended
	id, berr := identified.State.(ledger.Identifier).Identify(ledger.Position{Chain: identified.ID}, rec)
	if berr == nil {
		if id.Parsed == nil {
			t.Fatal("Identify kept no parse")
		}
		b, berr = identified.AppendIdentified(rec, id, at, "")
	}
	if fmt.Sprint(aerr) != fmt.Sprint(berr) {
		t.Fatalf("AppendBy: %v; AppendIdentified: %v", aerr, berr)
	}
	if aerr != nil {
		return false
	}
	if a.Seq != b.Seq || a.Prev != b.Prev || a.Link != b.Link || by.Head != identified.Head {
		t.Fatalf("appended %d %s %s, and %d %s %s", a.Seq, a.Prev, a.Link, b.Seq, b.Prev, b.Link)
	}
	va, vb := a.Admission.Verify, b.Admission.Verify
	if (va == nil) != (vb == nil) || (va != nil && fmt.Sprint(va()) != fmt.Sprint(vb())) {
		t.Fatal("the admissions' signature checks differ")
	}
	ca, cb := *a.Admission, *b.Admission
	ca.Verify, cb.Verify = nil, nil
	if !reflect.DeepEqual(ca, cb) {
		t.Fatalf("admissions differ:\n%+v\n%+v", ca, cb)
	}
	sa, _ := json.Marshal(by.State)
	sb, _ := json.Marshal(identified.State)
	if string(sa) != string(sb) {
		t.Fatalf("chain states differ:\n%s\n%s", sa, sb)
	}
	return true
}
