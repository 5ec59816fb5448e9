package chapscenario_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
)

// TestAppendIdentifiedRefusesAlike is TestAppendIdentifiedIsAppendBy (package chap, over
// the reference Coordinators' audit entries) for signed bare envelopes, the form ingest
// mostly takes: the journeys, a long chain in both wire forms and the reference support
// triage. Besides every record in order, each is offered out of place and altered — its
// signature tampered with or removed, its predecessor set to genesis, wrapped as an audit
// entry of the wrong seq or as a recorded refusal — with an Identity read on an empty state
// for another chain and submitter, as ingest's retry check reads it, and used twice. Both
// paths must give the same refusal (text, code, predecessor mismatch), admission and state.
func TestAppendIdentifiedRefusesAlike(t *testing.T) {
	type chainRecs struct {
		name, ws string
		recs     [][]byte
	}
	var all []chainRecs
	for _, j := range chapscenario.Journeys() {
		b, err := chapscenario.BuildJourney(j)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, chainRecs{j.ID, j.Workspace, b.Records()})
	}
	for _, form := range []chapscenario.Form{chapscenario.Paper, chapscenario.Reference} {
		b, err := chapscenario.LongForm("wsp_long", 40, chapscenario.JourneyStart, form, nil)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, chainRecs{fmt.Sprintf("long form %d", form), "wsp_long", b.Records()})
	}
	b, _, err := chapscenario.SupportTriageReference("wsp_ref", chapscenario.JourneyStart)
	if err != nil {
		t.Fatal(err)
	}
	all = append(all, chainRecs{"support triage", "wsp_ref", b.Records()})

	codes := map[string]int{}
	failedChecks := 0
	for _, cr := range all {
		t.Run(cr.name, func(t *testing.T) {
			by, err := ledger.NewChain(cr.ws, chap.Adapter{})
			if err != nil {
				t.Fatal(err)
			}
			identified, _ := ledger.NewChain(cr.ws, chap.Adapter{})
			empty, _ := ledger.NewChain(cr.ws, chap.Adapter{})
			recs := cr.recs
			for i, rec := range recs {
				others := append([][]byte{recs[(i+1)%len(recs)], recs[max(i-1, 0)], recs[(i+len(recs)/2)%len(recs)]}, altered(t, rec)...)
				for _, other := range others {
					id, ierr := empty.State.(ledger.Identifier).Identify(ledger.Position{Chain: "wsp_other", Submitter: "someone"}, other)
					for range 2 {
						code, failed := appendBoth(t, by.Clone(), identified.Clone(), other, id, ierr)
						codes[code]++
						if failed {
							failedChecks++
						}
					}
				}
				id, ierr := identified.State.(ledger.Identifier).Identify(ledger.Position{Chain: identified.ID}, rec)
				if code, _ := appendBoth(t, by, identified, rec, id, ierr); code != "" {
					t.Fatalf("record %d refused: %s", i, code)
				}
			}
		})
	}
	// The refusals compared must be of many kinds, signatures that fail among them.
	if len(codes) < 6 || failedChecks == 0 {
		t.Fatalf("refusal codes %v, %d failed signature checks: the refusals went untested", codes, failedChecks)
	}
}

// appendBoth appends rec to by with AppendBy and to identified with AppendIdentified from id
// (read with error ierr), fails the test unless both do the same, and returns the refusal's
// code ("" when admitted) and whether the admission's signature check fails.
func appendBoth(t *testing.T, by, identified *ledger.Chain, rec []byte, id *ledger.Identity, ierr error) (string, bool) {
	t.Helper()
	a, aerr := by.AppendBy(rec, chapscenario.JourneyStart, "op:alice")
	var b *ledger.Appended
	berr := ierr
	if berr == nil {
		b, berr = identified.AppendIdentified(rec, id, chapscenario.JourneyStart, "op:alice")
	}
	if seen(aerr) != seen(berr) {
		t.Fatalf("AppendBy: %s\nAppendIdentified: %s", seen(aerr), seen(berr))
	}
	sa, _ := json.Marshal(by.State)
	sb, _ := json.Marshal(identified.State)
	if string(sa) != string(sb) || by.Head != identified.Head || by.Size != identified.Size {
		t.Fatalf("chain states differ:\n%s\n%s", sa, sb)
	}
	if aerr != nil {
		var re *ledger.RecordError
		if errors.As(aerr, &re) {
			return string(re.Code), false
		}
		return "uncoded", false
	}
	if a.Seq != b.Seq || a.Prev != b.Prev || a.Link != b.Link {
		t.Fatalf("appended %d %s %s, and %d %s %s", a.Seq, a.Prev, a.Link, b.Seq, b.Prev, b.Link)
	}
	va, vb := a.Admission.Verify, b.Admission.Verify
	if (va == nil) != (vb == nil) {
		t.Fatal("one admission has a signature check, the other none")
	}
	failed := false
	if va != nil {
		ea, eb := va(), vb()
		if seen(ea) != seen(eb) {
			t.Fatalf("signature checks: %s, and %s", seen(ea), seen(eb))
		}
		failed = ea != nil
	}
	ca, cb := *a.Admission, *b.Admission
	ca.Verify, cb.Verify = nil, nil
	if !reflect.DeepEqual(ca, cb) {
		t.Fatalf("admissions differ:\n%+v\n%+v", ca, cb)
	}
	return "", failed
}

// seen is what a caller can tell of an error: its text, its code and the predecessors a
// mismatch names.
func seen(err error) string {
	if err == nil {
		return "<nil>"
	}
	s := err.Error()
	var re *ledger.RecordError
	if errors.As(err, &re) {
		s += " code=" + string(re.Code)
	}
	var pm *ledger.PrevMismatchError
	if errors.As(err, &pm) {
		s += fmt.Sprintf(" named=%s head=%s", pm.Named, pm.Head)
	}
	return s
}

// altered returns rec changed in the ways a forger or a broken client would: the signature
// tampered with or removed, the predecessor set to genesis, wrapped as an audit entry of the
// wrong seq, and wrapped as a recorded refusal.
func altered(t *testing.T, rec []byte) [][]byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(rec, &m); err != nil {
		t.Fatal(err)
	}
	with := func(f func(map[string]any)) []byte {
		var c map[string]any
		if err := json.Unmarshal(rec, &c); err != nil {
			t.Fatal(err)
		}
		f(c)
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	var out [][]byte
	if sig, ok := m["sig"].(string); ok && len(sig) > 3 {
		tampered := []byte(sig)
		if i := len(tampered) - 3; tampered[i] == 'A' {
			tampered[i] = 'B'
		} else {
			tampered[i] = 'A'
		}
		out = append(out, with(func(c map[string]any) { c["sig"] = string(tampered) }), with(func(c map[string]any) { delete(c, "sig") }))
	}
	if _, ok := m["evidence"].(map[string]any); ok {
		out = append(out, with(func(c map[string]any) { c["evidence"] = map[string]any{"prev_hash": ledger.Genesis.String()} }))
	}
	wrap := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return append(out,
		wrap(map[string]any{"seq": 3, "arrived": "2026-05-17T09:00:00Z", "envelope": m}),
		wrap(map[string]any{"outcome": map[string]any{"status": "refused"}, "request": m}))
}
