package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/client"
	"github.com/evident-log/evident/entryreceipt"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/verifier"
)

// refDir holds the chains the CHAP reference coordinators wrote (testvectors/chap-reference).
const refDir = "../../../testvectors/chap-reference"

// refJourney is one journey as a reference coordinator recorded it.
type refJourney struct {
	impl, name string
	audit      []byte            // the audit.read result {entries, next_seq}
	entries    []json.RawMessage // its entries
	envelopes  []json.RawMessage // the entries' envelopes
	describe   []byte            // the workspace.describe result
	head       *ledger.Link      // describe's evidence_head (nil: chaining never on)
	count      uint64            // describe's audit_count
	workspace  string
	unchained  int // entries without prev_hash at the start
}

func loadRef(t *testing.T, impl, name string) *refJourney {
	t.Helper()
	j := &refJourney{impl: impl, name: name}
	var err error
	if j.audit, err = os.ReadFile(filepath.Join(refDir, impl, name+".audit.json")); err != nil {
		t.Fatal(err)
	}
	if j.describe, err = os.ReadFile(filepath.Join(refDir, impl, name+".describe.json")); err != nil {
		t.Fatal(err)
	}
	var page struct {
		Entries []json.RawMessage `json:"entries"`
	}
	if err := json.Unmarshal(j.audit, &page); err != nil {
		t.Fatal(err)
	}
	j.entries = page.Entries
	for _, e := range j.entries {
		var ent struct {
			Envelope json.RawMessage `json:"envelope"`
			PrevHash *string         `json:"prev_hash"`
		}
		if err := json.Unmarshal(e, &ent); err != nil || ent.Envelope == nil {
			t.Fatalf("%s/%s: entry %.80s: %v", impl, name, e, err)
		}
		if ent.PrevHash == nil && len(j.envelopes) == j.unchained {
			j.unchained++
		}
		j.envelopes = append(j.envelopes, ent.Envelope)
	}
	var d struct {
		ID           string       `json:"id"`
		EvidenceHead *ledger.Link `json:"evidence_head"`
		AuditCount   uint64       `json:"audit_count"`
	}
	if err := json.Unmarshal(j.describe, &d); err != nil {
		t.Fatal(err)
	}
	j.workspace, j.head, j.count = d.ID, d.EvidenceHead, d.AuditCount
	if j.count != uint64(len(j.entries)) || j.head == nil {
		t.Fatalf("%s/%s: describe says %d entries (head %v), audit.read gave %d", impl, name, j.count, j.head, len(j.entries))
	}
	return j
}

var refJourneys = []string{"small", "unchained-prefix", "full"}

