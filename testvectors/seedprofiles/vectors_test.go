// Package seedprofiles_test publishes and checks the chain vectors of the OWP-2, COP 1.0, CHEQ
// and ChiefLab bindings (testvectors/<profile>/chain.json): `go test -run TestVectors -update`
// regenerates them from the scenario builders; without -update the stored vectors are replayed
// through the registered profile and every link, the head, the Merkle root and every record
// signature must come out as published.
package seedprofiles_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/cheqscenario"
	"github.com/evident-log/evident/internal/scenario/chieflabscenario"
	"github.com/evident-log/evident/internal/scenario/copscenario"
	"github.com/evident-log/evident/internal/scenario/owpscenario"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile"
)

var update = flag.Bool("update", false, "regenerate the published vectors")

// Vector is one published chain.
type Vector struct {
	Profile string  `json:"profile"`
	Chain   string  `json:"chain"`
	Entries []Entry `json:"entries"`
	Head    string  `json:"head"`
	Root    string  `json:"root"`
	Closed  bool    `json:"closed"`
}

// Entry is one record with the canonical bytes and link it must yield.
type Entry struct {
	Record    json.RawMessage `json:"record"`
	Canonical string          `json:"canonical"`
	Link      string          `json:"link"`
}

func build(t *testing.T) map[string]Vector {
	start := time.Date(2026, 5, 7, 3, 14, 0, 0, time.UTC)
	owpB, _, err := owpscenario.CoverageOutreach("envelope:wf-coverage-prod:env-0001", start)
	if err != nil {
		t.Fatal(err)
	}
	copRecs, err := copscenario.ClaimsTopic("urn:cop:topic:claim-4711", start)
	if err != nil {
		t.Fatal(err)
	}
	sets := map[string]struct {
		profile, chain string
		recs           [][]byte
	}{
		"owp":      {"owp/2", "envelope:wf-coverage-prod:env-0001", owpB.Records()},
		"cop":      {"cop/1.0", "urn:cop:topic:claim-4711", copRecs},
		"cheq":     {"cheq/0", "cheq-travel-alice", cheqscenario.Travel(start)},
		"chieflab": {"chieflab/0.1", "run-5d1c2e7a-launch", chieflabscenario.Records("run-5d1c2e7a-launch", "ws-acme", start, chieflabscenario.Launch)},
	}
	out := map[string]Vector{}
	for dir, s := range sets {
		v, err := replay(s.profile, s.chain, s.recs, "operator:chieflab-launch@acme.example")
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		out[dir] = *v
	}
	return out
}

func replay(profileName, chain string, recs [][]byte, operator string) (*Vector, error) {
	p, _ := profile.Lookup(profileName)
	c, err := ledger.NewChain(chain, p)
	if err != nil {
		return nil, err
	}
	v := &Vector{Profile: profileName, Chain: chain}
	for _, r := range recs {
		a, err := c.AppendBy(r, time.Time{}, operator)
		if err != nil {
			return nil, err
		}
		if a.Admission.Verify != nil {
			if err := a.Admission.Verify(); err != nil {
				return nil, err
			}
		}
		v.Entries = append(v.Entries, Entry{Record: json.RawMessage(r), Canonical: string(a.Admission.Canonical), Link: a.Link.String()})
	}
	v.Head, v.Root, v.Closed = c.Head.String(), ledger.RootString(c.Root()), c.Closed
	return v, nil
}

func TestVectors(t *testing.T) {
	if *update {
		for dir, v := range build(t) {
			b, _ := json.MarshalIndent(v, "", "  ")
			os.MkdirAll(filepath.Join("..", dir), 0o755)
			if err := os.WriteFile(filepath.Join("..", dir, "chain.json"), append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, dir := range []string{"owp", "cop", "cheq", "chieflab"} {
		t.Run(dir, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", dir, "chain.json"))
			if err != nil {
				t.Fatal(err)
			}
			var want Vector
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			var recs [][]byte
			for _, e := range want.Entries {
				recs = append(recs, []byte(e.Canonical))
			}
			// The stored (canonical) form replays with no submitter: the operator is in the record.
			got, err := replay(want.Profile, want.Chain, recs, "")
			if err != nil {
				t.Fatal(err)
			}
			for i := range want.Entries {
				if got.Entries[i].Link != want.Entries[i].Link || got.Entries[i].Canonical != want.Entries[i].Canonical {
					t.Fatalf("entry %d: link %s, want %s", i, got.Entries[i].Link, want.Entries[i].Link)
				}
			}
			if got.Head != want.Head || got.Root != want.Root || got.Closed != want.Closed {
				t.Fatalf("head, root, closed %s %s %v, want %s %s %v", got.Head, got.Root, got.Closed, want.Head, want.Root, want.Closed)
			}
			if want.Profile == "chieflab/0.1" && !strings.Contains(want.Entries[0].Canonical, `"submitted_by":"operator:`) {
				t.Fatal("the ChiefLab vector must carry the submitting operator")
			}
		})
	}
}
