package chap

import (
	"crypto/ed25519"
	"fmt"

	"github.com/evident-log/evident/ledger"
)

// Bootstrap (docs/profiles/chap.md, "Bootstrap"). The reference Coordinator checks no
// signature on workspace.create and participant.join: the creator signs workspace.create with
// a key that only its following participant.join introduces. Evident does not wave the create
// through. A workspace.create signed with a kid its sender has not registered, while the
// sender has no registered key at all, is admitted as pending: the key history remembers its
// seq, sender, kid, signing input and signature. The participant.join that registers that kid
// for that sender verifies it (its Admission.Verify checks the create's signature too, so a bad
// one refuses the join at ingest with bad_signature naming the create's seq). A pending create
// still unresolved at the end of the chain is a critical finding (bootstrap_unverified).

// PendingCreate is a signed workspace.create whose key has not arrived yet.
type PendingCreate struct {
	Seq     uint64 `json:"seq"`
	Sender  string `json:"sender"`
	Kid     string `json:"kid"`
	Message []byte `json:"message"` // JCS(envelope − sig)
	Value   []byte `json:"sig"`
}

// ResolvedCreate is a pending create and the key that now verifies it.
type ResolvedCreate struct {
	PendingCreate
	Public ed25519.PublicKey
}

// bootstrapping reports whether r may be admitted with its signature pending: a signed
// workspace.create from a sender that has no registered key.
func (k *Keyring) bootstrapping(r *Record) bool {
	if r.Method != "workspace.create" || r.Sig == nil || r.From == "" {
		return false
	}
	p := k.Participants[r.From]
	return p == nil || len(p.Keys) == 0
}

// resolvePending takes out of k the pending creates whose key the join r has just registered
// (same sender, same kid) and returns them with that key. The key checks the create although
// the create's ts precedes the join's: it is the key the create names, bound to its sender by
// the join, and it is used for that one earlier record only.
func (k *Keyring) resolvePending(r *Record) []ResolvedCreate {
	if len(k.Pending) == 0 {
		return nil
	}
	uri := joinParticipant(r)
	p := k.Participants[uri]
	if p == nil {
		return nil
	}
	keys, err := joinKeys(r)
	if err != nil {
		return nil
	}
	var out []ResolvedCreate
	rest := k.Pending[:0:0]
	for _, pc := range k.Pending {
		resolved := false
		if pc.Sender == uri {
			for _, nk := range keys {
				if nk.Kid == pc.Kid && registered(p, nk) {
					out = append(out, ResolvedCreate{PendingCreate: pc, Public: nk.Public})
					resolved = true
					break
				}
			}
		}
		if !resolved {
			rest = append(rest, pc)
		}
	}
	if len(out) > 0 {
		k.Pending = rest
		if len(k.Pending) == 0 {
			k.Pending = nil
		}
	}
	return out
}

// registered reports whether the join's key nk was registered for p (a re-join's keys may not be).
func registered(p *Participant, nk Key) bool {
	for _, k := range p.Keys {
		if k.Kid == nk.Kid && k.Public.Equal(nk.Public) {
			return true
		}
	}
	return false
}

// VerifyPending checks the signatures of the pending creates this record resolves.
func (c *SignatureCheck) VerifyPending() error {
	for _, rc := range c.Resolves {
		if !ed25519.Verify(rc.Public, rc.Message, rc.Value) {
			return ledger.Refuse(ledger.CodeBadSignature, "the workspace.create at seq %d, signed by %.80q with key %.80q, does not verify with the key this join introduces", rc.Seq, rc.Sender, rc.Kid)
		}
	}
	return nil
}

// The State reports the bootstrap rule's findings to the verifier.
var _ ledger.Auditor = (*State)(nil)

// Checks names the check the CHAP state reports: chap.bootstrap.
func (s *State) Checks() []ledger.CheckName { return []ledger.CheckName{CheckBootstrap} }

// Findings returns a critical finding for each workspace.create whose signing key no join
// introduced by the end of the chain, in seq order.
func (s *State) Findings() []ledger.Finding {
	if s.Keys == nil {
		return nil
	}
	var out []ledger.Finding
	for i, pc := range s.Keys.Pending {
		if i == ledger.MaxFindings {
			break
		}
		out = append(out, ledger.Finding{Check: CheckBootstrap, Severity: ledger.Critical, Code: CodeBootstrapUnverified, Seq: pc.Seq,
			Detail: fmt.Sprintf("workspace.create signed by %.80q with key %.80q, which no participant.join of %.80q introduced: its signature was never verified", pc.Sender, pc.Kid, pc.Sender)})
	}
	return out
}
