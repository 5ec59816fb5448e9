package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/evidentd/store"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/internal/scenario/cheqscenario"
	"github.com/evident-log/evident/internal/scenario/chieflabscenario"
	"github.com/evident-log/evident/internal/scenario/copscenario"
	"github.com/evident-log/evident/internal/scenario/owpscenario"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/ledger/profile/cheq"
	"github.com/evident-log/evident/ledger/profile/chieflab"
	"github.com/evident-log/evident/ledger/profile/cop"
	"github.com/evident-log/evident/ledger/profile/owp"
)

// wantDuplicates checks that got acknowledges the stored entries from seq from on, each
// marked as a duplicate with its stored link and first arrival.
func wantDuplicates(t *testing.T, st store.Store, ws string, got []Accepted, from uint64) {
	t.Helper()
	es := entries(t, st, ws)
	for i, a := range got {
		e := es[from+uint64(i)]
		if !a.Duplicate || a.Seq != e.Seq || a.Link != e.Link || a.Prev != e.Prev || a.Arrival != ledger.Timestamp(e.Arrival) {
			t.Fatalf("answer %d = %+v, want the duplicate of seq %d (link %s)", i, a, e.Seq, e.Link)
		}
	}
}

// TestRetriedSubmissions: a record already stored at its position is acknowledged again with
// its seq and link and nothing is written; only a different record at a taken position is a fork.
func TestRetriedSubmissions(t *testing.T) {
	ctx := context.Background()
	alice, bob := newMember("human:alice"), newMember("agent:bob")
	type step struct {
		batch   func(acc []Accepted) [][]byte // acc: everything accepted so far, in seq order
		dups    int                           // how many answers are duplicates (a prefix)
		refused ledger.Code                   // "" when accepted
		index   int                           // the refused record
	}
	var sent [][]byte // records in the order the chain holds them
	rec := func(b []byte) []byte { sent = append(sent, b); return b }
	cases := []struct {
		name  string
		steps []step
		size  int // the chain's size at the end
		forks int
	}{
		{"one envelope twice", []step{
			{batch: func([]Accepted) [][]byte { return [][]byte{rec(alice.join(t, "wsp")), rec(alice.msg(t, "wsp", nil))} }},
			{batch: func([]Accepted) [][]byte { return [][]byte{sent[len(sent)-1]} }, dups: 1},
			{batch: func([]Accepted) [][]byte { return [][]byte{sent[len(sent)-1]} }, dups: 1},
		}, 2, 0},
		{"envelope naming its predecessor twice", []step{
			{batch: func([]Accepted) [][]byte { return [][]byte{rec(alice.join(t, "wsp"))} }},
			{batch: func(acc []Accepted) [][]byte { return [][]byte{rec(alice.msg(t, "wsp", &acc[0].Link))} }},
			{batch: func([]Accepted) [][]byte { return [][]byte{sent[1]} }, dups: 1},
		}, 2, 0},
		{"whole batch with joins twice", []step{
			{batch: func([]Accepted) [][]byte {
				return [][]byte{rec(alice.join(t, "wsp")), rec(bob.join(t, "wsp")), rec(alice.msg(t, "wsp", nil)), rec(bob.msg(t, "wsp", nil))}
			}},
			{batch: func([]Accepted) [][]byte { return sent[:4] }, dups: 4},
		}, 4, 0},
		{"repeated prefix and a new tail", []step{
			{batch: func([]Accepted) [][]byte { return [][]byte{rec(alice.join(t, "wsp")), rec(alice.msg(t, "wsp", nil))} }},
			{batch: func([]Accepted) [][]byte {
				return [][]byte{sent[0], sent[1], rec(alice.msg(t, "wsp", nil)), rec(bob.join(t, "wsp"))}
			}, dups: 2},
			{batch: func([]Accepted) [][]byte { return [][]byte{sent[2], sent[3], rec(bob.msg(t, "wsp", nil))} }, dups: 2},
		}, 5, 0},
		{"an old record resent after others", []step{
			{batch: func([]Accepted) [][]byte { return [][]byte{rec(alice.join(t, "wsp")), rec(alice.msg(t, "wsp", nil))} }},
			{batch: func([]Accepted) [][]byte { return [][]byte{rec(alice.msg(t, "wsp", nil))} }},
			{batch: func([]Accepted) [][]byte { return [][]byte{sent[1]} }, dups: 1},
		}, 3, 0},
		{"a repeated record after a new one is refused", []step{
			{batch: func([]Accepted) [][]byte { return [][]byte{rec(alice.join(t, "wsp")), rec(alice.msg(t, "wsp", nil))} }},
			{batch: func([]Accepted) [][]byte { return [][]byte{alice.msg(t, "wsp", nil), sent[1]} }, refused: ledger.CodeIDReused, index: 1},
		}, 2, 0},
		{"a different record at a taken position is a fork", []step{
			{batch: func([]Accepted) [][]byte { return [][]byte{rec(alice.join(t, "wsp"))} }},
			{batch: func(acc []Accepted) [][]byte { return [][]byte{rec(alice.msg(t, "wsp", &acc[0].Link))} }},
			{batch: func(acc []Accepted) [][]byte { return [][]byte{sent[1], alice.msg(t, "wsp", &acc[0].Link)} }, refused: ledger.CodeFork, index: 1},
			{batch: func(acc []Accepted) [][]byte { return [][]byte{alice.msg(t, "wsp", &acc[0].Link)} }, refused: ledger.CodeFork},
		}, 2, 2},
		{"a re-join that is not the stored one", []step{
			{batch: func([]Accepted) [][]byte { return [][]byte{rec(alice.join(t, "wsp"))} }},
			{batch: func([]Accepted) [][]byte { return [][]byte{alice.join(t, "wsp")} }, refused: ledger.CodeBadKey},
		}, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sent = nil
			st := openStore(t, t.TempDir())
			p := newPipeline(t, st, nil)
			var acc []Accepted
			for i, s := range c.steps {
				batch := s.batch(acc)
				before := len(entries(t, st, "wsp"))
				got, err := p.Ingest(ctx, "wsp", "", batch)
				if s.refused != "" {
					refusal(t, err, s.index, s.refused)
					if n := len(entries(t, st, "wsp")); n != before {
						t.Fatalf("step %d: a refused batch changed the chain from %d to %d entries", i, before, n)
					}
					continue
				}
				if err != nil || len(got) != len(batch) {
					t.Fatalf("step %d: %+v, %v", i, got, err)
				}
				wantDuplicates(t, st, "wsp", got[:s.dups], got[0].Seq)
				for j, a := range got[s.dups:] {
					if a.Duplicate || a.Seq != uint64(before+j) {
						t.Fatalf("step %d: new record %d acknowledged as %+v, want seq %d", i, j, a, before+j)
					}
				}
				if n := len(entries(t, st, "wsp")); n != before+len(batch)-s.dups {
					t.Fatalf("step %d: %d entries, want %d", i, n, before+len(batch)-s.dups)
				}
				acc = append(acc, got[s.dups:]...)
			}
			es := checkLinked(t, st, "wsp", c.size)
			for i, e := range es {
				if string(e.Record) != string(canonicalCHAP(t, sent[i])) {
					t.Fatalf("entry %d is not the %d-th record sent", i, i)
				}
			}
			forks, err := st.Forks(ctx, "wsp")
			if err != nil || len(forks) != c.forks {
				t.Fatalf("%d forks kept, want %d (%v)", len(forks), c.forks, err)
			}
		})
	}
}

