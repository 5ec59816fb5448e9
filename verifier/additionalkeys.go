package verifier

import (
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/tlogpolicy"
	"github.com/evident-log/evident/trustfile"
)

// pqVerifiers returns the ML-DSA-44 checkpoint keys a checkpoint may be signed with: the
// pinned ones, or without a pin the log's current one (trust/log-mldsa.vkey), and every
// additional checkpoint signer of that type that trust/key-history.json lists (role
// additional, current or retired; pinned, when any is), so that checkpoints signed before
// the additional signer was rotated keep their post-quantum signature in bundles exported
// after the rotation. Checkpoints carry no signing time, so a retired signer's window is
// recorded, not enforced.
func (v *verifier) pqVerifiers() []note.Verifier {
	if len(v.pq.keys) == 0 {
		return nil
	}
	out := append([]note.Verifier(nil), v.pq.keys...)
	if v.history == nil {
		return out
	}
	for _, c := range v.history.CheckpointKeys {
		if c.Role != bundle.RoleAdditional || !trustfile.IsMLDSA44(c.VKey) || !v.pins.pqPinned(c.VKey) {
			continue
		}
		nv, err := tlogpolicy.NewCosignatureVerifier(c.VKey)
		if err != nil || nv.Name() != v.r.Manifest.Log.Origin {
			continue
		}
		dup := false
		for _, o := range out {
			dup = dup || o.KeyHash() == nv.KeyHash()
		}
		if !dup {
			out = append(out, nv)
		}
	}
	return out
}
