package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/api"
	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/client"
	"github.com/evident-log/evident/entryreceipt"
	"github.com/evident-log/evident/internal/evidentd/daemon"
	"github.com/evident-log/evident/internal/evidentd/server"
	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/internal/testinfra"
	"github.com/evident-log/evident/trustfile"
	"github.com/evident-log/evident/verifier"
)

// startDaemon runs a real evidentd (Tessera log and SQLite store in a temporary directory)
// on a loopback port.
func startDaemon(t *testing.T, tokens ...server.Token) string {
	t.Helper()
	d, err := daemon.Open(context.Background(), daemon.Config{Data: t.TempDir(), CheckpointInterval: 100 * time.Millisecond,
		Tokens: tokens, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() {
		srv.Close()
		if err := d.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return srv.URL
}

func newClient(t *testing.T, base string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(base, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func triage(t *testing.T, ws string) [][]byte {
	t.Helper()
	b, _, err := chapscenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	return b.Records()
}

func compact(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestRoundTrip submits, reads, seals and exports a chain and verifies the bundle offline.
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	base := startDaemon(t)
	c := newClient(t, base)
	const ws = "wsp_client"
	recs := triage(t, ws)

	res, err := c.Submit(ctx, ws, recs[:8])
	if err != nil {
		t.Fatal(err)
	}
	if res.Chain != ws || res.Size != 8 || len(res.Accepted) != 8 || res.Accepted[7].Link != res.Head || res.Accepted[3].Seq != 3 {
		t.Fatalf("first batch: %+v", res)
	}
	res, err = c.Submit(ctx, ws, recs[8:])
	if err != nil {
		t.Fatal(err)
	}
	if res.Size != uint64(len(recs)) || res.Accepted[0].Seq != 8 || res.Accepted[0].Prev.IsZero() {
		t.Fatalf("second batch: %+v", res)
	}

	head, err := c.Head(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if head.Chain != ws || head.Size != uint64(len(recs)) || head.Head != res.Head || head.Closed || head.SealedSize != 0 {
		t.Fatalf("head: %+v", head)
	}

	// Entry receipts need a seal.
	if _, err := c.EntryReceipt(ctx, ws, 2); !client.IsCode(err, api.CodeNotSealed) {
		t.Fatalf("receipt before a seal: %v", err)
	}

	seal, err := c.Seal(ctx, ws, false)
	if err != nil {
		t.Fatal(err)
	}
	if seal.N != 0 || seal.Seal.Size != head.Size || seal.Seal.Root != head.Root || seal.Seal.Closed || seal.Checkpoint == "" {
		t.Fatalf("seal: %+v", seal)
	}
	if st, err := seal.TransparentStatement(); err != nil || len(st) == 0 {
		t.Fatalf("transparent statement: %d bytes, %v", len(st), err)
	}
	seals, err := c.Seals(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if len(seals.Seals) != 1 || seals.Seals[0].N != 0 || seals.Seals[0].Size != head.Size {
		t.Fatalf("seals: %+v", seals)
	}
	rc, err := c.EntryReceipt(ctx, ws, 2)
	if err != nil || len(rc) == 0 {
		t.Fatalf("receipt: %d bytes, %v", len(rc), err)
	}
	if _, err := c.EntryReceipt(ctx, ws, 99); !client.IsCode(err, api.CodeNoSuchEntry) {
		t.Fatalf("receipt of an entry beyond the head: %v", err)
	}
	// The entry receipt object, in CHAP 0.2's content type, verifies under the trust file.
	resp, err := http.Get(base + "/.well-known/evident-trust")
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	tf, err := trustfile.Parse(tb)
	if err != nil {
		t.Fatal(err)
	}
	trust, err := entryreceipt.TrustFrom(tf)
	if err != nil {
		t.Fatal(err)
	}
	er, err := c.EntryReceiptObject(ctx, ws, 2, "application/chap+json;version=0.2")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := entryreceipt.Verify(er, trust); err != nil || v.Seq != 2 || v.ContentType != "application/chap+json;version=0.2" || v.Chain != ws {
		t.Fatalf("entry receipt: %+v %v", v, err)
	}
	if _, err := c.EntryReceiptObject(ctx, ws, 2, "text/plain"); !client.IsCode(err, api.CodeBadQuery) {
		t.Fatalf("entry receipt in a foreign content type: %v", err)
	}

	// Entries, paged and filtered.
	var seqs []uint64
	for q := (client.EntriesQuery{Limit: 5}); ; {
		page, err := c.Entries(ctx, ws, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Entries {
			if !bytes.Equal(compact(t, e.Record), compact(t, recs[e.Seq])) {
				t.Fatalf("entry %d: record %s, want %s", e.Seq, e.Record, recs[e.Seq])
			}
			seqs = append(seqs, e.Seq)
		}
		if page.Next == nil {
			break
		}
		q.From = *page.Next
	}
	if len(seqs) != len(recs) || seqs[len(seqs)-1] != uint64(len(recs)-1) {
		t.Fatalf("paged entries: %v", seqs)
	}
	first, err := c.Entries(ctx, ws, client.EntriesQuery{Limit: 1})
	if err != nil || len(first.Entries) != 1 {
		t.Fatalf("first entry: %+v %v", first, err)
	}
	byMethod, err := c.Entries(ctx, ws, client.EntriesQuery{Method: first.Entries[0].Method})
	if err != nil || len(byMethod.Entries) == 0 || len(byMethod.Entries) >= len(recs) {
		t.Fatalf("entries of method %q: %+v %v", first.Entries[0].Method, byMethod, err)
	}
	for _, e := range byMethod.Entries {
		if e.Method != first.Entries[0].Method {
			t.Fatalf("method filter returned %q", e.Method)
		}
	}
	if _, err := c.Entries(ctx, ws, client.EntriesQuery{Limit: 1001}); !client.IsCode(err, api.CodeBadQuery) {
		t.Fatalf("limit over the page size: %v", err)
	}

	// Export streams the bundle, announcing its entries before the first byte; it opens and
	// verifies offline.
	var zip bytes.Buffer
	announced, bufferedThen := uint64(0), -1
	n, err := c.Export(ctx, client.ExportQuery{Chains: []string{ws}, Entries: func(total uint64) {
		announced, bufferedThen = total, zip.Len()
	}}, &zip)
	if err != nil || n != int64(zip.Len()) || n == 0 {
		t.Fatalf("export: %d bytes (%d buffered), %v", n, zip.Len(), err)
	}
	if announced != uint64(len(recs)) || bufferedThen != 0 {
		t.Fatalf("export announced %d entries with %d bytes written; the chain has %d", announced, bufferedThen, len(recs))
	}
	r, err := bundle.OpenZipBytes(zip.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := verifier.Verify(ctx, r, verifier.Options{Trust: publishedTrust(t, base)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != verifier.Verified {
		t.Fatalf("verdict %s", rep.Verdict)
	}
	if _, err := c.Export(ctx, client.ExportQuery{}, io.Discard); !client.IsCode(err, api.CodeBadQuery) {
		t.Fatalf("export without a chain: %v", err)
	}

	// A closing seal closes the chain.
	if s, err := c.Seal(ctx, ws, true); err != nil || !s.Seal.Closed || s.N != 1 {
		t.Fatalf("closing seal: %+v %v", s, err)
	}
	// A resend of what the chain already holds is acknowledged again, even closed; anything
	// new is refused.
	if again, err := c.Submit(ctx, ws, recs[:1]); err != nil || len(again.Accepted) != 1 || !again.Accepted[0].Duplicate || again.Accepted[0].Seq != 0 {
		t.Fatalf("resend to a closed chain: %+v %v", again, err)
	}
	_, err = c.Submit(ctx, ws, triage(t, "wsp_other")[:1])
	var e *client.Error
	if !errors.As(err, &e) || e.Code != api.CodeChainClosed || e.StatusCode != http.StatusConflict {
		t.Fatalf("submit to a closed chain: %v", err)
	}
}

// TestRefusal: a refused record is an *Error naming the code and the record; the batch
// leaves nothing behind.
func TestRefusal(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, startDaemon(t))
	for _, tc := range []struct {
		name    string
		records []string
		status  int
		code    api.ProblemCode
		index   int
	}{
		{"number", []string{`{"jsonrpc":"2.0","id":"a","method":"m"}`, `{"jsonrpc":"2.0","id":"b","method":"m","params":{"load":0.42}}`},
			http.StatusBadRequest, api.CodeNumberOutOfRange, 1},
		{"reused id", []string{`{"jsonrpc":"2.0","id":"a","method":"m"}`, `{"jsonrpc":"2.0","id":"a","method":"m"}`},
			http.StatusConflict, api.CodeIDReused, 1},
		{"not a record", []string{`[1]`}, http.StatusBadRequest, api.CodeMalformedRecord, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chain := "wsp_refusal_" + strings.ReplaceAll(tc.name, " ", "_")
			recs := make([][]byte, len(tc.records))
			for i, r := range tc.records {
				recs[i] = []byte(r)
			}
			_, err := c.Submit(ctx, chain, recs)
			var e *client.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want a *client.Error", err)
			}
			if e.StatusCode != tc.status || e.Code != tc.code || e.Index == nil || *e.Index != tc.index || e.Detail == "" {
				t.Fatalf("got %+v, want %d %s at %d", e, tc.status, tc.code, tc.index)
			}
			if !client.IsCode(err, tc.code) || client.IsCode(err, api.CodeInternal) {
				t.Fatal("IsCode disagrees with the error's code")
			}
			if want := string(tc.code); !strings.Contains(err.Error(), want) {
				t.Fatalf("message %q does not name %s", err, want)
			}
			if _, err := c.Head(ctx, chain); !client.IsCode(err, api.CodeNoSuchChain) {
				t.Fatalf("after a refused batch: %v, want no_such_chain", err)
			}
		})
	}
	if _, err := c.Submit(ctx, "wsp_x", nil); !errors.Is(err, client.ErrNoRecords) {
		t.Fatalf("empty batch: %v", err)
	}
	if _, err := c.Submit(ctx, "wsp_x", [][]byte{[]byte(`{"a":1},{"b":2}`)}); !errors.Is(err, client.ErrInvalidRecord) {
		t.Fatalf("two values as one record: %v", err)
	}
	if _, err := c.Submit(ctx, "bad/chain", [][]byte{[]byte(`{}`)}); !client.IsCode(err, api.CodeInvalidChainID) {
		t.Fatalf("bad chain id: %v", err)
	}
}

// TestToken: with tokens configured, writes carry a bearer token scoped to the chain.
func TestToken(t *testing.T) {
	ctx := context.Background()
	base := startDaemon(t, server.Token{Secret: "token-for-team-a-0123", Prefix: "wsp_a"})
	rec := [][]byte{[]byte(`{"jsonrpc":"2.0","id":"1","method":"m"}`)}
	for _, tc := range []struct {
		name, chain, token string
		code               api.ProblemCode // "" = accepted
	}{
		{"no token", "wsp_a1", "", api.CodeUnauthorized},
		{"wrong token", "wsp_a1", "wrong-token-0123456789", api.CodeUnauthorized},
		{"out of scope", "wsp_b1", "token-for-team-a-0123", api.CodeUnauthorized},
		{"scoped", "wsp_a1", "token-for-team-a-0123", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []client.Option
			if tc.token != "" {
				opts = append(opts, client.WithToken(tc.token))
			}
			c := newClient(t, base, opts...)
			res, err := c.Submit(ctx, tc.chain, rec)
			if tc.code == "" {
				if err != nil || res.Size != 1 {
					t.Fatalf("%+v %v", res, err)
				}
				return
			}
			var e *client.Error
			if !errors.As(err, &e) || e.Code != tc.code || e.StatusCode != http.StatusUnauthorized {
				t.Fatalf("got %v, want %s", err, tc.code)
			}
			if _, err := c.Seal(ctx, tc.chain, false); !client.IsCode(err, tc.code) {
				t.Fatalf("seal: %v, want %s", err, tc.code)
			}
		})
	}
	// Reads need no token.
	if h, err := newClient(t, base).Head(ctx, "wsp_a1"); err != nil || h.Size != 1 {
		t.Fatalf("head without a token: %+v %v", h, err)
	}
}

// TestContext: the caller's context bounds every request.
func TestContext(t *testing.T) {
	c := newClient(t, startDaemon(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Head(ctx, "wsp_ctx"); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled context: %v", err)
	}
	if _, err := c.Export(ctx, client.ExportQuery{Chains: []string{"wsp_ctx"}}, io.Discard); !errors.Is(err, context.Canceled) {
		t.Fatalf("export with a canceled context: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	if _, err := c.Submit(ctx, "wsp_ctx", [][]byte{[]byte(`{"jsonrpc":"2.0","id":"1","method":"m"}`)}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("expired context: %v", err)
	}
	var e *client.Error
	if _, err := c.Head(context.Background(), "wsp_ctx"); !errors.As(err, &e) || e.Code != api.CodeNoSuchChain {
		t.Fatalf("nothing was written: %v", err)
	}
}

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8080", true},
		{"https://evident.example/", true},
		{"https://evident.example/prefix", true},
		{"127.0.0.1:8080", false},
		{"ftp://evident.example", false},
		{"http://", false},
		{"http://[::1", false},
	} {
		if _, err := client.New(tc.url); (err == nil) != tc.ok {
			t.Errorf("New(%q): %v", tc.url, err)
		}
	}
}

// TestErrorMessage: an answer that is not a problem detail (a proxy's, say) still becomes
// an *Error; evidentd itself answers a path it does not serve with a problem.
func TestErrorMessage(t *testing.T) {
	proxy := httptest.NewServer(http.NotFoundHandler())
	defer proxy.Close()
	_, err := newClient(t, proxy.URL).Head(context.Background(), "wsp_x")
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != http.StatusNotFound || e.Code != "" {
		t.Fatalf("got %v", err)
	}
	if want := "GET /v1/chains/wsp_x: 404 Not Found"; err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
	_, err = newClient(t, startDaemon(t)+"/no-such-prefix").Head(context.Background(), "wsp_x")
	if !client.IsCode(err, api.CodeNoSuchRoute) || !errors.As(err, &e) || e.StatusCode != http.StatusNotFound {
		t.Fatalf("got %v", err)
	}
}

// publishedTrust is the trust file the evidentd at base publishes, fetched as a user would.
func publishedTrust(t *testing.T, base string) *trustfile.File { return testinfra.FetchTrust(t, base) }
