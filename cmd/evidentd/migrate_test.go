package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/evidentd/daemon"
	"github.com/evident-log/evident/internal/evidentd/store/embedded"
	"github.com/evident-log/evident/verifier"
)

// fixtureDir is a data directory written by the release before the embedded store moved
// to Pebble: by its real evidentd and evident binaries, killed with SIGKILL while its
// journal held the last batch (store/legacy/testdata/README.md says how it was made).
const fixtureDir = "../../internal/evidentd/store/legacy/testdata"

// TestMigrateFromRelease starts this evidentd on a copy of the earlier release's data
// directory. It migrates the old store on its first start: every chain, at the size and
// head the old binary acknowledged (the journaled batch included), its seals with their
// log positions, its evidence head; records resent are answered as already logged; the
// chains carry on and export a bundle that verifies; the bundle the old binary exported
// verifies with this evident; and the old files are kept aside, never deleted.
func TestMigrateFromRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs real evidentd and evident binaries")
	}
	var want struct {
		Seals   map[string]sealList `json:"seals"`
		Summary struct {
			Chains map[string]struct {
				Size uint64 `json:"size"`
				Head string `json:"head"`
			} `json:"chains"`
			EvidenceHeads []struct {
				Chain      string `json:"chain"`
				Head       string `json:"head"`
				AuditCount uint64 `json:"audit_count"`
			} `json:"evidence_heads"`
		} `json:"summary"`
	}
	raw, err := os.ReadFile(filepath.Join(fixtureDir, "v8", "EXPECTED.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(want.Summary.Chains) != 3 {
		t.Fatalf("the fixture names %d chains", len(want.Summary.Chains))
	}
	dir := t.TempDir()
	bin, cli := buildBinary(t, dir, ".", "evidentd"), buildBinary(t, dir, "../evident", "evident")
	data := filepath.Join(dir, "data")
	if err := os.CopyFS(data, os.DirFS(filepath.Join(fixtureDir, "v8"))); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(data, "EXPECTED.json"))
	addr := freeAddr(t)
	base := "http://" + addr
	cmd := startEvidentd(t, bin, data, addr)
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
	defer func() { stop() }()
	logged, _ := os.ReadFile(data + ".log")
	if !strings.Contains(string(logged), "migrated the ledger store") {
		t.Fatalf("no migration logged:\n%s", logged)
	}
	// The old files are kept aside, the new store in place.
	for _, f := range []string{"ledger.db", "ledger.db.records", "journal"} {
		if _, err := os.Stat(filepath.Join(data, daemon.LegacyDir, f)); err != nil {
			t.Errorf("old file %s not kept: %v", f, err)
		}
		if _, err := os.Stat(filepath.Join(data, f)); err == nil {
			t.Errorf("old file %s still in the data directory", f)
		}
	}
	if _, err := os.Stat(filepath.Join(data, embedded.Dir)); err != nil {
		t.Fatal(err)
	}
	// check compares the chains and their seals with what the old binary acknowledged; seals
	// made since come after those.
	check := func(when string) {
		t.Helper()
		for id, c := range want.Summary.Chains {
			var got api.ChainHead
			getJSON(t, base+"/v1/chains/"+id, &got)
			if got.Size != c.Size || got.Head.String() != c.Head {
				t.Errorf("%s: chain %s at %d %s, the old binary acknowledged %d %s", when, id, got.Size, got.Head, c.Size, c.Head)
			}
			var seals sealList
			getJSON(t, base+"/v1/chains/"+id+"/seals", &seals)
			if len(seals.Seals) < len(want.Seals[id].Seals) || fmt.Sprint(seals.Seals[:len(want.Seals[id].Seals)]) != fmt.Sprint(want.Seals[id].Seals) {
				t.Errorf("%s: seals of %s: %v, the old binary had %v", when, id, seals.Seals, want.Seals[id].Seals)
			}
		}
	}
	check("after the migration")
	// Every record, resent, is answered as already logged, and nothing is added.
	for id, c := range want.Summary.Chains {
		var page struct {
			Entries []struct {
				Record json.RawMessage `json:"record"`
			} `json:"entries"`
		}
		getJSON(t, fmt.Sprintf("%s/v1/chains/%s/entries?limit=1000", base, id), &page)
		if uint64(len(page.Entries)) != c.Size {
			t.Fatalf("%s: %d entries, size %d", id, len(page.Entries), c.Size)
		}
		var recs [][]byte
		for _, e := range page.Entries {
			recs = append(recs, e.Record)
		}
		resp, err := testClient.Post(base+"/v1/chains/"+id+"/entries", "application/jsonl", bytes.NewReader(bytes.Join(recs, []byte("\n"))))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var acks struct {
			Accepted []struct {
				Duplicate bool `json:"duplicate"`
			} `json:"accepted"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &acks) != nil || len(acks.Accepted) != len(recs) {
			t.Fatalf("%s: resending %d records: %s %s", id, len(recs), resp.Status, body)
		}
		for i, a := range acks.Accepted {
			if !a.Duplicate {
				t.Errorf("%s: resent record %d not answered as already logged", id, i)
			}
		}
	}
	check("after resending")
	// A chain carries on: sealed again at its size, and exported with the evidence head its
	// sender reported to the old binary, it verifies.
	if len(want.Summary.EvidenceHeads) != 1 {
		t.Fatalf("the fixture holds %d evidence heads", len(want.Summary.EvidenceHeads))
	}
	verifyExport(t, base, want.Summary.EvidenceHeads[0].Chain, true)
	// A chain carries on: sealed again at its size, and exported, it verifies.
	for _, id := range []string{"wsp_chapref_deep", "wsp_support_triage"} { // unsealed, or not to its end
		resp, err := testClient.Post(base+"/v1/chains/"+id+"/seal", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("seal of %s after the migration: %s", id, resp.Status)
		}
	}
	verifyExport(t, base, "wsp_support_triage", false)
	verifyExport(t, base, "wsp_chapref_deep", false)
	// The SCITT registrations the old binary made (its policy and one statement) are
	// exported with their log positions and verify.
	resp, err := testClient.Get(base + "/v1/export?registrations=all")
	if err != nil {
		t.Fatal(err)
	}
	zipBytes, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export of registrations: %s %s", resp.Status, zipBytes)
	}
	zr, err := zip.NewReader(bytes.NewReader(zipBytes), int64(len(zipBytes)))
	if err != nil {
		t.Fatal(err)
	}
	var regs struct {
		Policies []struct {
			LogIndex uint64 `json:"log_index"`
		} `json:"policies"`
		Statements []struct {
			LogIndex uint64 `json:"log_index"`
		} `json:"statements"`
	}
	f, err := zr.Open("scitt/registrations.json")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(f).Decode(&regs)
	f.Close()
	if err != nil || len(regs.Policies) != 1 || len(regs.Statements) != 1 {
		t.Fatalf("registrations exported after the migration: %+v %v, want the policy and the statement", regs, err)
	}
	r, err := bundle.OpenZipBytes(zipBytes)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := verifier.Verify(t.Context(), r, verifier.Options{Trust: fetchTrust(t, base)}); err != nil || rep.Verdict != verifier.Verified {
		var buf bytes.Buffer
		rep.WriteText(&buf)
		t.Fatalf("the migrated registrations: %v\n%s", err, buf.String())
	}
	// The log the old binary wrote, and the seals since, pass Tessera's fsck.
	if err := fsckAt(t.Context(), addr, fetchTrust(t, base), 1); err != nil {
		t.Fatalf("fsck of the log after the migration: %v", err)
	}
	// A second start finds nothing to migrate and the same chains.
	stop()
	cmd = startEvidentd(t, bin, data, addr)
	check("after a restart")
	// The bundle the old release exported verifies with this evident, offline, under the
	// keys the migrated service publishes: the same keys as before the upgrade.
	trust := filepath.Join(dir, "operator.trust.json")
	if out, err := exec.Command(cli, "trust", "fetch", base, "-o", trust).CombinedOutput(); err != nil {
		t.Fatalf("evident trust fetch: %v\n%s", err, out)
	}
	out, err := exec.Command(cli, "verify", "--trust", trust, filepath.Join(fixtureDir, "bundle-old.zip")).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "VERDICT: VERIFIED") {
		t.Fatalf("evident verify of the old release's bundle: %v\n%s", err, out)
	}
}

// sealList is what the tests compare of a chain's seals (GET …/seals, and the fixture's
// record of it).
type sealList struct {
	Seals []struct {
		N          uint64 `json:"n"`
		Size       uint64 `json:"size"`
		Registered bool   `json:"registered"`
		LogIndex   uint64 `json:"log_index"`
	} `json:"seals"`
}

// verifyExport exports chain from the evidentd at base and verifies the bundle; with head,
// the evidence head its sender reported must be there and match the replayed chain.
func verifyExport(t *testing.T, base, chain string, head bool) {
	t.Helper()
	resp, err := testClient.Get(base + "/v1/export?chain=" + chain)
	if err != nil {
		t.Fatal(err)
	}
	zipBytes, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r, err := bundle.OpenZipBytes(zipBytes)
	if err != nil {
		t.Fatalf("export of %s: %v", chain, err)
	}
	rep, err := verifier.Verify(t.Context(), r, verifier.Options{Trust: fetchTrust(t, base)})
	if err != nil || rep.Verdict != verifier.Verified {
		var buf bytes.Buffer
		rep.WriteText(&buf)
		t.Fatalf("the migrated chain %s's bundle: %v\n%s", chain, err, buf.String())
	}
	if !head {
		return
	}
	for _, c := range rep.Checks {
		if c.Name == verifier.CheckChainEvidenceHead && c.Chain == chain {
			if c.Status != verifier.Verified {
				t.Fatalf("%s: %s is %s", chain, c.Name, c.Status)
			}
			return
		}
	}
	t.Fatalf("%s: no %s check: the evidence head was not migrated", chain, verifier.CheckChainEvidenceHead)
}

// getJSON decodes the JSON answer to a GET of url into v, failing on anything but 200.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := testClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", url, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
