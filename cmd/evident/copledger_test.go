package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/copscenario"
	"github.com/evident-log/evident/ledger/profile/cop"
)

// TestCOPLedgerVerify: a ledger imported from another COP node (ECDSA P-256, §11.5) verifies
// offline with its node key file, a PEM key or against the events; a tampered record, a
// foreign key or a missing key is reported with the right exit code.
func TestCOPLedgerVerify(t *testing.T) {
	dir := t.TempDir()
	const topic = "urn:cop:topic:claim-4711"
	recs, err := copscenario.ClaimsTopic(topic, time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	node := cop.Node{ID: "urn:cop:node:beta", KeyID: "urn:cop:key:beta-2026", Signer: key}
	w := cop.NewLedgerWriter(node)
	var ledger bytes.Buffer
	for i, r := range recs {
		l, err := w.Append(r, time.Date(2026, 3, 2, 8, 0, i, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		ledger.Write(append(l, '\n'))
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	nodes, err := cop.MarshalNodeKeys([]cop.NodeKey{{NodeID: node.ID, KeyID: node.KeyID, Public: key.Public()}})
	if err != nil {
		t.Fatal(err)
	}
	pemOf := func(k *ecdsa.PrivateKey) []byte {
		der, _ := x509.MarshalPKIXPublicKey(k.Public())
		return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}
	nodesFile, pemFile, otherFile := write("nodes.json", nodes), write("beta.pem", pemOf(key)), write("other.pem", pemOf(other))
	events := write("events.jsonl", append(bytes.Join(recs, []byte("\n")), '\n'))
	full := write("ledger.jsonl", ledger.Bytes())
	lines := bytes.SplitAfter(ledger.Bytes(), []byte("\n"))
	midway := write("midway.jsonl", bytes.Join(lines[3:], nil))
	tampered := write("tampered.jsonl", bytes.Replace(ledger.Bytes(), []byte(`"index":4,`), []byte(`"index":4,"note":"x",`), 1))
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"node key file and events", []string{full, "--key", nodesFile, "--events", events}, exitVerified, "VERIFIED"},
		{"pem key, flags first", []string{"--key", pemFile, "--events", events, full}, exitVerified, "7 node signature(s) verified; 7 eventHash(es)"},
		{"starts mid-way", []string{midway, "--key", pemFile, "--events", events}, exitVerified, "starts at index 3"},
		{"no events", []string{full, "--key", nodesFile}, exitNotEvaluated, "give --events"},
		{"foreign key", []string{full, "--key", otherFile}, exitBroken, "line 1: node signature"},
		{"tampered record", []string{tampered, "--key", nodesFile, "--events", events}, exitBroken, "line 5"},
		{"no key", []string{full}, exitUsage, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), append([]string{"cop-ledger", "verify"}, tc.args...), &out, &errb)
			if code != tc.code || !strings.Contains(out.String(), tc.out) {
				t.Fatalf("exit %d (want %d)\n%s%s", code, tc.code, out.String(), errb.String())
			}
		})
	}
}