func canonicalCHAP(t *testing.T, b []byte) []byte {
	t.Helper()
	r, err := chap.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return r.Canonical
}

// auditEntries wraps envelopes as a Coordinator's audit.read entries {seq, arrived, envelope}
// from seq from on.
func auditEntries(t *testing.T, envs [][]byte, from int) [][]byte {
	t.Helper()
	out := make([][]byte, len(envs))
	for i, env := range envs {
		b, err := json.Marshal(map[string]any{"seq": from + i, "arrived": ledger.Timestamp(t0.Add(time.Duration(from+i) * time.Second)),
			"envelope": json.RawMessage(env)})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// TestRetriedAuditEntries: a Coordinator's audit entries state their seq; one already stored
// at its seq is a duplicate, another record at that seq is still refused.
func TestRetriedAuditEntries(t *testing.T) {
	ctx := context.Background()
	b, _, err := chapscenario.SupportTriageReference("wsp_audit", t0)
	if err != nil {
		t.Fatal(err)
	}
	recs := auditEntries(t, b.Records(), 0)
	st := openStore(t, t.TempDir())
	p := newPipeline(t, st, nil)
	if _, err := p.Ingest(ctx, "wsp_audit", "", recs[:6]); err != nil {
		t.Fatal(err)
	}
	// The whole page again, then the page again with what follows.
	got, err := p.Ingest(ctx, "wsp_audit", "", recs[:6])
	if err != nil || len(got) != 6 {
		t.Fatalf("page again: %+v, %v", got, err)
	}
	wantDuplicates(t, st, "wsp_audit", got, 0)
	got, err = p.Ingest(ctx, "wsp_audit", "", recs[3:])
	if err != nil || len(got) != len(recs)-3 {
		t.Fatalf("overlapping page: %+v, %v", got, err)
	}
	wantDuplicates(t, st, "wsp_audit", got[:3], 3)
	if got[3].Duplicate || got[3].Seq != 6 {
		t.Fatalf("first new entry: %+v", got[3])
	}
	checkLinked(t, st, "wsp_audit", len(recs))
	stored := entries(t, st, "wsp_audit")
	// The same envelope at its own seq beside other metadata (which is not hashed, so the
	// canonical bytes are the stored ones) is no retry either: the profile's rules refuse it
	// and the metadata kept stays.
	withMeta := func(i int, set map[string]any) []byte {
		var m map[string]any
		if err := json.Unmarshal(recs[i], &m); err != nil {
			t.Fatal(err)
		}
		for k, v := range set {
			m[k] = v
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, c := range []struct {
		name string
		rec  []byte
	}{
		{"entry 2's envelope claimed at seq 1", auditEntries(t, b.Records()[2:3], 1)[0]},
		{"entry 3 naming a predecessor", withMeta(3, map[string]any{"prev_hash": stored[2].Link.String()})},
		{"entry 3 arrived at another time", withMeta(3, map[string]any{"arrived": ledger.Timestamp(t0.Add(time.Hour))})},
	} {
		_, err = p.Ingest(ctx, "wsp_audit", "", [][]byte{c.rec})
		if err == nil {
			t.Fatalf("%s: acknowledged", c.name)
		}
		refusal(t, err, 0, ledger.CodeWrongChain)
		checkLinked(t, st, "wsp_audit", len(recs))
		for i, e := range entries(t, st, "wsp_audit") {
			if string(e.Meta) != string(stored[i].Meta) {
				t.Fatalf("%s: entry %d metadata %s, was %s", c.name, i, e.Meta, stored[i].Meta)
			}
		}
	}
}

// TestRetriedSubmissionsEveryProfile: every profile recognises a resent batch (Identify), and
// a batch whose first half is stored continues after it.
func TestRetriedSubmissionsEveryProfile(t *testing.T) {
	ctx := context.Background()
	owpEnv := "envelope:wf-coverage-prod:env-0001"
	owpB, _, err := owpscenario.CoverageOutreach(owpEnv, t0)
	if err != nil {
		t.Fatal(err)
	}
	copRecs, err := copscenario.ClaimsTopic("urn:cop:topic:claim-4711", t0)
	if err != nil {
		t.Fatal(err)
	}
	chapB, err := chapscenario.Long("wsp_long", 40, t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		profile ledger.Profile
		chain   string
		records [][]byte
	}{
		{chap.Adapter{}, "wsp_long", chapB.Records()},
		{owp.Adapter{}, owpEnv, owpB.Records()},
		{cop.Adapter{}, "urn:cop:topic:claim-4711", copRecs},
		{cheq.Adapter{}, "cheq-travel-alice", cheqscenario.Travel(t0)},
		{chieflab.Adapter{}, "run-5d1c2e7a-launch", chieflabscenario.Records("run-5d1c2e7a-launch", "ws-acme", t0, chieflabscenario.Launch)},
	}
	for _, c := range cases {
		t.Run(c.profile.Name(), func(t *testing.T) {
			st := openStore(t, t.TempDir())
			p, err := New(Options{Store: st, Profiles: []ledger.Profile{c.profile}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Now: func() time.Time { return t0 }})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := any(mustState(t, c.profile)).(ledger.Identifier); !ok {
				t.Fatalf("%s state does not implement ledger.Identifier", c.profile.Name())
			}
			half := len(c.records) / 2
			if _, err := p.Ingest(ctx, c.chain, "", c.records[:half]); err != nil {
				t.Fatal(err)
			}
			got, err := p.Ingest(ctx, c.chain, "", c.records[:half])
			if err != nil || len(got) != half {
				t.Fatalf("resent: %+v, %v", got, err)
			}
			wantDuplicates(t, st, c.chain, got, 0)
			got, err = p.Ingest(ctx, c.chain, "", c.records)
			if err != nil || len(got) != len(c.records) {
				t.Fatalf("resent with the rest: %v", err)
			}
			wantDuplicates(t, st, c.chain, got[:half], 0)
			for i, a := range got[half:] {
				if a.Duplicate || a.Seq != uint64(half+i) {
					t.Fatalf("new record %d: %+v", half+i, a)
				}
			}
			checkLinked(t, st, c.chain, len(c.records))
			got, err = p.Ingest(ctx, c.chain, "", c.records)
			if err != nil || len(got) != len(c.records) {
				t.Fatalf("everything again: %v", err)
			}
			wantDuplicates(t, st, c.chain, got, 0)
			checkLinked(t, st, c.chain, len(c.records))
		})
	}
}

func mustState(t *testing.T, p ledger.Profile) ledger.ProfileState {
	t.Helper()
	s, err := p.NewState(nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRetryRacingOriginal: the same batch sent by many goroutines at once is stored once.
func TestRetryRacingOriginal(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	p := newPipeline(t, st, nil)
	alice := newMember("human:alice")
	batch := [][]byte{alice.join(t, "wsp")}
	for range 9 {
		batch = append(batch, alice.msg(t, "wsp", nil))
	}
	const n = 8
	errs := make(chan error, n)
	created := make(chan bool, n)
	for range n {
		go func() {
			acc, err := p.Ingest(ctx, "wsp", "", batch)
			if err == nil && len(acc) != len(batch) {
				err = fmt.Errorf("%d answers for %d records", len(acc), len(batch))
			}
			created <- err == nil && !acc[0].Duplicate
			errs <- err
		}()
	}
	fresh := 0
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		if <-created {
			fresh++
		}
	}
	if fresh != 1 {
		t.Fatalf("%d of %d concurrent submissions stored the batch, want 1", fresh, n)
	}
	checkLinked(t, st, "wsp", len(batch))
	if forks, err := st.Forks(ctx, "wsp"); err != nil || len(forks) != 0 {
		t.Fatalf("forks %+v, %v", forks, err)
	}
	if _, err := p.Head(ctx, "wsp"); errors.Is(err, ErrNoChain) {
		t.Fatal(err)
	}
}

// findLinkCounter counts the FindLink look-ups of a store.
type findLinkCounter struct {
	store.Store
	n int
}

func (s *findLinkCounter) FindLink(ctx context.Context, chain string, l ledger.Link) (uint64, bool, error) {
	s.n++
	return s.Store.FindLink(ctx, chain, l)
}

// TestOwnHeadNextEntry: after an unchained prefix a Coordinator's chain has its own head; an
// envelope naming it as evidence.prev_hash is the chain's next entry, placed without looking
// the link up, and acknowledged as a duplicate when sent again.
func TestOwnHeadNextEntry(t *testing.T) {
	ctx := context.Background()
	alice := newMember("human:alice")
	st := &findLinkCounter{Store: openStore(t, t.TempDir())}
	p := newPipeline(t, st, nil)
	entry := func(seq int, env []byte, prev *ledger.Link) []byte {
		m := map[string]any{"seq": seq, "arrived": ledger.Timestamp(t0.Add(time.Duration(seq) * time.Second)), "envelope": json.RawMessage(env)}
		if prev != nil {
			m["prev_hash"] = prev.String()
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	genesis := ledger.Genesis
	first := [][]byte{entry(0, alice.join(t, "wsp"), nil), entry(1, alice.msg(t, "wsp", nil), nil), entry(2, alice.msg(t, "wsp", nil), &genesis)}
	if _, err := p.Ingest(ctx, "wsp", "", first); err != nil {
		t.Fatal(err)
	}
	own := ledger.NextLink(canonicalCHAP(t, first[2]), ledger.Genesis)
	st.n = 0
	next := alice.msg(t, "wsp", &own)
	got, err := p.Ingest(ctx, "wsp", "", [][]byte{next})
	if err != nil || len(got) != 1 || got[0].Duplicate || got[0].Seq != 3 {
		t.Fatalf("envelope naming the Coordinator's head: %+v, %v", got, err)
	}
	if st.n != 0 {
		t.Fatalf("%d link look-ups for the Coordinator's head", st.n)
	}
	got, err = p.Ingest(ctx, "wsp", "", [][]byte{next})
	if err != nil || len(got) != 1 || !got[0].Duplicate || got[0].Seq != 3 {
		t.Fatalf("the same envelope again: %+v, %v", got, err)
	}
}
