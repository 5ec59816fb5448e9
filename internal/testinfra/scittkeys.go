package testinfra

import (
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/evident-log/evident/receipts"
)

// KeySet indexes the COSE_KeySet a SCITT service publishes at /.well-known/scitt-keys by
// each key's RFC 9679 thumbprint, the kid its receipts name; it fails the test on a key
// that does not parse.
func KeySet(t testing.TB, body []byte) map[string]any {
	t.Helper()
	var raw []cbor.RawMessage
	if err := cbor.Unmarshal(body, &raw); err != nil {
		t.Fatalf("scitt-keys: %v", err)
	}
	out := map[string]any{}
	for _, k := range raw {
		pub, err := receipts.ParseCOSEKey(k)
		if err != nil {
			t.Fatalf("scitt-keys: %v", err)
		}
		kid, err := receipts.KeyThumbprint(pub)
		if err != nil {
			t.Fatalf("scitt-keys: %v", err)
		}
		out[string(kid)] = pub
	}
	return out
}

// VerifyReceipt checks an RFC 9942 receipt of statement as `evident receipt verify
// --statement --receipt --key scitt-keys.cbor` does: the key its kid names among keys (a
// KeySet), and the inclusion of the statement's leaf under it. It returns the parsed receipt.
func VerifyReceipt(t testing.TB, keys map[string]any, statement, rcpt []byte) *receipts.Receipt {
	t.Helper()
	r, err := receipts.ParseReceipt(rcpt)
	if err != nil {
		t.Fatal(err)
	}
	pub, ok := keys[string(r.KeyID)]
	if !ok {
		t.Fatalf("receipt kid %x is not in /.well-known/scitt-keys", r.KeyID)
	}
	entry, err := receipts.EntryHash(statement)
	if err != nil {
		t.Fatal(err)
	}
	leaf := receipts.LeafHash(entry[:])
	if _, _, err := receipts.VerifyInclusion(rcpt, leaf[:], pub); err != nil {
		t.Fatalf("receipt does not verify: %v", err)
	}
	return r
}
