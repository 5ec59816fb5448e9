package daemon

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/scenario/copscenario"
	"github.com/evident-log/evident/ledger/profile/cop"
	"github.com/evident-log/evident/verifier"
)

func quietDaemon(t *testing.T, dir string) (*Daemon, *httptest.Server) {
	t.Helper()
	d, err := Open(context.Background(), Config{Data: dir, CheckpointInterval: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return d, httptest.NewServer(d.Handler())
}

func postJSONL(t *testing.T, url string, body []byte) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/jsonl")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, b)
	}
	return b
}

func zipFiles(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range zr.File {
		rc, _ := f.Open()
		out[f.Name], _ = io.ReadAll(rc)
		rc.Close()
	}
	return out
}

// rezip writes files back into a bundle with fresh digests (what a forger would do).
func rezip(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var m bundle.Manifest
	if err := json.Unmarshal(files[bundle.ManifestFile], &m); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := bundle.NewWriter(&out)
	for name, b := range files {
		if name != bundle.ManifestFile {
			if err := w.WriteFile(name, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(m); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func checkOf(rep *verifier.Report, name verifier.CheckName, chain string) *verifier.Check {
	for i, c := range rep.Checks {
		if c.Name == name && (chain == "" || c.Chain == chain) {
			return &rep.Checks[i]
		}
	}
	return nil
}

// TestCOPLedgerOverHTTP: evidentd emits a COP Ledger record per accepted event, signed by its
// node key; the ledger is served as JSON Lines, identical on every read and after a restart,
// carried in the export bundle and verified offline; an altered, truncated or re-ordered
// ledger is reported broken.
func TestCOPLedgerOverHTTP(t *testing.T) {
	dir := t.TempDir()
	d, srv := quietDaemon(t, dir)
	const topic = "urn:cop:topic:claim-4711"
	recs, err := copscenario.ClaimsTopic(topic, time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	postJSONL(t, srv.URL+"/v1/chains/"+topic+"/entries?profile=cop/1.0", bytes.Join(recs[:5], []byte("\n")))
	postJSONL(t, srv.URL+"/v1/chains/"+topic+"/entries", bytes.Join(recs[5:], []byte("\n")))
	postJSONL(t, srv.URL+"/v1/chains/"+topic+"/seal", nil)
	code, ledgerBytes := get(t, srv.URL+"/v1/chains/"+topic+"/cop-ledger")
	if code != http.StatusOK {
		t.Fatalf("cop-ledger: %d %s", code, ledgerBytes)
	}
	lines := bytes.Split(bytes.TrimSuffix(ledgerBytes, []byte("\n")), []byte("\n"))
	if len(lines) != len(recs) {
		t.Fatalf("%d ledger records for %d events", len(lines), len(recs))
	}
	_, again := get(t, srv.URL+"/v1/chains/"+topic+"/cop-ledger")
	if !bytes.Equal(again, ledgerBytes) {
		t.Fatal("two reads of the ledger differ")
	}
	code, zb := get(t, srv.URL+"/v1/export?chain="+topic)
	if code != http.StatusOK {
		t.Fatalf("export: %d", code)
	}
	files := zipFiles(t, zb)
	if !bytes.Equal(files[cop.LedgerFile(bundle.ChainDir(topic))], ledgerBytes) {
		t.Fatal("the bundle's ledger is not the served one")
	}
	nodes, err := cop.ParseNodeKeys(files[cop.NodesFile])
	if err != nil || len(nodes) != 1 || nodes[0].NodeID != "urn:cop:node:"+DefaultOrigin {
		t.Fatalf("node keys %+v: %v", nodes, err)
	}
	// The served ledger verifies with the library too, record by record against the events.
	events := map[string][]byte{}
	for _, r := range recs {
		e, _ := cop.Parse(r)
		events[e.ID] = r
	}
	chk := &cop.LedgerCheck{Keys: map[string]crypto.PublicKey{nodes[0].KeyID: nodes[0].Public}, RequireSignature: true, Events: events}
	for i, l := range lines {
		if err := chk.Next(l); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if chk.Matched != len(recs) || chk.Signed != len(recs) {
		t.Fatalf("matched %d signed %d", chk.Matched, chk.Signed)
	}

	rep := verifyProfileZip(t, fetchTrust(t, srv.URL), zb)
	if c := checkOf(rep, "cop.ledger", topic); rep.Verdict != verifier.Verified || c == nil || c.Status != verifier.Verified {
		t.Fatalf("verdict %s, cop.ledger %+v\n%s", rep.Verdict, c, profileReportText(rep))
	}
	lf := cop.LedgerFile(bundle.ChainDir(topic))
	for _, tc := range []struct {
		name string
		code verifier.Code
		edit func([]byte) []byte
	}{
		{"altered createdAt", verifier.Code(cop.CodeLedgerBroken), func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"createdAt":"20`), []byte(`"createdAt":"19`), 1)
		}},
		{"truncated", verifier.Code(cop.CodeLedgerMismatch), func(b []byte) []byte {
			return b[:bytes.LastIndexByte(b[:len(b)-1], '\n')+1]
		}},
		{"records swapped", verifier.Code(cop.CodeLedgerBroken), func(b []byte) []byte {
			l := bytes.SplitAfter(b, []byte("\n"))
			l[1], l[2] = l[2], l[1]
			return bytes.Join(l, nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := map[string][]byte{}
			for k, v := range files {
				f[k] = v
			}
			f[lf] = tc.edit(bytes.Clone(ledgerBytes))
			expectProfileBroken(t, tc.name, verifyProfileZip(t, fetchTrust(t, srv.URL), rezip(t, f)), "cop.ledger", tc.code)
		})
	}

	// Durable with the entries: a restart re-derives the very same ledger from the store and
	// the node key in <data>/keys.
	srv.Close()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d2, srv2 := quietDaemon(t, dir)
	defer func() { srv2.Close(); d2.Close() }()
	if _, after := get(t, srv2.URL+"/v1/chains/"+topic+"/cop-ledger"); !bytes.Equal(after, ledgerBytes) {
		t.Fatal("the ledger changed across a restart")
	}
	if code, b := get(t, srv2.URL+"/v1/chains/urn:cop:topic:nope/cop-ledger"); code != http.StatusNotFound || !bytes.Contains(b, []byte(`"no_such_chain"`)) {
		t.Fatalf("ledger of an unknown Topic: %d %s", code, b)
	}
}