// TestReferenceCoordinatorChains: what the CHAP reference coordinators (TypeScript and Python
// 0.2.10) recorded goes through evidentd over HTTP in each form a Coordinator hands it over —
// its audit.read result, its audit entries one request each, and the bare envelopes one
// request each as a sidecar sees them live — and comes out as the Coordinator's own chain:
// the same head as its evidence_head, sealed, exported and verified offline.
func TestReferenceCoordinatorChains(t *testing.T) {
	for _, impl := range []string{"ts", "py"} {
		for _, name := range refJourneys {
			j := loadRef(t, impl, name)
			for _, form := range []string{"audit.read", "entries", "envelopes"} {
				t.Run(impl+"/"+name+"/"+form, func(t *testing.T) {
					// The records name their workspace, so each run gets an evidentd of its own.
					ctx := t.Context()
					srv, c := refDaemon(t)
					chain := j.workspace
					var last *api.IngestResponse
					switch form {
					case "audit.read":
						// The audit.read result as the Coordinator answered it, in one request.
						code, body := post(t, srv.URL+"/v1/chains/"+chain+"/entries", "application/json", j.audit)
						if code != http.StatusCreated {
							t.Fatalf("audit.read result: %d %s", code, body)
						}
						last = new(api.IngestResponse)
						if err := json.Unmarshal(body, last); err != nil {
							t.Fatal(err)
						}
					default:
						recs := j.entries
						if form == "envelopes" {
							recs = j.envelopes
						}
						for i, r := range recs {
							var err error
							if last, err = c.Submit(ctx, chain, [][]byte{r}); err != nil {
								t.Fatalf("%s %d: %v", form, i, err)
							}
						}
					}
					if last.Size != j.count {
						t.Fatalf("size %d, want %d", last.Size, j.count)
					}
					// The Coordinator's chain and Evident's agree where the Coordinator chained
					// from genesis; after an unchained prefix its head is its own.
					fromGenesis := j.unchained == 0
					if fromGenesis && last.Head != *j.head {
						t.Fatalf("head %s, the Coordinator's evidence_head %s", last.Head, *j.head)
					}
					rep, err := c.ReportEvidenceHead(ctx, chain, *j.head, j.count)
					bareAfterPrefix := form == "envelopes" && !fromGenesis
					switch {
					case bareAfterPrefix:
						// Bare envelopes carry nothing of the Coordinator's restart from the zero hash:
						// its head is not the one Evident computed, and evidentd says so.
						if !client.IsCode(err, api.CodeEvidenceHeadMismatch) {
							t.Fatalf("evidence head over bare envelopes after an unchained prefix: %+v %v", rep, err)
						}
					case err != nil:
						t.Fatal(err)
					case rep.Status != "matches" || rep.AuditCount != j.count:
						t.Fatalf("evidence head: %+v", rep)
					}
					r, err := bundle.OpenZipBytes(sealAndExport(t, c, chain))
					if err != nil {
						t.Fatal(err)
					}
					ref := r.Manifest.Chains[0]
					if !bareAfterPrefix && (ref.EvidenceHead == nil || *ref.EvidenceHead != *j.head || ref.AuditCount == nil || *ref.AuditCount != j.count) {
						t.Fatalf("manifest evidence head %v count %v", ref.EvidenceHead, ref.AuditCount)
					}
					vr, err := verifier.Verify(ctx, r, verifier.Options{Trust: fetchTrust(t, srv.URL)})
					if err != nil {
						t.Fatal(err)
					}
					want := verifier.Verified
					if j.unchained > 0 && form != "envelopes" {
						// The entries recorded before the Coordinator switched chaining on are a
						// real unchained prefix: not evaluated, and said so.
						want = verifier.NotEvaluated
						ck := checkNamed(vr, verifier.CheckChainLinkage)
						if ck == nil || ck.Code != verifier.CodeUnchainedPrefix || vr.Chains[0].Linkage == nil ||
							vr.Chains[0].Linkage.EntriesUnchecked != uint64(j.unchained) {
							t.Fatalf("linkage check %+v, linkage %+v", ck, vr.Chains[0].Linkage)
						}
					}
					if vr.Verdict != want {
						t.Fatalf("verdict %s, want %s:\n%s", vr.Verdict, want, failing(vr))
					}
					if !bareAfterPrefix {
						if ck := checkNamed(vr, verifier.CheckChainEvidenceHead); ck == nil || ck.Status != verifier.Verified {
							t.Fatalf("evidence head check %+v", ck)
						}
					}
					if ck := checkNamed(vr, verifier.CheckChainSignatures); ck == nil || ck.Status != verifier.Verified {
						t.Fatalf("signatures check %+v", ck)
					}
				})
			}
		}
	}
}

// refDaemon starts an evidentd of its own and a client of it.
func refDaemon(t *testing.T) (*httptest.Server, *client.Client) {
	t.Helper()
	_, srv := start(t, t.TempDir())
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return srv, c
}

// sealAndExport seals chain and returns its exported bundle.
func sealAndExport(t *testing.T, c *client.Client, chain string) []byte {
	t.Helper()
	if _, err := c.Seal(t.Context(), chain, false); err != nil {
		t.Fatal(err)
	}
	var zip bytes.Buffer
	if _, err := c.Export(t.Context(), client.ExportQuery{Chains: []string{chain}}, &zip); err != nil {
		t.Fatal(err)
	}
	return zip.Bytes()
}

func failing(r *verifier.Report) string {
	var b strings.Builder
	for _, ck := range r.Checks {
		if ck.Status != verifier.Verified {
			fmt.Fprintf(&b, "  %s %s %s %s: %s\n", ck.Name, ck.Status, ck.Code, ck.Where, ck.Detail)
		}
	}
	return b.String()
}

