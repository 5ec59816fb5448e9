package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReceiptVerifyEntryReceipts: `evident receipt verify --trust T R…` verifies the entry
// receipts a live evidentd made (testvectors/entry-receipt), says broken for a changed one,
// could not run for one of a later format, and refuses mixed modes as a usage error.
func TestReceiptVerifyEntryReceipts(t *testing.T) {
	dir := filepath.Join("..", "..", "testvectors", "entry-receipt")
	trust := filepath.Join(dir, "trust.json")
	r3 := filepath.Join(dir, "receipt-seq3.json")
	r12 := filepath.Join(dir, "receipt-seq12.json")
	code, out, errs := cli("receipt", "verify", "--trust", trust, r3, r12)
	if code != exitVerified || strings.Count(out, "VERIFIED ") != 2 || !strings.Contains(out, "entry 12") || !strings.Contains(out, "cosigned by w1, w2") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	b, _ := os.ReadFile(r3)
	bad := writeTemp(t, "bad.json", bytes.Replace(b, []byte(`"seq": 3`), []byte(`"seq": 5`), 1))
	code, out, errs = cli("receipt", "verify", "--trust", trust, "-json", r3, bad)
	if code != exitBroken {
		t.Fatalf("changed seq: exit %d\n%s%s", code, out, errs)
	}
	var lines []entryReceiptResult
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r entryReceiptResult
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		lines = append(lines, r)
	}
	if len(lines) != 2 || lines[0].Verdict != "verified" || *lines[0].Seq != 3 || lines[1].Verdict != "broken" || !strings.Contains(lines[1].Error, "seq") {
		t.Fatalf("json: %+v", lines)
	}
	newer := writeTemp(t, "v2.json", bytes.Replace(b, []byte("entry-receipt/v1"), []byte("entry-receipt/v2"), 1))
	if code, _, errs := cli("receipt", "verify", "--trust", trust, newer); code != exitFailure || !strings.Contains(errs, "newer Evident") {
		t.Fatalf("v2: exit %d %s", code, errs)
	}
	if code, _, errs := cli("receipt", "verify", "--trust", trust, "--key", trust, r3); code != exitUsage || !strings.Contains(errs, "--trust takes entry receipts") {
		t.Fatalf("mixed: exit %d %s", code, errs)
	}
	if code, _, _ := cli("receipt", "verify", "--trust", trust); code != exitUsage {
		t.Fatalf("no receipt: exit %d", code)
	}
}
