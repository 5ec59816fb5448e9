package entryreceipt_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/evident-log/evident/entryreceipt"
	"github.com/evident-log/evident/ledger/canonical"
)

// TestAnchoredCoordinatorReceipts: every receipt the live CHAP reference Coordinators (TS and
// Python 0.2.10) returned from audit.submit_to_scitt through the adapters
// (testvectors/chap-anchored) verifies under the trust file kept beside it, and proves the
// envelope the Coordinator's own audit log holds at that seq, in CHAP 0.2's content type.
func TestAnchoredCoordinatorReceipts(t *testing.T) {
	for _, coord := range []string{"ts", "py"} {
		t.Run(coord, func(t *testing.T) {
			dir := filepath.Join("..", "testvectors", "chap-anchored", coord)
			trust := loadTrustFile(t, filepath.Join(dir, "trust.json"))
			// The Coordinator's audit log: the canonical envelope at each (workspace, seq).
			logged := map[string]map[uint64][]byte{}
			af, err := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range bytes.Split(bytes.TrimSpace(af), []byte("\n")) {
				var e struct {
					Seq      uint64          `json:"seq"`
					Envelope json.RawMessage `json:"envelope"`
				}
				if err := json.Unmarshal(line, &e); err != nil {
					t.Fatal(err)
				}
				var p struct {
					Params struct {
						Workspace string `json:"workspace"`
					} `json:"params"`
				}
				json.Unmarshal(e.Envelope, &p)
				c, err := canonical.Canonicalize(e.Envelope, canonical.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if logged[p.Params.Workspace] == nil {
					logged[p.Params.Workspace] = map[uint64][]byte{}
				}
				logged[p.Params.Workspace][e.Seq] = c
			}
			f, err := os.Open(filepath.Join(dir, "receipts.jsonl.gz"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			zr, err := gzip.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(zr)
			sc.Buffer(nil, 1<<20)
			n := 0
			for sc.Scan() {
				var line struct {
					Workspace string          `json:"workspace"`
					Seq       uint64          `json:"seq"`
					Receipt   json.RawMessage `json:"receipt"`
				}
				if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
					t.Fatal(err)
				}
				r, err := entryreceipt.Parse(line.Receipt)
				if err != nil {
					t.Fatalf("%s seq %d: %v", line.Workspace, line.Seq, err)
				}
				v, err := entryreceipt.Verify(r, trust)
				if err != nil {
					t.Fatalf("%s seq %d: %v", line.Workspace, line.Seq, err)
				}
				want, ok := logged[line.Workspace][line.Seq]
				if v.Chain != line.Workspace || v.Seq != line.Seq || !ok || !bytes.Equal(v.Record, want) ||
					v.ContentType != "application/chap+json;version=0.2" {
					t.Fatalf("%s seq %d: the receipt proves %s seq %d (%s), not the logged envelope", line.Workspace, line.Seq, v.Chain, v.Seq, v.ContentType)
				}
				n++
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			if n < 1000 {
				t.Fatalf("%d receipts", n)
			}
			t.Logf("%d receipts of the live %s Coordinator verified", n, coord)
		})
	}
}