// TestReferenceCoordinatorTampered: every altered copy of a reference Coordinator's chain is
// refused at ingest, or reported broken offline, with nothing of a refused batch kept.
func TestReferenceCoordinatorTampered(t *testing.T) {
	j := loadRef(t, "ts", "full")
	const k = 9 // an entry past the joins, signed by its sender
	entry := func(i int) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(j.entries[i], &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	marshal := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// relink recomputes seq and prev_hash of entries from..: a forger re-chaining what it changed.
	relink := func(es [][]byte, from int) [][]byte {
		prev := ledger.Genesis
		for i := range es {
			var m map[string]any
			if err := json.Unmarshal(es[i], &m); err != nil {
				t.Fatal(err)
			}
			if i >= from {
				m["seq"], m["prev_hash"] = i, prev.String()
				es[i] = marshal(m)
			}
			c, err := canonical.Canonicalize(marshal(m["envelope"]), canonical.Options{})
			if err != nil {
				t.Fatal(err)
			}
			prev = ledger.NextLink(c, prev)
		}
		return es
	}
	cases := []struct {
		name  string
		batch func() [][]byte
		code  api.ProblemCode
		index int
	}{
		{"a signed field changed", func() [][]byte {
			es := j.records()
			m := entry(k)
			m["envelope"].(map[string]any)["params"].(map[string]any)["ts"] = "2099-01-01T00:00:00.000Z"
			es[k] = marshal(m)
			return es
		}, api.CodeBadSignature, k},
		{"a signature changed", func() [][]byte {
			es := j.records()
			m := entry(k)
			env := m["envelope"].(map[string]any)
			sig := []byte(env["sig"].(string))
			i := len(sig) - 12 // inside the base64 of the 64 signature bytes
			sig[i] = map[bool]byte{true: 'B', false: 'A'}[sig[i] == 'A']
			env["sig"] = string(sig)
			es[k] = marshal(m)
			return es
		}, api.CodeBadSignature, k},
		{"an entry dropped", func() [][]byte {
			es := j.records()
			return append(es[:k], es[k+1:]...)
		}, api.CodeChainMismatch, k},
		{"an entry's prev_hash changed", func() [][]byte {
			es := j.records()
			m := entry(k)
			m["prev_hash"] = ledger.NextLink([]byte("elsewhere"), ledger.Genesis).String()
			es[k] = marshal(m)
			return es
		}, api.CodeChainMismatch, k},
		{"seq renumbered", func() [][]byte {
			es := j.records()
			m := entry(k)
			m["seq"] = k + 1
			es[k] = marshal(m)
			return es
		}, api.CodeChainMismatch, k},
		{"prev_hash dropped after chaining began", func() [][]byte {
			es := j.records()
			m := entry(k)
			delete(m, "prev_hash")
			es[k] = marshal(m)
			return es
		}, api.CodeChainMismatch, k},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, c := refDaemon(t)
			_, err := c.Submit(t.Context(), j.workspace, tc.batch())
			var ce *client.Error
			if !errors.As(err, &ce) || ce.Code != tc.code || ce.Index == nil || *ce.Index != tc.index {
				t.Fatalf("got %v, want %s at record %d", err, tc.code, tc.index)
			}
			if _, err := c.Head(t.Context(), j.workspace); !client.IsCode(err, api.CodeNoSuchChain) {
				t.Fatalf("a refused batch left a chain behind: %v", err)
			}
		})
	}

	// Two entries swapped and the chain re-linked around them: every signature and every
	// prev_hash holds, but the Coordinator's evidence_head does not, and evidentd refuses it.
	t.Run("re-linked", func(t *testing.T) {
		_, c := refDaemon(t)
		es := j.records()
		es[k], es[k+1] = es[k+1], es[k]
		es = relink(es, k)
		if _, err := c.Submit(t.Context(), j.workspace, es); err != nil {
			t.Fatalf("a consistently re-linked chain is well formed: %v", err)
		}
		if _, err := c.ReportEvidenceHead(t.Context(), j.workspace, *j.head, j.count); !client.IsCode(err, api.CodeEvidenceHeadMismatch) {
			t.Fatalf("the Coordinator's evidence_head against a re-linked chain: %v", err)
		}
	})

	// Offline: an honest bundle, then altered copies of it.
	srv, c := refDaemon(t)
	if _, err := c.Submit(t.Context(), j.workspace, j.records()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReportEvidenceHead(t.Context(), j.workspace, *j.head, j.count); err != nil {
		t.Fatal(err)
	}
	zipBytes := sealAndExport(t, c, j.workspace)
	if rep := verifyProfileZip(t, fetchTrust(t, srv.URL), zipBytes); rep.Verdict != verifier.Verified {
		t.Fatalf("honest bundle: %s\n%s", rep.Verdict, profileReportText(rep))
	}
	offline := []struct {
		name   string
		f      func([]bundle.EntryLine) []bundle.EntryLine
		relink bool
		check  verifier.CheckName
		code   verifier.Code
	}{
		{"a record altered", func(l []bundle.EntryLine) []bundle.EntryLine {
			l[k].Record = bytes.Replace(l[k].Record, []byte(`"ts":"2023-`), []byte(`"ts":"2024-`), 1)
			return l
		}, false, verifier.CheckChainEntries, verifier.CodeEntryLink},
		{"an entry's kept prev_hash altered", func(l []bundle.EntryLine) []bundle.EntryLine {
			var m map[string]any
			if err := json.Unmarshal(l[k].Meta, &m); err != nil {
				t.Fatal(err)
			}
			m["prev_hash"] = ledger.NextLink([]byte("elsewhere"), ledger.Genesis).String()
			l[k].Meta = marshal(m)
			return l
		}, false, verifier.CheckChainEntries, verifier.Code(ledger.CodeWrongChain)},
		{"two entries swapped, the chain and the Coordinator's prev_hash re-linked", func(l []bundle.EntryLine) []bundle.EntryLine {
			l[k], l[k+1] = l[k+1], l[k]
			prev := ledger.Genesis
			for i := range l {
				var m map[string]any
				if err := json.Unmarshal(l[i].Meta, &m); err != nil {
					t.Fatal(err)
				}
				m["seq"], m["prev_hash"] = i, prev.String()
				l[i].Meta = marshal(m)
				prev = ledger.NextLink(l[i].Record, prev)
			}
			return l
		}, true, verifier.CheckChainEvidenceHead, verifier.CodeEvidenceHead},
	}
	for _, tc := range offline {
		t.Run("offline/"+tc.name, func(t *testing.T) {
			rep := verifyProfileZip(t, fetchTrust(t, srv.URL), rewriteBundle(t, zipBytes, tc.f, tc.relink))
			expectProfileBroken(t, tc.name, rep, tc.check, tc.code)
		})
	}
}

