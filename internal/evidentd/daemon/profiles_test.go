package daemon

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/evidentd/server"
	"github.com/evident-log/evident/internal/scenario/cheqscenario"
	"github.com/evident-log/evident/internal/scenario/chieflabscenario"
	"github.com/evident-log/evident/internal/scenario/copscenario"
	"github.com/evident-log/evident/internal/scenario/owpscenario"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile/chieflab"
	"github.com/evident-log/evident/ledger/profile/cop"
	"github.com/evident-log/evident/trustfile"
	"github.com/evident-log/evident/verifier"
)

// TestSeedProfilesEndToEnd: for OWP-2, COP 1.0, CHEQ and ChiefLab, a realistic multi-step
// fixture goes through evidentd (ingest → seal → export) and verifies offline; a tampered copy
// and a rule-breaking copy of the bundle are each reported broken with the right reason.
func TestSeedProfilesEndToEnd(t *testing.T) {
	const operator = "operator:chieflab-launch@acme.example"
	d, err := Open(context.Background(), Config{Data: t.TempDir(), CheckpointInterval: 100 * time.Millisecond,
		Tokens: []server.Token{{Secret: "token-evident-e2e-0123456789", Operator: operator}}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	defer func() { srv.Close(); d.Close() }()
	start := time.Date(2026, 5, 7, 3, 14, 0, 0, time.UTC)

	owpEnv := "envelope:wf-coverage-prod:env-0001"
	owpB, owpTeam, err := owpscenario.CoverageOutreach(owpEnv, start)
	if err != nil {
		t.Fatal(err)
	}
	copRecs, err := copscenario.ClaimsTopic("urn:cop:topic:claim-4711", start)
	if err != nil {
		t.Fatal(err)
	}
	late, err := owpscenario.Sign(map[string]any{"owp": "2", "event_id": "evt:late", "envelope": owpEnv, "type": "SignalReceived",
		"ts": "2026-05-07T09:00:00Z", "actor": owpTeam.RM.ID, "payload": map[string]any{"signal_id": "sig:late"}}, owpTeam.RM)
	if err != nil {
		t.Fatal(err)
	}
	cheqRecs := cheqscenario.Travel(start)
	cases := []struct {
		profile, chain string
		records        [][]byte
		closed         bool
		tamper         func(lines []bundle.EntryLine) // alters a record, links left as they were
		tamperCode     verifier.Code
		breakRule      func(t *testing.T, lines []bundle.EntryLine) []bundle.EntryLine // breaks a rule, links recomputed
		ruleCheck      verifier.CheckName
		ruleCode       verifier.Code
	}{
		{profile: "owp/2", chain: owpEnv, records: owpB.Records(), closed: true,
			tamper: func(l []bundle.EntryLine) {
				l[9].Record = bytes.Replace(l[9].Record, []byte(`"knowledge_base_version":42`), []byte(`"knowledge_base_version":41`), 1)
			},
			tamperCode: verifier.CodeEntryLink,
			breakRule: func(t *testing.T, l []bundle.EntryLine) []bundle.EntryLine {
				return append(l, bundle.EntryLine{Seq: uint64(len(l)), Arrival: l[len(l)-1].Arrival, Record: late})
			},
			ruleCheck: "chain.closure", ruleCode: ledger.CodeAfterClosure},
		{profile: "cop/1.0", chain: "urn:cop:topic:claim-4711", records: copRecs,
			tamper: func(l []bundle.EntryLine) {
				l[4].Record = bytes.Replace(l[4].Record, []byte(`"cap_eur":1800`), []byte(`"cap_eur":8100`), 1)
			},
			// copHash catches the altered event before the link does (§9.2: a mismatch is tampering).
			tamperCode: ledger.CodeDigestMismatch,
			breakRule: func(t *testing.T, l []bundle.EntryLine) []bundle.EntryLine {
				l[3].Record = bytes.Replace(l[3].Record, []byte(`"topicSeq":3`), []byte(`"topicSeq":4`), 1)
				return l
			},
			ruleCheck: "chain.entries", ruleCode: cop.CodeTopicSeq},
		{profile: "cheq/0", chain: "cheq-travel-alice", records: cheqRecs,
			tamper: func(l []bundle.EntryLine) {
				l[2].Record = bytes.Replace(l[2].Record, []byte(`"reject"`), []byte(`"accept"`), 1)
			},
			tamperCode: verifier.CodeEntryLink,
			breakRule: func(t *testing.T, l []bundle.EntryLine) []bundle.EntryLine {
				// The flight booking's record carries the seat upgrade's decision.
				var a, b map[string]json.RawMessage
				json.Unmarshal(l[1].Record, &a)
				json.Unmarshal(l[2].Record, &b)
				a["confirmation"] = b["confirmation"]
				l[1].Record, _ = json.Marshal(a)
				return l
			},
			ruleCheck: "chain.entries", ruleCode: ledger.CodeDigestMismatch},
		{profile: "chieflab/0.1", chain: "run-5d1c2e7a-launch", records: chieflabscenario.Records("run-5d1c2e7a-launch", "ws-acme", start, chieflabscenario.Launch),
			tamper: func(l []bundle.EntryLine) {
				l[4].Record = bytes.Replace(l[4].Record, []byte(`maria@acme`), []byte(`mallory@acme`), 1)
			},
			tamperCode: verifier.CodeEntryLink,
			breakRule: func(t *testing.T, l []bundle.EntryLine) []bundle.EntryLine {
				// Drop the approval: the execution that follows has none before it.
				return append(l[:4:4], l[5:]...)
			},
			ruleCheck: "chieflab.approval", ruleCode: chieflab.CodeUnapprovedExecution},
	}
	for _, tc := range cases {
		t.Run(tc.profile, func(t *testing.T) {
			body := bytes.Join(tc.records, []byte("\n"))
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chains/"+tc.chain+"/entries?profile="+tc.profile, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/jsonl")
			req.Header.Set("Authorization", "Bearer token-evident-e2e-0123456789")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			rb, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("ingest: %d %s", resp.StatusCode, rb)
			}
			if tc.closed {
				// The root Intent resolved: the envelope is closed, evidentd seals it closed by itself.
				waitClosedSealOf(t, srv.URL, tc.chain)
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chains/"+tc.chain+"/entries", bytes.NewReader(late))
				req.Header.Set("Authorization", "Bearer token-evident-e2e-0123456789")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				rb, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusConflict || !bytes.Contains(rb, []byte(`"chain_closed"`)) {
					t.Fatalf("event after closure: %d %s", resp.StatusCode, rb)
				}
			} else {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chains/"+tc.chain+"/seal", nil)
				req.Header.Set("Authorization", "Bearer token-evident-e2e-0123456789")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					t.Fatalf("seal: %d", resp.StatusCode)
				}
			}
			code, zipBytes := get(t, srv.URL+"/v1/export?chain="+tc.chain)
			if code != http.StatusOK {
				t.Fatalf("export: %d", code)
			}
			rep := verifyProfileZip(t, fetchTrust(t, srv.URL), zipBytes)
			if rep.Verdict != verifier.Verified {
				t.Fatalf("fixture verdict %s:\n%s", rep.Verdict, profileReportText(rep))
			}
			if tc.profile == "chieflab/0.1" {
				if _, err := zip.NewReader(bytes.NewReader(zipBytes), int64(len(zipBytes))); err != nil {
					t.Fatal(err)
				}
				if !profileEntriesContain(t, zipBytes, `"submitted_by":"`+operator+`"`) {
					t.Fatal("the authenticated operator is not recorded in the exported entries")
				}
			}

			tampered := rewriteBundle(t, zipBytes, func(l []bundle.EntryLine) []bundle.EntryLine { tc.tamper(l); return l }, false)
			expectProfileBroken(t, "tampered", verifyProfileZip(t, fetchTrust(t, srv.URL), tampered), "chain.entries", tc.tamperCode)
			broken := rewriteBundle(t, zipBytes, func(l []bundle.EntryLine) []bundle.EntryLine { return tc.breakRule(t, l) }, true)
			expectProfileBroken(t, "rule-breaking", verifyProfileZip(t, fetchTrust(t, srv.URL), broken), tc.ruleCheck, tc.ruleCode)
		})
	}

	// A rule-breaking ChiefLab run goes through evidentd itself (a record of a violation is
	// evidence and is accepted) and the offline verdict flags it as critical.
	for name, want := range map[string]ledger.Code{"executed_after_rejection": chieflab.CodeExecutedAfterReject, "cross_workspace_access": chieflab.CodeCrossWorkspace,
		"duplicate_execution": chieflab.CodeDuplicateExecution} {
		t.Run("chieflab violation "+name, func(t *testing.T) {
			run := "run-violation-" + strings.ReplaceAll(name, "_", "-")
			recs := chieflabscenario.Records(run, "ws-acme", start, chieflabscenario.Violations[name])
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chains/"+run+"/entries?profile=chieflab/0.1", bytes.NewReader(bytes.Join(recs, []byte("\n"))))
			req.Header.Set("Content-Type", "application/jsonl")
			req.Header.Set("Authorization", "Bearer token-evident-e2e-0123456789")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("ingest: %d", resp.StatusCode)
			}
			if _, err := d.Pipeline().Seal(context.Background(), run, false); err != nil {
				t.Fatal(err)
			}
			_, zipBytes := get(t, srv.URL+"/v1/export?chain="+run)
			check := chieflab.CheckApproval
			if name == "cross_workspace_access" {
				check = chieflab.CheckWorkspace
			} else if name == "duplicate_execution" {
				check = chieflab.CheckIdempotency
			}
			expectProfileBroken(t, name, verifyProfileZip(t, fetchTrust(t, srv.URL), zipBytes), check, want)
		})
	}
}

