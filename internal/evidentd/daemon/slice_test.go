package daemon

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/verifier"
)

// rewriteZip applies f to the named file of a zip bundle and fixes the manifest digest, so
// that only the content checks can notice the change.
func rewriteZip(t *testing.T, zipBytes []byte, name string, f func([]byte) []byte) []byte {
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
	files[name] = f(files[name])
	var m map[string]any
	if err := json.Unmarshal(files[bundle.ManifestFile], &m); err != nil {
		t.Fatal(err)
	}
	d := sha256.Sum256(files[name])
	m["files"].(map[string]any)[name] = "sha256:" + hex.EncodeToString(d[:])
	files[bundle.ManifestFile], _ = json.Marshal(m)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range order {
		w, _ := zw.Create(n)
		w.Write(files[n])
	}
	zw.Close()
	return buf.Bytes()
}

func sliceCheck(rep *verifier.Report, name verifier.CheckName) *verifier.Check {
	for i := range rep.Checks {
		if rep.Checks[i].Name == name {
			return &rep.Checks[i]
		}
	}
	return nil
}

// TestCaseSlice exports one task (and one logical artefact) of a D.* journey as a case
// slice, verifies it entry by entry, and shows that a tampered entry breaks it while the
// omitted rest of the chain is reported not_evaluated, never verified.
func TestCaseSlice(t *testing.T) {
	_, srv := start(t, t.TempDir())
	j := chapscenario.Journeys()[5] // D.6: a contract, a junior, a partner
	b, err := chapscenario.BuildJourney(j)
	if err != nil {
		t.Fatal(err)
	}
	ws := j.Workspace
	recs := b.Records()
	other := []byte(`{"outcome":{"code":"forbidden"},"request":{"jsonrpc":"2.0","id":"r-other","method":"task.complete","params":{"task_id":"tsk_other"}}}`)
	recs = append(recs, other)
	for _, r := range recs {
		if code, body := post(t, srv.URL+"/v1/chains/"+ws+"/entries", "application/json", r); code != http.StatusCreated {
			t.Fatalf("ingest: %d %s", code, body)
		}
	}
	exportURL := func(q url.Values) string { q.Set("chain", ws); return srv.URL + "/v1/export?" + q.Encode() }
	if code, body := get(t, exportURL(url.Values{"task": {j.Task}})); code != http.StatusConflict {
		t.Fatalf("slice of an unsealed chain: %d %s", code, body)
	}
	if code, body := post(t, srv.URL+"/v1/chains/"+ws+"/seal", "", nil); code != http.StatusCreated {
		t.Fatalf("seal: %d %s", code, body)
	}
	sealed := uint64(len(recs))
	// An entry of the task after the seal is not in the slice (nothing proves it yet).
	late := fmt.Appendf(nil, `{"outcome":{"code":"late"},"request":{"jsonrpc":"2.0","id":"r-late","method":"task.update","params":{"task_id":%q}}}`, j.Task)
	if code, body := post(t, srv.URL+"/v1/chains/"+ws+"/entries", "application/json", late); code != http.StatusCreated {
		t.Fatalf("ingest: %d %s", code, body)
	}
	for _, q := range []url.Values{{"task": {"tsk_none"}}, {"task": {""}}} {
		if code, body := get(t, exportURL(q)); code != http.StatusBadRequest {
			t.Fatalf("slice %v: %d %s", q, code, body)
		}
	}

	taskSeqs := readAll(t, srv.URL, ws, url.Values{"task_id": {j.Task}}, 1000)
	keySeqs := []uint64{}
	for _, m := range []string{"participant.join", "participant.rotate_key", "participant.revoke_key"} {
		keySeqs = append(keySeqs, readAll(t, srv.URL, ws, url.Values{"method": {m}}, 1000)...)
	}
	for _, tc := range []struct {
		name string
		q    url.Values
	}{
		{"task", url.Values{"task": {j.Task}}},
		{"logical id", url.Values{"logical_id": {"lgl_msa_acme_corp"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, zipBytes := get(t, exportURL(tc.q))
			if code != http.StatusOK {
				t.Fatalf("slice export: %d %s", code, zipBytes)
			}
			r, err := bundle.OpenZipBytes(zipBytes)
			if err != nil {
				t.Fatal(err)
			}
			ref := r.Manifest.Chains[0]
			if ref.Slice == nil || ref.Size != sealed || r.Manifest.Scope.Chain != ws || r.Manifest.Scope.Task != tc.q.Get("task") || r.Manifest.Scope.LogicalID != tc.q.Get("logical_id") {
				t.Fatalf("manifest: %+v scope %+v", ref, r.Manifest.Scope)
			}
			lines, err := r.ReadFile(bundle.SliceFile(ref.Dir), 1<<24)
			if err != nil {
				t.Fatal(err)
			}
			var got []uint64
			for _, l := range bytes.Split(bytes.TrimSpace(lines), []byte("\n")) {
				var e bundle.EntryLine
				if err := json.Unmarshal(l, &e); err != nil {
					t.Fatal(err)
				}
				got = append(got, e.Seq)
				if _, err := r.ReadFile(bundle.EntryProofFile(ref.Dir, e.Seq), 1<<16); err != nil {
					t.Errorf("seq %d has no chain receipt: %v", e.Seq, err)
				}
			}
			if tc.name == "task" {
				var want []uint64
				for _, s := range append(slices.Clone(taskSeqs), keySeqs...) {
					if s < sealed && !slices.Contains(want, s) {
						want = append(want, s)
					}
				}
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Fatalf("slice holds seqs %v, want the task's and the key records' %v", got, want)
				}
			}
			if uint64(len(got)) >= sealed || ref.Slice.Selected == 0 || ref.Slice.Context == 0 {
				t.Fatalf("slice of %d entries of %d, %+v", len(got), sealed, ref.Slice)
			}
			rep := verifyZip(t, fetchTrust(t, srv.URL), zipBytes)
			if bs := broken(rep); len(bs) > 0 {
				t.Fatalf("broken: %+v", bs)
			}
			for _, name := range []verifier.CheckName{verifier.CheckSliceEntries, verifier.CheckSliceSignatures, verifier.CheckSliceSeal, verifier.CheckSeals} {
				if c := sliceCheck(rep, name); c == nil || c.Status != verifier.Verified {
					t.Errorf("%s: %+v", name, c)
				}
			}
			c := sliceCheck(rep, "slice.completeness")
			if c == nil || c.Status != verifier.NotEvaluated || c.Code != verifier.CodeSliceIncomplete {
				t.Fatalf("completeness: %+v", c)
			}
			if rep.Verdict != verifier.NotEvaluated {
				t.Fatalf("verdict %s, want not_evaluated", rep.Verdict)
			}
			// The slice's scope and counts are the exporter's words, and the report says so.
			var unbound []string
			for _, n := range rep.NotEvidence {
				unbound = append(unbound, n.Field+"="+n.Value)
			}
			wantUnbound := []string{"manifest.producer=" + rep.NotEvidence[0].Value, "manifest.created=" + rep.NotEvidence[1].Value}
			for _, k := range []string{"task", "logical_id"} {
				if v := tc.q.Get(k); v != "" {
					wantUnbound = append(wantUnbound, "manifest.scope."+k+"="+v)
				}
			}
			wantUnbound = append(wantUnbound, bundle.SliceFile(ref.Dir)+" arrival=every line")
			wantUnbound = append(wantUnbound, fmt.Sprintf("manifest.chains[0].slice.selected=%d", ref.Slice.Selected), fmt.Sprintf("manifest.chains[0].slice.context=%d", ref.Slice.Context))
			if !slices.Equal(unbound, wantUnbound) {
				t.Errorf("not evidence %q, want %q", unbound, wantUnbound)
			}
			if cv := rep.Chains[0].Coverage; cv.EntriesChecked != uint64(len(got)) || cv.EntriesUnchecked != sealed-uint64(len(got)) {
				t.Fatalf("coverage %+v", cv)
			}

			// Tampering: the verifier must say broken, with the reason.
			tampers := []struct {
				name  string
				check verifier.CheckName
				code  verifier.Code
				f     func([]byte) []byte
			}{
				{"altered record", "slice.entries", verifier.CodeEntryLink, func(b []byte) []byte {
					return bytes.Replace(b, []byte(`"task_id":"`+j.Task+`"`), []byte(`"task_id":"`+j.Task+`X"`), 1)
				}},
				{"altered link", "slice.entries", verifier.CodeSliceProof, func(b []byte) []byte {
					// Re-link the last line as if its record were different: the link is
					// self-consistent but no receipt proves it.
					ls := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
					var e bundle.EntryLine
					json.Unmarshal(ls[len(ls)-1], &e)
					c, err := canonical.Canonicalize(bytes.Replace(e.Record, []byte(`"jsonrpc"`), []byte(`"x":1,"jsonrpc"`), 1), canonical.CHAP)
					if err != nil {
						t.Fatal(err)
					}
					e.Record = c
					e.Link = ledger.NextLink(e.Record, e.Prev)
					ls[len(ls)-1], _ = json.Marshal(e)
					return append(bytes.Join(ls, []byte("\n")), '\n')
				}},
				{"withheld key record", "slice.entries", verifier.CodeManifest, func(b []byte) []byte {
					ls := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
					return append(bytes.Join(ls[1:], []byte("\n")), '\n')
				}},
			}
			for _, tm := range tampers {
				rep := verifyZip(t, fetchTrust(t, srv.URL), rewriteZip(t, zipBytes, bundle.SliceFile(ref.Dir), tm.f))
				c := sliceCheck(rep, tm.check)
				if rep.Verdict != verifier.Broken || c == nil || c.Status != verifier.Broken || tm.code != "" && c.Code != tm.code {
					t.Errorf("%s: verdict %s, %s = %+v", tm.name, rep.Verdict, tm.check, c)
				}
			}
		})
	}
}
