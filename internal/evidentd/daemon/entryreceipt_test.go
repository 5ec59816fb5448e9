package daemon

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/chapscenario"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/receipts"
)

// TestEntryReceipt: GET /v1/chains/{chain}/entries/{seq}/receipt proves one entry's place in
// the chain tree its latest seal commits to; entries not yet sealed get 409 not_sealed.
func TestEntryReceipt(t *testing.T) {
	d, srv := start(t, t.TempDir())
	const ws = "wsp_receipt"
	b, _, err := chapscenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	recs := b.Records()
	code, body := post(t, srv.URL+"/v1/chains/"+ws+"/entries", "application/jsonl", bytes.Join(recs[:10], []byte("\n")))
	if code != http.StatusCreated {
		t.Fatalf("ingest: %d %s", code, body)
	}
	var acc struct {
		Accepted []struct {
			Link ledger.Link `json:"link"`
		} `json:"accepted"`
	}
	json.Unmarshal(body, &acc)
	url := func(seq string) string { return srv.URL + "/v1/chains/" + ws + "/entries/" + seq + "/receipt" }

	if code, body := get(t, url("3")); code != http.StatusConflict || !strings.Contains(string(body), "not_sealed") {
		t.Fatalf("before any seal: %d %s", code, body)
	}
	code, body = post(t, srv.URL+"/v1/chains/"+ws+"/seal", "", nil)
	if code != http.StatusCreated {
		t.Fatalf("seal: %d %s", code, body)
	}
	var seal struct {
		Seal ledger.Seal `json:"seal"`
	}
	json.Unmarshal(body, &seal)
	// More entries after the seal: they are not covered yet.
	if code, body := post(t, srv.URL+"/v1/chains/"+ws+"/entries", "application/jsonl", bytes.Join(recs[10:], []byte("\n"))); code != http.StatusCreated {
		t.Fatalf("ingest: %d %s", code, body)
	}
	for seq := range 10 {
		code, rc := get(t, url(jsonNum(uint64(seq))))
		if code != http.StatusOK {
			t.Fatalf("seq %d: %d %s", seq, code, rc)
		}
		leaf := receipts.LeafHash(acc.Accepted[seq].Link[:])
		root, r, err := receipts.VerifyInclusion(rc, leaf[:], d.service.Signer().Public())
		if err != nil {
			t.Fatalf("seq %d: %v", seq, err)
		}
		if ledger.RootString([32]byte(root)) != seal.Seal.Root || r.Claims.Subject != ws || r.Inclusion[0].LeafIndex != uint64(seq) || r.Inclusion[0].TreeSize != 10 {
			t.Fatalf("seq %d: receipt against %x (%+v), seal root %s", seq, root, r.Claims, seal.Seal.Root)
		}
		// The receipt proves this link, not another one.
		other := receipts.LeafHash(acc.Accepted[(seq+1)%10].Link[:])
		if _, _, err := receipts.VerifyInclusion(rc, other[:], d.service.Signer().Public()); err == nil {
			t.Fatalf("seq %d: the receipt also verifies another entry", seq)
		}
	}
	for seq, want := range map[string]int{"11": http.StatusConflict, "99": http.StatusNotFound, "x": http.StatusBadRequest} {
		if code, body := get(t, url(seq)); code != want {
			t.Errorf("seq %s: %d %s, want %d", seq, code, body, want)
		}
	}
}

// TestEntryStatement: every accepted record is a COSE entry statement of the service (signed
// on demand, byte-identical on every request), tied to the chain by its seq and prev headers
// and, once sealed, carrying its chain receipt (a transparent statement).
func TestEntryStatement(t *testing.T) {
	d, srv := start(t, t.TempDir())
	const ws = "wsp_statement"
	b, _, err := chapscenario.SupportTriage(ws, time.Date(2026, 5, 17, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	recs := b.Records()
	if code, body := post(t, srv.URL+"/v1/chains/"+ws+"/entries", "application/jsonl", bytes.Join(recs, []byte("\n"))); code != http.StatusCreated {
		t.Fatalf("ingest: %d %s", code, body)
	}
	url := srv.URL + "/v1/chains/" + ws + "/entries/4/statement"
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Evident-Sealed") != "false" {
		t.Fatalf("unsealed entry: Evident-Sealed %q", resp.Header.Get("Evident-Sealed"))
	}
	if code, body := post(t, srv.URL+"/v1/chains/"+ws+"/seal", "", nil); code != http.StatusCreated {
		t.Fatalf("seal: %d %s", code, body)
	}
	_, ts1 := get(t, url)
	code, ts2 := get(t, url)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, ts2)
	}
	stmt1, _, err := receipts.SplitTransparent(ts1)
	if err != nil {
		t.Fatal(err)
	}
	stmt, rcpts, err := receipts.SplitTransparent(ts2)
	if err != nil || len(rcpts) != 1 {
		t.Fatalf("transparent statement: %v, %d receipts", err, len(rcpts))
	}
	if !bytes.Equal(stmt, stmt1) {
		t.Fatal("the entry statement differs between two requests: it must be deterministic")
	}
	st, err := receipts.ParseStatement(stmt)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Verify(d.service.Signer().Public()); err != nil {
		t.Fatalf("statement signature: %v", err)
	}
	seq, _ := st.Seq()
	prevText, _ := st.Prev()
	prev, err := ledger.ParseLink(prevText)
	if err != nil || seq != 4 || st.Claims.Subject != ws || st.ContentType != "application/chap+json;version=0.3" {
		t.Fatalf("headers: seq %d prev %q sub %q ct %q", seq, prevText, st.Claims.Subject, st.ContentType)
	}
	// The payload is the canonical record; with prev it gives the entry's link, which the
	// chain receipt proves against the seal's root.
	link := ledger.NextLink(st.Payload, prev)
	if link.String() != resp.Header.Get("Evident-Link") {
		t.Fatalf("recomputed link %s, the service says %s", link, resp.Header.Get("Evident-Link"))
	}
	leaf := receipts.LeafHash(link[:])
	if _, _, err := receipts.VerifyInclusion(rcpts[0], leaf[:], d.service.Signer().Public()); err != nil {
		t.Fatalf("chain receipt: %v", err)
	}
}
