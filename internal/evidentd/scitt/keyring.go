package scitt

import (
	"bytes"
	"context"
	"crypto"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/servicekey"
	"github.com/fxamacker/cbor/v2"
	"github.com/sigstore/sigstore/pkg/signature/kms"
)

// OpenSigner returns the service's statement and receipt key named by ref: a KMS URI
// (anything with "://", e.g. "awskms://…", "gcpkms://…", "hashivault://…") resolved
// through sigstore/sigstore's signature/kms package, or else a PEM file path handled by
// LoadOrCreateKey (created on first start, optionally encrypted with password).
//
// KMS providers: sigstore v1.10 keeps each cloud provider in its own Go module with its
// cloud SDK; evidentd links none of them (they would add hundreds of modules). A KMS URI
// therefore reaches its KMS through sigstore's KMS CLI plugin protocol: an executable
// "sigstore-kms-<scheme>" on PATH. Keys must be Ed25519 or ECDSA P-256.
func OpenSigner(ctx context.Context, ref string, password []byte) (crypto.Signer, error) {
	if !strings.Contains(ref, "://") {
		return LoadOrCreateKey(ref, password)
	}
	sv, err := kms.Get(ctx, ref, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("service key %s: %w", ref, err)
	}
	s, _, err := sv.CryptoSigner(ctx, func(error) {})
	if err != nil {
		return nil, fmt.Errorf("service key %s: %w", ref, err)
	}
	return s, nil
}

// KeyRing is the service's key history: the current statement and receipt key and every
// retired one with its validity window, and the checkpoint keys. It is what
// /.well-known/scitt-keys serves and what export writes into trust/key-history.json.
type KeyRing struct {
	mu   sync.RWMutex
	path string
	hist *bundle.KeyHistory
}

// OpenKeyRing reads the key history at path (servicekey.HistoryFile beside the service
// key), records current as the current key and logVKey as the primary checkpoint key if
// they are not already (closing the windows of the keys they replace), and writes the
// history back when it changed. A current key the history lists as retired is refused.
func OpenKeyRing(path string, current crypto.PublicKey, logVKey string, now time.Time) (*KeyRing, error) {
	h, err := servicekey.ReadHistory(path)
	if err != nil {
		return nil, err
	}
	changed, err := servicekey.Record(h, current, now)
	if err != nil {
		return nil, err
	}
	if logVKey != "" && servicekey.RecordCheckpointKey(h, logVKey, bundle.RolePrimary, now) {
		changed = true
	}
	if changed {
		if err := servicekey.WriteHistory(path, h); err != nil {
			return nil, fmt.Errorf("key history: %w", err)
		}
	}
	return &KeyRing{path: path, hist: h}, nil
}

// SetAdditionalSigners records vkeys (C2SP signed-note verifier keys) as the log's current
// additional checkpoint signers (role additional, e.g. the ML-DSA-44 signer): a signer not
// yet current opens a window at now, a current additional signer missing from vkeys is
// retired at now. The history is written back when it changed. A bundle exported before
// such a rotation carries the verifier keys it needs; one exported after it carries the
// retired signer's window, so checkpoints it signed stay attributable.
func (k *KeyRing) SetAdditionalSigners(vkeys []string, now time.Time) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	h := *k.hist
	h.CheckpointKeys = append([]bundle.CheckpointKey(nil), k.hist.CheckpointKeys...)
	changed := false
	for _, c := range k.hist.CheckpointKeys {
		if c.Role == bundle.RoleAdditional && c.NotAfter == "" && !slices.Contains(vkeys, c.VKey) {
			changed = servicekey.RetireCheckpointKey(&h, c.VKey, now) || changed
		}
	}
	for _, vk := range vkeys {
		changed = servicekey.RecordCheckpointKey(&h, vk, bundle.RoleAdditional, now) || changed
	}
	if !changed {
		return nil
	}
	if err := servicekey.WriteHistory(k.path, &h); err != nil {
		return fmt.Errorf("key history: %w", err)
	}
	k.hist = &h
	return nil
}

// History returns a copy of the key history.
func (k *KeyRing) History() *bundle.KeyHistory {
	k.mu.RLock()
	defer k.mu.RUnlock()
	c := *k.hist
	c.Keys = append([]bundle.HistoryKey(nil), k.hist.Keys...)
	c.CheckpointKeys = append([]bundle.CheckpointKey(nil), k.hist.CheckpointKeys...)
	return &c
}

// KeySet returns the COSE_KeySet (a CBOR array of COSE_Key) of every statement and
// receipt key, current and retired, oldest first: the content of trust/issuers.cbor and
// of /.well-known/scitt-keys.
func (k *KeyRing) KeySet() ([]byte, error) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	ks := make([]cbor.RawMessage, 0, len(k.hist.Keys))
	for _, hk := range k.hist.Keys {
		ks = append(ks, hk.COSEKey)
	}
	return cbor.Marshal(ks)
}

// Key returns the COSE_Key whose RFC 9679 thumbprint is kid.
func (k *KeyRing) Key(kid []byte) ([]byte, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	hk, ok := k.hist.Lookup(kid)
	if !ok {
		return nil, false
	}
	return bytes.Clone(hk.COSEKey), true
}

// Current returns the hex kid of the current key.
func (k *KeyRing) Current() string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	for _, hk := range k.hist.Keys {
		if hk.NotAfter == "" {
			return hk.KID
		}
	}
	return ""
}