func waitClosedSealOf(t *testing.T, base, chain string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		_, b := get(t, base+"/v1/chains/"+chain+"/seals")
		if bytes.Contains(b, []byte(`"closed": true`)) && bytes.Contains(b, []byte(`"registered": true`)) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the closed envelope was not sealed closed")
}

// verifyProfileZip verifies a bundle with trust (fetchTrust) pinned.
func verifyProfileZip(t *testing.T, trust *trustfile.File, b []byte) *verifier.Report {
	t.Helper()
	r, err := bundle.OpenZipBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := verifier.Verify(context.Background(), r, verifier.Options{Trust: trust})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func profileReportText(rep *verifier.Report) string {
	var buf bytes.Buffer
	rep.WriteText(&buf)
	return buf.String()
}

func expectProfileBroken(t *testing.T, what string, rep *verifier.Report, check verifier.CheckName, code verifier.Code) {
	t.Helper()
	if rep.Verdict != verifier.Broken {
		t.Fatalf("%s: verdict %s, want broken\n%s", what, rep.Verdict, profileReportText(rep))
	}
	for _, c := range rep.Checks {
		if c.Name == check && c.Status == verifier.Broken && c.Code == code {
			return
		}
	}
	t.Fatalf("%s: no broken %s check with code %s\n%s", what, check, code, profileReportText(rep))
}

func profileEntriesContain(t *testing.T, zipBytes []byte, s string) bool {
	zr, _ := zip.NewReader(bytes.NewReader(zipBytes), int64(len(zipBytes)))
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "entries.jsonl") {
			rc, _ := f.Open()
			b, _ := io.ReadAll(rc)
			rc.Close()
			return bytes.Contains(b, []byte(s))
		}
	}
	return false
}

