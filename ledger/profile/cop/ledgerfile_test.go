package cop_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/copscenario"
	"github.com/evident-log/evident/ledger/profile/cop"
)

// ledgerOf writes the COP Ledger of a scenario Topic with a fresh node key.
func ledgerOf(t testing.TB) ([][]byte, []byte, *cop.Node) {
	t.Helper()
	recs, err := copscenario.ClaimsTopic("urn:cop:topic:scan", time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	_, k, _ := ed25519.GenerateKey(nil)
	node, err := cop.NewNode("urn:cop:node:test", k)
	if err != nil {
		t.Fatal(err)
	}
	lw := cop.NewLedgerWriter(*node)
	var b bytes.Buffer
	for i, r := range recs {
		line, err := lw.Append(r, time.Date(2026, 3, 2, 8, 0, i, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteString("\n")
	}
	return recs, b.Bytes(), node
}

func noLimit([]byte) error { return nil }

// TestScanLedger: a whole ledger verifies record by record; an altered record stops the scan
// at its number with the check's detail; a limit refuses a line before it is parsed; a
// cancelled context is an error, not a verdict.
func TestScanLedger(t *testing.T) {
	recs, ledgerBytes, node := ledgerOf(t)
	check := func() *cop.LedgerCheck {
		return &cop.LedgerCheck{Keys: map[string]crypto.PublicKey{node.KeyID: node.Signer.Public()}, RequireSignature: true}
	}
	chk := check()
	s, err := cop.ScanLedger(context.Background(), bytes.NewReader(append([]byte("\n"), ledgerBytes...)), chk, noLimit)
	if err != nil || s.Err != nil || s.Records != len(recs) || s.Broken != 0 || chk.Signed != len(recs) || s.First.Index != 0 || s.Last.Index != uint64(len(recs)-1) {
		t.Fatalf("scan %+v %v", s, err)
	}
	lines := bytes.SplitAfter(ledgerBytes, []byte("\n"))
	lines[2] = bytes.Replace(lines[2], []byte(`"createdAt":"20`), []byte(`"createdAt":"19`), 1)
	s, err = cop.ScanLedger(context.Background(), bytes.NewReader(bytes.Join(lines, nil)), check(), noLimit)
	if err != nil || s.Broken != 3 || s.Records != 2 || s.Err == nil || cop.BrokenDetail(s.Err) == "" {
		t.Fatalf("altered third record: %+v %v", s, err)
	}
	tooLong := errors.New("too long")
	s, _ = cop.ScanLedger(context.Background(), bytes.NewReader(ledgerBytes), check(), func([]byte) error { return tooLong })
	if s.Broken != 1 || !errors.Is(s.Err, tooLong) || cop.BrokenDetail(s.Err) != "too long" {
		t.Fatalf("limit: %+v", s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := cop.ScanLedger(ctx, bytes.NewReader(ledgerBytes), check(), noLimit); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// TestReadEvents: raw events and a bundle's entry lines give the same events by id; a line
// that is no event names its line.
func TestReadEvents(t *testing.T) {
	recs, _, _ := ledgerOf(t)
	var raw, entries bytes.Buffer
	for _, r := range recs {
		raw.Write(r)
		raw.WriteString("\n\n")
		entries.WriteString(`{"seq":1,"record":`)
		entries.Write(r)
		entries.WriteString("}\n")
	}
	a, err := cop.ReadEvents(&raw, "raw", 1<<20)
	if err != nil || len(a) != len(recs) {
		t.Fatalf("raw: %d %v", len(a), err)
	}
	b, err := cop.ReadEvents(&entries, "entries", 1<<20)
	if err != nil || len(b) != len(recs) {
		t.Fatalf("entries: %d %v", len(b), err)
	}
	for id, r := range a {
		if !bytes.Equal(b[id], r) {
			t.Fatalf("event %s differs", id)
		}
	}
	if _, err := cop.ReadEvents(strings.NewReader(string(recs[0])+"\n{}\n"), "f", 1<<20); err == nil || !strings.Contains(err.Error(), "f line 2") {
		t.Fatalf("a bad line: %v", err)
	}
}

// FuzzReadLedgerFiles: whatever the bytes, ScanLedger and ReadEvents return without panic;
// a scan reports a broken record exactly when it has a reason, and never more records than
// the input has lines; every event ReadEvents keeps parses under its id. (TestScanLedger
// reads a whole ledger back in full.)
func FuzzReadLedgerFiles(f *testing.F) {
	recs, ledgerBytes, node := ledgerOf(f)
	f.Add(ledgerBytes)
	f.Add(bytes.Join(recs, []byte("\n")))
	f.Add([]byte("\n\r\n{}\n[]"))
	f.Add([]byte(`{"seq":0,"record":{"id":"x"}}`))
	keys := map[string]crypto.PublicKey{node.KeyID: node.Signer.Public()}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := cop.ScanLedger(context.Background(), bytes.NewReader(data), &cop.LedgerCheck{Keys: keys}, noLimit)
		if err != nil {
			t.Fatalf("a reader that cannot fail failed: %v", err)
		}
		if (s.Broken != 0) != (s.Err != nil) || s.Records > bytes.Count(data, []byte("\n"))+1 {
			t.Fatalf("scan %+v", s)
		}
		if s.Broken != 0 && (s.Broken != s.Records+1 || cop.BrokenDetail(s.Err) == "") {
			t.Fatalf("broken scan %+v", s)
		}
		if evs, err := cop.ReadEvents(bytes.NewReader(data), "fuzz", 1<<16); err == nil {
			for id, r := range evs {
				if e, err := cop.Parse(r); err != nil || e.ID != id {
					t.Fatalf("event %q read back as %v", id, err)
				}
			}
		}
	})
}
