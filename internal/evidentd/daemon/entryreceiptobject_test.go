package daemon

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evident-log/evident/entryreceipt"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/trustfile"
)

var updateVectors = flag.Bool("update-vectors", false, "rewrite testvectors/entry-receipt from a live evidentd")

// TestEntryReceiptObject: GET …/entries/{seq}/entry-receipt answers, for every entry of a
// sealed chain of a witnessed log, an evident-entry-receipt/v1 that verifies offline under the
// log's trust file alone (witness quorum included), in either CHAP content type; one changed
// byte anywhere in its statement, seal or checkpoint makes it fail; another operator's trust
// file refuses it; unsealed entries are 409 not_sealed and a content type the profile does not
// have is 400.
func TestEntryReceiptObject(t *testing.T) {
	_, srv, _, _ := startWitnessed(t, false, false)
	const ws = "wsp_entry_receipts"
	url := func(seq uint64, q string) string {
		return fmt.Sprintf("%s/v1/chains/%s/entries/%d/entry-receipt%s", srv.URL, ws, seq, q)
	}
	ingestTriage(t, srv.URL, ws)
	if code, body := get(t, url(2, "")); code != http.StatusConflict || !strings.Contains(string(body), "not_sealed") {
		t.Fatalf("before the seal: %d %s", code, body)
	}
	if code, body := post(t, srv.URL+"/v1/chains/"+ws+"/seal", "", nil); code != http.StatusCreated {
		t.Fatalf("seal: %d %s", code, body)
	}
	code, tb := get(t, srv.URL+"/.well-known/evident-trust")
	if code != http.StatusOK {
		t.Fatalf("trust: %d %s", code, tb)
	}
	tf, err := trustfile.Parse(tb)
	if err != nil {
		t.Fatal(err)
	}
	if tf.WitnessPolicy == "" {
		t.Fatal("the witnessed log's trust file names no witness policy")
	}
	trust, err := entryreceipt.TrustFrom(tf)
	if err != nil {
		t.Fatal(err)
	}
	var links []ledger.Link
	var kept [][]byte
	for seq := uint64(0); seq < 13; seq++ {
		code, body := get(t, url(seq, ""))
		if code != http.StatusOK {
			t.Fatalf("seq %d: %d %s", seq, code, body)
		}
		r, err := entryreceipt.Parse(body)
		if err != nil {
			t.Fatalf("seq %d: %v", seq, err)
		}
		v, err := entryreceipt.Verify(r, trust)
		if err != nil {
			t.Fatalf("seq %d: %v", seq, err)
		}
		if v.Chain != ws || v.Seq != seq || v.Seal.Size != 13 || v.ContentType != "application/chap+json;version=0.3" || len(v.Witnesses) != 2 {
			t.Fatalf("seq %d: verified %s %d %d %s %v", seq, v.Chain, v.Seq, v.Seal.Size, v.ContentType, v.Witnesses)
		}
		links = append(links, v.Link)
		kept = append(kept, body)
	}
	// The links the receipts prove are the chain's: the last one is the sealed head.
	code, body := get(t, srv.URL+"/v1/chains/"+ws)
	if code != http.StatusOK || !strings.Contains(string(body), links[12].String()) {
		t.Fatalf("head: %d %s, last receipt's link %s", code, body, links[12])
	}

	// CHAP 0.2's content type, as the 0.2 reference Coordinators name their statements.
	code, body02 := get(t, url(4, "?content_type=application/chap%2Bjson%3Bversion%3D0.2"))
	if code != http.StatusOK {
		t.Fatalf("0.2: %d %s", code, body02)
	}
	r02, err := entryreceipt.Parse(body02)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := entryreceipt.Verify(r02, trust); err != nil || v.ContentType != "application/chap+json;version=0.2" || v.Link != links[4] {
		t.Fatalf("0.2: %+v %v", v, err)
	}
	if code, body := get(t, url(4, "?content_type=application/chap%2Bjson;version=0.2")); code != http.StatusBadRequest || !strings.Contains(string(body), "%3B") {
		t.Fatalf("a raw ';': %d %s", code, body)
	}
	if code, body := get(t, url(4, "?content_type=application/json")); code != http.StatusBadRequest || !strings.Contains(string(body), "bad_query") {
		t.Fatalf("a foreign content type: %d %s", code, body)
	}

	// One changed byte anywhere in the signed parts fails the receipt.
	r, _ := entryreceipt.Parse(kept[3])
	flips := 0
	for _, part := range []struct {
		name string
		b    *[]byte
	}{{"statement", &r.Statement}, {"seal", &r.Seal}} {
		orig := append([]byte(nil), (*part.b)...)
		for _, at := range spread(len(orig), 97) {
			(*part.b)[at] ^= 0x01
			if _, err := entryreceipt.Verify(r, trust); err == nil {
				t.Errorf("%s: byte %d flipped still verifies", part.name, at)
			}
			copy(*part.b, orig)
			flips++
		}
	}
	cp := r.Checkpoint
	for _, at := range spread(len(cp), 41) {
		b := []byte(cp)
		b[at] ^= 0x01
		r.Checkpoint = string(b)
		if _, err := entryreceipt.Verify(r, trust); err == nil {
			t.Errorf("checkpoint: byte %d (%q) flipped still verifies", at, cp[at])
		}
		flips++
	}
	r.Checkpoint = cp
	if _, err := entryreceipt.Verify(r, trust); err != nil {
		t.Fatalf("restored: %v", err)
	}
	r.Seq = 4
	if _, err := entryreceipt.Verify(r, trust); !errors.Is(err, entryreceipt.ErrStatement) {
		t.Errorf("seq 3's receipt claimed for seq 4: %v", err)
	}
	t.Logf("%d single-byte changes refused", flips)

	// Another operator's keys refuse it.
	_, other := start(t, t.TempDir())
	_, ob := get(t, other.URL+"/.well-known/evident-trust")
	otf, err := trustfile.Parse(ob)
	if err != nil {
		t.Fatal(err)
	}
	otrust, _ := entryreceipt.TrustFrom(otf)
	r, _ = entryreceipt.Parse(kept[3])
	if _, err := entryreceipt.Verify(r, otrust); !errors.Is(err, entryreceipt.ErrUntrustedKey) {
		t.Errorf("under another operator's trust file: %v", err)
	}

	if *updateVectors {
		dir := filepath.Join("..", "..", "..", "testvectors", "entry-receipt")
		for name, b := range map[string][]byte{"trust.json": tb, "receipt-seq3.json": kept[3], "receipt-seq12.json": kept[12], "receipt-seq4-chap-0.2.json": body02} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// spread returns up to n positions spread over [0, size).
func spread(size, n int) []int {
	if size <= n {
		out := make([]int, size)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i * (size - 1) / (n - 1)
	}
	return out
}

// TestEntryReceiptLargeRecord: a record past the 4 MiB bound of SCITT statements (a recorded
// refusal whose request carries 6 MiB) still gets its entry statement and entry receipt, and
// the receipt verifies.
func TestEntryReceiptLargeRecord(t *testing.T) {
	j := loadRef(t, "ts", "small")
	srv, c := refDaemon(t)
	res, err := c.Submit(t.Context(), j.workspace, j.records())
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("é", 3<<20) // 6 MiB of UTF-8
	rec := fmt.Appendf(nil, `{"seq":%d,"arrived":"2023-11-14T22:14:00.000Z","request":{"jsonrpc":"2.0","id":"r-big","method":"task.create",`+
		`"params":{"workspace":%q,"from":"human:mallory@example.org","input":{"text":%q}}},"outcome":{"status":"refused","code":-32011},"prev_hash":%q}`,
		j.count, j.workspace, big, res.Head.String())
	if _, err := c.Submit(t.Context(), j.workspace, [][]byte{rec}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Seal(t.Context(), j.workspace, false); err != nil {
		t.Fatal(err)
	}
	er, err := c.EntryReceiptObject(t.Context(), j.workspace, j.count, "")
	if err != nil {
		t.Fatal(err)
	}
	trust, err := entryreceipt.TrustFrom(fetchTrust(t, srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	v, err := entryreceipt.Verify(er, trust)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Record) < 6<<20 || v.Seq != j.count {
		t.Fatalf("record of %d bytes at %d", len(v.Record), v.Seq)
	}
	if code, _ := get(t, fmt.Sprintf("%s/v1/chains/%s/entries/%d/statement", srv.URL, j.workspace, j.count)); code != http.StatusOK {
		t.Fatalf("statement: %d", code)
	}
}
