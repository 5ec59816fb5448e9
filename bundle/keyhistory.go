package bundle

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/evident-log/evident/ledger/strictjson"
)

// KeyHistoryFile is the optional trust file that gives every service key its validity
// window, so that statements, seals and receipts signed before a key rotation keep
// verifying after it. trust/issuers.cbor stays a plain COSE_KeySet (every key the history
// names, current and retired) for readers that do not know the history.
const KeyHistoryFile = "trust/key-history.json"

// KeyHistoryFormat is KeyHistory.Format for this version.
const KeyHistoryFormat = "evident-key-history/v1"

// Key uses in a key history.
const (
	UseStatement = "statement" // signs statements (seals, entry statements, policies)
	UseReceipt   = "receipt"   // signs RFC 9942 receipts
)

// Checkpoint key roles.
const (
	RolePrimary    = "primary"    // the log's checkpoint key (trust/log.vkey)
	RoleAdditional = "additional" // an additional checkpoint signer (e.g. post-quantum)
)

// ErrKeyHistory reports a key history that does not parse or contradicts itself.
var ErrKeyHistory = errors.New("invalid key history")

// KeyHistory lists the service's keys over time. Times are RFC 3339 UTC; NotAfter empty
// means the key is still in use.
type KeyHistory struct {
	Format         string          `json:"format"`
	Keys           []HistoryKey    `json:"keys"`
	CheckpointKeys []CheckpointKey `json:"checkpoint_keys,omitempty"`
}

// HistoryKey is one statement or receipt key and when it was in use.
type HistoryKey struct {
	// KID is the hex RFC 9679 thumbprint (SHA-256) of the key.
	KID string `json:"kid"`
	// COSEKey is the public COSE_Key (RFC 9052 section 7), base64 in JSON.
	COSEKey []byte `json:"cose_key"`
	// Use lists UseStatement and/or UseReceipt.
	Use []string `json:"use"`
	// NotBefore is when the key started signing.
	NotBefore string `json:"not_before"`
	// NotAfter is when the key was retired; empty while current.
	NotAfter string `json:"not_after,omitempty"`
}

// CheckpointKey is one checkpoint signer (a C2SP signed-note verifier key) and its window.
type CheckpointKey struct {
	VKey      string `json:"vkey"`
	Role      string `json:"role"`
	NotBefore string `json:"not_before"`
	NotAfter  string `json:"not_after,omitempty"`
}

// ParseKeyHistory reads a key history strictly: known fields only, the format string,
// hex kids, RFC 3339 times with NotBefore <= NotAfter, no kid twice.
func ParseKeyHistory(b []byte) (*KeyHistory, error) {
	var h KeyHistory
	if err := strictjson.Decode(b, &h, 8, maxJSONFile); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKeyHistory, err)
	}
	if err := h.Check(); err != nil {
		return nil, err
	}
	return &h, nil
}

// Check validates the history.
func (h *KeyHistory) Check() error {
	if h.Format != KeyHistoryFormat {
		return fmt.Errorf("%w: format %q, want %q", ErrKeyHistory, h.Format, KeyHistoryFormat)
	}
	seen := map[string]bool{}
	for i, k := range h.Keys {
		if kid, err := hex.DecodeString(k.KID); err != nil || len(kid) != 32 {
			return fmt.Errorf("%w: key %d: kid %q is not a hex SHA-256 thumbprint", ErrKeyHistory, i, k.KID)
		}
		if seen[k.KID] {
			return fmt.Errorf("%w: kid %s listed twice", ErrKeyHistory, k.KID)
		}
		seen[k.KID] = true
		if len(k.COSEKey) == 0 {
			return fmt.Errorf("%w: key %s has no cose_key", ErrKeyHistory, k.KID)
		}
		for _, u := range k.Use {
			if u != UseStatement && u != UseReceipt {
				return fmt.Errorf("%w: key %s: use %q", ErrKeyHistory, k.KID, u)
			}
		}
		if _, _, err := window(k.NotBefore, k.NotAfter); err != nil {
			return fmt.Errorf("%w: key %s: %v", ErrKeyHistory, k.KID, err)
		}
	}
	for i, c := range h.CheckpointKeys {
		if c.VKey == "" || (c.Role != RolePrimary && c.Role != RoleAdditional) {
			return fmt.Errorf("%w: checkpoint key %d: vkey and role (primary|additional) are required", ErrKeyHistory, i)
		}
		if _, _, err := window(c.NotBefore, c.NotAfter); err != nil {
			return fmt.Errorf("%w: checkpoint key %d: %v", ErrKeyHistory, i, err)
		}
	}
	return nil
}

func window(nb, na string) (time.Time, time.Time, error) {
	from, err := time.Parse(time.RFC3339Nano, nb)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("not_before: %v", err)
	}
	if na == "" {
		return from, time.Time{}, nil
	}
	to, err := time.Parse(time.RFC3339Nano, na)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("not_after: %v", err)
	}
	if to.Before(from) {
		return time.Time{}, time.Time{}, errors.New("not_after is before not_before")
	}
	return from, to, nil
}

// Marshal encodes the history as indented JSON.
func (h *KeyHistory) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Lookup returns the key with the given thumbprint.
func (h *KeyHistory) Lookup(kid []byte) (HistoryKey, bool) {
	want := hex.EncodeToString(kid)
	for _, k := range h.Keys {
		if k.KID == want {
			return k, true
		}
	}
	return HistoryKey{}, false
}

// ValidAt reports whether the key was in use at t (NotBefore <= t, and t <= NotAfter when
// the key is retired). Signing times have second precision (CWT iat), so the window is
// widened to whole seconds.
func (k HistoryKey) ValidAt(t time.Time) bool {
	from, to, err := window(k.NotBefore, k.NotAfter)
	if err != nil {
		return false
	}
	if t.Before(from.Truncate(time.Second)) {
		return false
	}
	return to.IsZero() || !t.After(to.Truncate(time.Second).Add(time.Second))
}
