package verifier

import (
	"crypto"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/tlogpolicy"
	"github.com/evident-log/evident/trustfile"
)

// PinAdvice says how to pin trust; unpinned trust.* checks and Report.Hint carry it.
const PinAdvice = "pin the operator's keys: evident trust fetch URL, then evident verify --trust FILE"

// pins is what the caller pinned, from Options.TrustedLogKeys, Options.TrustedIssuers and
// Options.Trust together.
type pins struct {
	logKeys   []string           // Ed25519 checkpoint vkeys
	pqKeys    []string           // ML-DSA-44 checkpoint vkeys
	pqVerify  []note.Verifier    // pqKeys as verifiers
	issuers   []crypto.PublicKey // statement and receipt keys
	policySet bool               // a trust file was given: its policy (or none) is the pinned one
	policy    *tlogpolicy.Policy // the pinned witness policy; nil with policySet: the operator names none
}

// collectPins merges the options' pins, each log key once: a key pinned twice (by the trust
// file and by TrustedLogKeys) would make two identical verifiers, which note.VerifierList
// refuses as ambiguous. An ML-DSA-44 vkey in TrustedLogKeys pins the post-quantum key. A
// trust file that does not pass trustfile's Check is an error of the caller, not of the bundle.
func collectPins(o Options) (pins, error) {
	var p pins
	for _, k := range o.TrustedLogKeys {
		if trustfile.IsMLDSA44(k) {
			p.pqKeys = appendNew(p.pqKeys, k)
		} else {
			p.logKeys = appendNew(p.logKeys, k)
		}
	}
	p.issuers = append(p.issuers, o.TrustedIssuers...)
	if t := o.Trust; t != nil {
		keys, policy, err := t.Checked()
		if err != nil {
			return pins{}, fmt.Errorf("verifier: pinned %w", err)
		}
		p.logKeys = appendNew(p.logKeys, t.LogKeys...)
		p.pqKeys = appendNew(p.pqKeys, t.LogMLDSAKeys...)
		p.issuers = append(p.issuers, keys...)
		p.policy, p.policySet = policy, true
	}
	for _, k := range p.pqKeys {
		nv, err := tlogpolicy.NewCosignatureVerifier(k)
		if err != nil {
			return pins{}, fmt.Errorf("verifier: pinned ML-DSA-44 log key %.80q: %w", k, err)
		}
		p.pqVerify = append(p.pqVerify, nv)
	}
	return p, nil
}

// appendNew appends each vkey, without surrounding space, that list does not hold yet.
func appendNew(list []string, vkeys ...string) []string {
	for _, k := range vkeys {
		if k = strings.TrimSpace(k); !slices.Contains(list, k) {
			list = append(list, k)
		}
	}
	return list
}

// pqPinned says whether an ML-DSA-44 vkey may be used: it is pinned, or nothing pinned any.
func (p *pins) pqPinned(vkey string) bool {
	return len(p.pqKeys) == 0 || slices.Contains(p.pqKeys, vkey)
}

// pinHint returns PinAdvice when a check is not evaluated for want of a pin.
func pinHint(checks []Check) string {
	for _, c := range checks {
		if c.Code == CodeTrustNotPinned && c.Status == NotEvaluated {
			return "the bundle's own keys were used and are not pinned, so the verdict cannot be verified: " + PinAdvice
		}
	}
	return ""
}
