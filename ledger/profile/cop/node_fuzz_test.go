package cop_test

import (
	"crypto"
	"errors"
	"testing"
	"time"

	"github.com/evident-log/evident/internal/scenario/copscenario"
	"github.com/evident-log/evident/internal/testkeys"
	"github.com/evident-log/evident/ledger/profile/cop"
)

// FuzzParsePublicKey: any input is a key (or node key file) that round-trips through
// MarshalNodeKeys, or a typed ErrNodeKey refusal; never a panic.
func FuzzParsePublicKey(f *testing.F) {
	k := testkeys.Ed25519("fuzz-node")
	kid, _ := cop.NodeKeyID(k.Public())
	file, _ := cop.MarshalNodeKeys([]cop.NodeKey{{NodeID: "urn:cop:node:x", KeyID: kid, Public: k.Public()}})
	f.Add(file)
	f.Add([]byte(`{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"k"}`))
	f.Add([]byte(`{"format":"evident-cop-nodes/v1","nodes":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := cop.ParsePublicKey(data)
		if err != nil {
			if !errors.Is(err, cop.ErrNodeKey) {
				t.Fatalf("untyped refusal %T: %v", err, err)
			}
			return
		}
		for i := range keys {
			if keys[i].KeyID == "" {
				keys[i].KeyID = "k"
			}
			if keys[i].NodeID == "" {
				keys[i].NodeID = "n"
			}
		}
		b, err := cop.MarshalNodeKeys(keys)
		if err != nil {
			t.Fatalf("a parsed key does not marshal: %v", err)
		}
		back, err := cop.ParseNodeKeys(b)
		if err != nil || len(back) != len(keys) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// FuzzLedgerCheck: after a valid prefix, any line is verified or refused with a
// *LedgerError naming its index; a refusal never panics and a signed record only passes
// when its signature verifies.
func FuzzLedgerCheck(f *testing.F) {
	recs, err := copscenario.ClaimsTopic("urn:cop:topic:claim-4711", time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC))
	if err != nil {
		f.Fatal(err)
	}
	node, err := cop.NewNode("urn:cop:node:evident", testkeys.Ed25519("evident-node"))
	if err != nil {
		f.Fatal(err)
	}
	w := cop.NewLedgerWriter(*node)
	var lines [][]byte
	for _, r := range recs {
		l, err := w.Append(r, time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
		if err != nil {
			f.Fatal(err)
		}
		lines = append(lines, l)
	}
	for _, l := range lines[2:] {
		f.Add(l)
	}
	f.Add([]byte(`{"index":2}`))
	f.Add([]byte(`[]`))
	keys := map[string]crypto.PublicKey{node.KeyID: node.Signer.Public()}
	f.Fuzz(func(t *testing.T, data []byte) {
		chk := &cop.LedgerCheck{Keys: keys, RequireSignature: true}
		for _, l := range lines[:2] {
			if err := chk.Next(l); err != nil {
				t.Fatal(err)
			}
		}
		if err := chk.Next(data); err != nil {
			var le *cop.LedgerError
			if !errors.As(err, &le) || le.Index != 2 {
				t.Fatalf("refusal %v does not name record 2", err)
			}
			return
		}
		if chk.Signed != 3 || chk.Last.Index != 2 {
			t.Fatalf("accepted record 2 unsigned or misindexed: %+v", chk.Last)
		}
	})
}