// records returns a fresh slice of the journey's entries, to submit or to alter.
func (j *refJourney) records() [][]byte {
	out := make([][]byte, len(j.entries))
	for i := range j.entries {
		out[i] = j.entries[i]
	}
	return out
}

// TestRecordedRefusalEntry: a refusal as CHAP 0.3.0 Coordinators record it in their audit log,
// {seq, arrived, request, outcome, prev_hash}, continues a reference chain like any entry: its
// seq and prev_hash are checked, its metadata kept and served, its outcome filterable.
func TestRecordedRefusalEntry(t *testing.T) {
	j := loadRef(t, "ts", "small")
	srv, c := refDaemon(t)
	if _, err := c.Submit(t.Context(), j.workspace, j.records()); err != nil {
		t.Fatal(err)
	}
	refusal := func(seq uint64, prev ledger.Link) []byte {
		return fmt.Appendf(nil, `{"seq":%d,"arrived":"2023-11-14T22:14:00.000Z","request":{"jsonrpc":"2.0","id":"r-1","method":"control.pause",`+
			`"params":{"workspace":%q,"from":"human:mallory@example.org","reason":"hold"}},"outcome":{"status":"refused","code":-32011},"prev_hash":%q}`,
			seq, j.workspace, prev.String())
	}
	if _, err := c.Submit(t.Context(), j.workspace, [][]byte{refusal(j.count, ledger.Genesis)}); !client.IsCode(err, api.CodeChainMismatch) {
		t.Fatalf("refusal entry naming another predecessor: %v", err)
	}
	res, err := c.Submit(t.Context(), j.workspace, [][]byte{refusal(j.count, *j.head)})
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.Entries(t.Context(), j.workspace, client.EntriesQuery{Outcome: "refused"})
	if err != nil || len(page.Entries) != 1 || page.Entries[0].Seq != j.count {
		t.Fatalf("refused entries: %+v %v", page, err)
	}
	e := page.Entries[0]
	var meta, rec bytes.Buffer
	if json.Compact(&meta, e.Meta) != nil || json.Compact(&rec, e.Record) != nil {
		t.Fatalf("entry: %+v", e)
	}
	e.Meta, e.Record = meta.Bytes(), rec.Bytes()
	if !bytes.Contains(e.Meta, []byte(`"prev_hash":"`+j.head.String()+`"`)) || !bytes.Contains(e.Meta, []byte(`"arrived":"2023-11-14T22:14:00.000Z"`)) ||
		bytes.Contains(e.Record, []byte(`"prev_hash"`)) || bytes.Contains(e.Record, []byte(`"arrived"`)) {
		t.Fatalf("the entry's metadata is not kept beside the record: record %s meta %s", e.Record, e.Meta)
	}
	if _, err := c.ReportEvidenceHead(t.Context(), j.workspace, res.Head, j.count+1); err != nil {
		t.Fatal(err)
	}
	zipBytes := sealAndExport(t, c, j.workspace)
	tf := fetchTrust(t, srv.URL)
	if rep := verifyProfileZip(t, tf, zipBytes); rep.Verdict != verifier.Verified {
		t.Fatalf("verdict %s\n%s", rep.Verdict, profileReportText(rep))
	}
	// Its entry receipt proves the refusal's record, {outcome, request}, at its seq.
	er, err := c.EntryReceiptObject(t.Context(), j.workspace, j.count, "")
	if err != nil {
		t.Fatal(err)
	}
	trust, err := entryreceipt.TrustFrom(tf)
	if err != nil {
		t.Fatal(err)
	}
	v, err := entryreceipt.Verify(er, trust)
	if err != nil {
		t.Fatal(err)
	}
	if v.Link != res.Head || !bytes.HasPrefix(v.Record, []byte(`{"outcome":{"code":-32011,"status":"refused"},"request":{`)) {
		t.Fatalf("the refusal's entry receipt: link %s (head %s), record %s", v.Link, res.Head, v.Record)
	}
}
