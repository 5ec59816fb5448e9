package verifier

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/receipts"
)

// loadKeyHistory reads trust/key-history.json when the bundle has one: every key must be a
// well-formed COSE_Key whose RFC 9679 thumbprint is its kid and which trust/issuers.cbor
// also holds. Bundles without the file are verified as before (no windows checked).
func (v *verifier) loadKeyHistory() []Check {
	if !v.listed(bundle.KeyHistoryFile) {
		return nil
	}
	c := Check{Name: CheckTrustKeyHistory, Where: bundle.KeyHistoryFile}
	b, err := v.readSmall(bundle.KeyHistoryFile, 1<<20)
	if err != nil {
		c.Status, c.Code, c.Detail = Broken, CodeTrust, err.Error()
		return []Check{c}
	}
	h, err := bundle.ParseKeyHistory(b)
	if err != nil {
		c.Status, c.Code, c.Detail = Broken, CodeTrust, err.Error()
		return []Check{c}
	}
	for _, k := range h.Keys {
		pub, err := receipts.ParseCOSEKey(k.COSEKey)
		if err != nil {
			c.Status, c.Code, c.Detail = Broken, CodeTrust, fmt.Sprintf("key %s: %v", k.KID, err)
			return []Check{c}
		}
		tp, _ := receipts.KeyThumbprint(pub)
		if hex.EncodeToString(tp) != k.KID {
			c.Status, c.Code, c.Detail = Broken, CodeTrust, fmt.Sprintf("key %s: its thumbprint is %x", k.KID, tp)
			return []Check{c}
		}
		if !v.issuersErr && len(v.keysFor(tp)) == 0 {
			c.Status, c.Code, c.Detail = Broken, CodeTrust, fmt.Sprintf("key %s is in the key history but not in %s", k.KID, bundle.IssuersFile)
			return []Check{c}
		}
		until := k.NotAfter
		if until == "" {
			until = "current"
		}
		c.Evidence = append(c.Evidence, fmt.Sprintf("kid %s %s..%s", k.KID, k.NotBefore, until))
	}
	v.history = h
	c.Status = Verified
	c.Detail = fmt.Sprintf("%d service key(s) with validity windows, %d checkpoint key(s): signatures are checked against the window of their key", len(h.Keys), len(h.CheckpointKeys))
	return []Check{c}
}

// keyWindow checks that a signature by kid dated iat (CWT iat, seconds) falls inside the
// key's window. Without a key history, or without iat, there is nothing to check.
func (v *verifier) keyWindow(kid []byte, iat int64) error {
	if v.history == nil || iat == 0 {
		return nil
	}
	k, ok := v.history.Lookup(kid)
	if !ok {
		return fmt.Errorf("kid %x is not in %s", kid, bundle.KeyHistoryFile)
	}
	t := time.Unix(iat, 0).UTC()
	if !k.ValidAt(t) {
		until := k.NotAfter
		if until == "" {
			until = "now"
		}
		return fmt.Errorf("signed at %s by key %s, which was in use only from %s to %s", t.Format(time.RFC3339), k.KID, k.NotBefore, until)
	}
	return nil
}