// rewrite re-exports a bundle with its entries changed by f and fresh digests; with relink,
// prev and link are recomputed from the altered records on (so only the rule is broken) and
// the manifest's state follows.
func rewriteBundle(t *testing.T, zipBytes []byte, f func([]bundle.EntryLine) []bundle.EntryLine, relink bool) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(zipBytes), int64(len(zipBytes)))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	var order []string
	for _, zf := range zr.File {
		rc, _ := zf.Open()
		b, _ := io.ReadAll(rc)
		rc.Close()
		files[zf.Name] = b
		order = append(order, zf.Name)
	}
	var m bundle.Manifest
	if err := json.Unmarshal(files[bundle.ManifestFile], &m); err != nil {
		t.Fatal(err)
	}
	ef := bundle.EntriesFile(m.Chains[0].Dir)
	var lines []bundle.EntryLine
	for _, l := range bytes.Split(bytes.TrimSpace(files[ef]), []byte("\n")) {
		var e bundle.EntryLine
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, e)
	}
	lines = f(lines)
	var buf bytes.Buffer
	head := ledger.Genesis
	tree := ledger.NewTree()
	for i := range lines {
		lines[i].Seq = uint64(i)
		if relink {
			c, err := canonical.Canonicalize(lines[i].Record, canonical.Options{})
			if err != nil {
				t.Fatal(err)
			}
			lines[i].Record = c
			lines[i].Prev = head
			lines[i].Link = ledger.NextLink(c, head)
		}
		head = lines[i].Link
		tree.Append(head)
		b, _ := json.Marshal(lines[i])
		buf.Write(append(b, '\n'))
	}
	files[ef] = buf.Bytes()
	if relink {
		m.Chains[0].Size, m.Chains[0].Head, m.Chains[0].Root = uint64(len(lines)), head, ledger.RootString(tree.Root())
	}
	var out bytes.Buffer
	w := bundle.NewWriter(&out)
	for _, name := range order {
		if name == bundle.ManifestFile {
			continue
		}
		if err := w.WriteFile(name, files[name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(m); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
