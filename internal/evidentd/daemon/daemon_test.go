package daemon

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/evidentd/server"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/verifier"
)

func start(t *testing.T, dir string) (*Daemon, *httptest.Server) {
	t.Helper()
	d, err := Open(context.Background(), Config{Data: dir, CheckpointInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveUntilCleanup(t, d)
	return d, srv
}

func post(t *testing.T, url, contentType string, body []byte) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, contentType, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, b := call(t, http.MethodGet, url)
	return resp.StatusCode, b
}

// call sends a request without a body and returns the answer and its body.
func call(t *testing.T, method, url string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// serveUntilCleanup serves d's API over loopback HTTP and closes both when the test ends.
func serveUntilCleanup(t *testing.T, d *Daemon) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() {
		srv.Close()
		if err := d.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		settle(t, d.cfg.Data)
	})
	return srv
}

// settle empties dir until it stays empty. Tessera's storage goroutines stop when their
// context is cancelled, but the log's Close cannot wait for them
// (transparency-dev/tessera#1111): one caught in the middle of publishing a checkpoint can
// create a file after Close returns, and the test's TempDir cleanup then fails on a
// directory that is not empty.
func settle(t *testing.T, dir string) {
	for range 40 {
		ents, err := os.ReadDir(dir)
		if err != nil || len(ents) == 0 {
			return
		}
		for _, e := range ents {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Logf("%s still not empty after 1 s", dir)
}

// TestChapVectorsOverHTTP: the published CHAP 0.3 chain reproduces exactly through the API.
func TestChapVectorsOverHTTP(t *testing.T) {
	_, srv := start(t, t.TempDir())
	raw, err := os.ReadFile("../../../testvectors/external/chap/chap-0.3-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Chain struct {
			Entries []struct {
				Record json.RawMessage `json:"record"`
				Head   string          `json:"head"`
			} `json:"entries"`
			EvidenceHead string `json:"evidence_head"`
		} `json:"chain"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	for _, e := range v.Chain.Entries {
		lines = append(lines, e.Record)
	}
	// JSON Lines batch.
	code, body := post(t, srv.URL+"/v1/chains/wsp_test/entries", "application/jsonl", bytes.Join(lines, []byte("\n")))
	if code != http.StatusCreated {
		t.Fatalf("ingest: %d %s", code, body)
	}
	var resp struct {
		Accepted []struct {
			Seq  uint64 `json:"seq"`
			Link string `json:"link"`
		} `json:"accepted"`
		Head string `json:"head"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	for i, e := range v.Chain.Entries {
		if resp.Accepted[i].Link != e.Head || resp.Accepted[i].Seq != uint64(i) {
			t.Errorf("entry %d: got seq %d link %s, want %s", i, resp.Accepted[i].Seq, resp.Accepted[i].Link, e.Head)
		}
	}
	if resp.Head != v.Chain.EvidenceHead {
		t.Errorf("head %s, want evidence_head %s", resp.Head, v.Chain.EvidenceHead)
	}
}

// TestEndToEnd: signed envelopes in, seal with receipt, export, offline verdict "verified".
func TestEndToEnd(t *testing.T) {
	d, srv := start(t, t.TempDir())
	const ws = "wsp_e2e"
	b, _, err := chapscenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	recs := b.Records()
	// First half one by one, the rest as a JSON array.
	for _, r := range recs[:5] {
		if code, body := post(t, srv.URL+"/v1/chains/"+ws+"/entries", "application/json", r); code != http.StatusCreated {
			t.Fatalf("ingest: %d %s", code, body)
		}
	}
	arr := append([]byte("["), bytes.Join(recs[5:], []byte(","))...)
	arr = append(arr, ']')
	if code, body := post(t, srv.URL+"/v1/chains/"+ws+"/entries", "application/json", arr); code != http.StatusCreated {
		t.Fatalf("batch ingest: %d %s", code, body)
	}
	code, body := get(t, srv.URL+"/v1/chains/"+ws)
	if code != http.StatusOK {
		t.Fatalf("head: %d %s", code, body)
	}
	var head struct {
		Size uint64 `json:"size"`
		Head string `json:"head"`
	}
	json.Unmarshal(body, &head)
	if head.Size != uint64(len(recs)) || head.Head != b.Head().String() {
		t.Fatalf("head %+v, want size %d head %s", head, len(recs), b.Head())
	}

	code, body = post(t, srv.URL+"/v1/chains/"+ws+"/seal", "", nil)
	if code != http.StatusCreated {
		t.Fatalf("seal: %d %s", code, body)
	}
	var seal struct {
		Seal        ledger.Seal `json:"seal"`
		LogIndex    uint64      `json:"log_index"`
		Checkpoint  string      `json:"checkpoint"`
		Receipt     string      `json:"receipt"`
		Transparent string      `json:"transparent_statement"`
	}
	if err := json.Unmarshal(body, &seal); err != nil {
		t.Fatal(err)
	}
	if seal.Seal.Size != uint64(len(recs)) || seal.Seal.Head != b.Head() {
		t.Fatalf("seal %+v", seal.Seal)
	}
	// The receipt verifies against the service key and the checkpoint root.
	ts, _ := base64.StdEncoding.DecodeString(seal.Transparent)
	stmt, rcpts, err := receipts.SplitTransparent(ts)
	if err != nil || len(rcpts) != 1 {
		t.Fatalf("transparent statement: %v (%d receipts)", err, len(rcpts))
	}
	entry, _ := receipts.EntryHash(stmt)
	leaf := receipts.LeafHash(entry[:])
	root, _, err := receipts.VerifyInclusion(rcpts[0], leaf[:], d.service.Signer().Public())
	if err != nil {
		t.Fatalf("receipt: %v", err)
	}
	lines := strings.Split(seal.Checkpoint, "\n")
	if len(lines) < 3 || lines[2] != base64.StdEncoding.EncodeToString(root) {
		t.Fatalf("receipt root %x not the checkpoint's (%q)", root, seal.Checkpoint)
	}

	// Sealing again without new entries returns the same seal (anchor-now is idempotent).
	code, body2 := post(t, srv.URL+"/v1/chains/"+ws+"/seal", "", nil)
	if code != http.StatusOK || !bytes.Contains(body2, []byte(`"log_index": `+jsonNum(seal.LogIndex))) {
		t.Fatalf("second seal: %d %s", code, body2)
	}

	code, zipBytes := get(t, srv.URL+"/v1/export?chain="+ws)
	if code != http.StatusOK {
		t.Fatalf("export: %d %s", code, zipBytes)
	}
	path := filepath.Join(t.TempDir(), "b.zip")
	os.WriteFile(path, zipBytes, 0o644)
	r, err := bundle.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := verifier.Verify(context.Background(), r, verifier.Options{Trust: fetchTrust(t, srv.URL)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != verifier.Verified {
		var buf bytes.Buffer
		rep.WriteText(&buf)
		t.Fatalf("verdict %s:\n%s", rep.Verdict, buf.String())
	}
}

func jsonNum(n uint64) string { b, _ := json.Marshal(n); return string(b) }

// TestRefusalsChangeNothing: bad input gets a typed problem detail and writes nothing.
func TestRefusalsChangeNothing(t *testing.T) {
	_, srv := start(t, t.TempDir())
	const ws = "wsp_bad"
	b, _, err := chapscenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	recs := b.Records()
	if code, body := post(t, srv.URL+"/v1/chains/"+ws+"/entries", "application/json", recs[0]); code != http.StatusCreated {
		t.Fatalf("%d %s", code, body)
	}
	tamperedSig := bytes.Replace(recs[1], []byte(`"mode":"trial"`), []byte(`"mode":"production"`), 1)
	cases := []struct {
		name   string
		body   []byte
		status int
		code   string
	}{
		{"decimal number", []byte(`{"jsonrpc":"2.0","id":"x","method":"m","params":{"load":0.42}}`), 400, "number_out_of_range"},
		{"2^53", []byte(`{"jsonrpc":"2.0","id":"x","method":"m","params":{"n":9007199254740992}}`), 400, "number_out_of_range"},
		{"duplicate key", []byte(`{"jsonrpc":"2.0","id":"x","id":"y","method":"m"}`), 400, "malformed_record"},
		{"not json", []byte(`{"jsonrpc":`), 400, "malformed_record"},
		{"altered signed envelope", tamperedSig, 422, "bad_signature"},
		{"unsigned from keyed sender", []byte(`{"jsonrpc":"2.0","id":"u1","from":"service:coordinator@example.org","method":"task.update","params":{}}`), 422, "signature_required"},
		{"wrong workspace", []byte(`{"jsonrpc":"2.0","id":"w1","workspace":"other","method":"m"}`), 422, "chain_mismatch"},
		{"stale prev_hash", []byte(`{"jsonrpc":"2.0","id":"p1","method":"m","evidence":{"prev_hash":"sha256:1111111111111111111111111111111111111111111111111111111111111111"}}`), 409, "prev_hash_mismatch"},
		{"fork on genesis", []byte(`{"jsonrpc":"2.0","id":"f1","method":"m","evidence":{"prev_hash":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}}`), 409, "fork"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, srv.URL+"/v1/chains/"+ws+"/entries", "application/json", tc.body)
			var p struct {
				Code   string `json:"code"`
				Status int    `json:"status"`
				Type   string `json:"type"`
			}
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatalf("not a problem detail: %s", body)
			}
			if code != tc.status || p.Code != tc.code || p.Status != tc.status || p.Type != "urn:evident:problem:"+tc.code {
				t.Fatalf("got %d %s, want %d %s", code, body, tc.status, tc.code)
			}
			_, hb := get(t, srv.URL+"/v1/chains/"+ws)
			if !bytes.Contains(hb, []byte(`"size": 1`)) {
				t.Fatalf("chain changed after a refusal: %s", hb)
			}
		})
	}
	// A batch whose third record is bad stores nothing and names index 2.
	batch := []byte("[" + string(recs[1]) + "," + string(recs[2]) + `,{"jsonrpc":"2.0","id":"z","method":"m","params":{"x":1.5}}]`)
	code, body := post(t, srv.URL+"/v1/chains/"+ws+"/entries", "application/json", batch)
	if code != 400 || !bytes.Contains(body, []byte(`"index":2`)) || !bytes.Contains(body, []byte(`"code":"number_out_of_range"`)) {
		t.Fatalf("bad batch: %d %s", code, body)
	}
	_, hb := get(t, srv.URL+"/v1/chains/"+ws)
	if !bytes.Contains(hb, []byte(`"size": 1`)) {
		t.Fatalf("chain changed after a refused batch: %s", hb)
	}
}

// TestRestartKeepsEverything: keys, chain and log survive a restart; ingest continues.
func TestRestartKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	const ws = "wsp_restart"
	b, _, err := chapscenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	recs := b.Records()
	d1, err := Open(context.Background(), Config{Data: dir, CheckpointInterval: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d1.Pipeline().Ingest(context.Background(), ws, "", recs[:7]); err != nil {
		t.Fatal(err)
	}
	if _, err := d1.Pipeline().Seal(context.Background(), ws, false); err != nil {
		t.Fatal(err)
	}
	vkey := d1.Log().VerifierKey()
	if err := d1.Close(); err != nil {
		t.Fatal(err)
	}
	d2, srv := start(t, dir)
	if d2.Log().VerifierKey() != vkey {
		t.Fatal("log key changed across restart")
	}
	if _, err := d2.Pipeline().Ingest(context.Background(), ws, "", recs[7:]); err != nil {
		t.Fatalf("ingest after restart (keys must persist): %v", err)
	}
	res, err := d2.Pipeline().Seal(context.Background(), ws, true)
	if err != nil {
		t.Fatal(err)
	}
	if res.N != 1 || res.Seal.PrevSeal == "" || !res.Seal.Closed || res.Seal.Size != uint64(len(recs)) {
		t.Fatalf("second seal %+v", res.Seal)
	}
	// A closed chain takes nothing more.
	code, body := post(t, srv.URL+"/v1/chains/"+ws+"/entries", "application/json", []byte(`{"jsonrpc":"2.0","id":"late","method":"m"}`))
	if code != http.StatusConflict || !bytes.Contains(body, []byte("chain_closed")) {
		t.Fatalf("after close: %d %s", code, body)
	}
	// Both seals, cut from one checkpoint at export, verify offline with their lineage.
	if rep := exportAndVerify(t, srv.URL, ws); rep.Verdict != verifier.Verified || rep.Chains[0].Coverage.SealsVerified != 2 {
		var buf bytes.Buffer
		rep.WriteText(&buf)
		t.Fatalf("two-seal bundle:\n%s", buf.String())
	}
}

func exportAndVerify(t *testing.T, base, chain string) *verifier.Report {
	t.Helper()
	code, zipBytes := get(t, base+"/v1/export?chain="+chain)
	if code != http.StatusOK {
		t.Fatalf("export: %d %s", code, zipBytes)
	}
	r, err := bundle.OpenZipBytes(zipBytes)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := verifier.Verify(context.Background(), r, verifier.Options{Trust: fetchTrust(t, base)})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestWritesNeedToken: with tokens configured, writes need a bearer token scoped to the chain.
func TestWritesNeedToken(t *testing.T) {
	d, err := Open(context.Background(), Config{Data: t.TempDir(), CheckpointInterval: 100 * time.Millisecond,
		Tokens: []server.Token{{Secret: "token-for-team-a-0123", Prefix: "wsp_a"}}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	defer func() { srv.Close(); d.Close() }()
	rec := []byte(`{"jsonrpc":"2.0","id":"1","method":"m"}`)
	for _, tc := range []struct {
		chain, token string
		want         int
	}{
		{"wsp_a1", "", http.StatusUnauthorized},
		{"wsp_a1", "wrong-token-0123456789", http.StatusUnauthorized},
		{"wsp_b1", "token-for-team-a-0123", http.StatusUnauthorized},
		{"wsp_a1", "token-for-team-a-0123", http.StatusCreated},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chains/"+tc.chain+"/entries", bytes.NewReader(rec))
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s with %q: %d, want %d", tc.chain, tc.token, resp.StatusCode, tc.want)
		}
	}
	if code, _ := get(t, srv.URL+"/v1/chains/wsp_a1"); code != http.StatusOK {
		t.Errorf("reading the head: %d", code)
	}
}
