package verifier

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/tlogpolicy"
	"github.com/evident-log/evident/trustfile"
)

const maxPQKeyFile = 8 << 10 // an ML-DSA-44 vkey is under 2 KiB of base64

// loadPQKey reads trust/log-mldsa.vkey, the log's ML-DSA-44 checkpoint key. Without it there
// is no post-quantum check, unless Options.RequirePQ asks for one.
func (v *verifier) loadPQKey() []Check {
	c := Check{Name: CheckTrustLogPQKey, Where: bundle.LogPQKeyFile}
	if !v.listed(bundle.LogPQKeyFile) {
		if !v.o.RequirePQ {
			return nil
		}
		c.Status, c.Code = NotEvaluated, CodePQKeyMissing
		c.Detail = "post-quantum signatures are required, but the bundle names no ML-DSA-44 log key: no checkpoint's post-quantum signature can be evaluated"
		return []Check{c}
	}
	b, err := v.readSmall(bundle.LogPQKeyFile, maxPQKeyFile)
	if err != nil {
		c.Status, c.Code, c.Detail = Broken, CodeTrust, err.Error()
		return []Check{c}
	}
	vkey := strings.TrimSpace(string(b))
	pv, err := tlogpolicy.NewCosignatureVerifier(vkey)
	switch {
	case err != nil:
		c.Status, c.Code, c.Detail = Broken, CodeTrust, "not a signed-note verifier key: "+err.Error()
	case !trustfile.IsMLDSA44(vkey):
		c.Status, c.Code, c.Detail = Broken, CodeTrust, "not an ML-DSA-44 key (signed-note key type 0x06)"
	case pv.Name() != v.r.Manifest.Log.Origin:
		c.Status, c.Code, c.Detail = Broken, CodeTrust, fmt.Sprintf("the key is named %.80q, not the log origin %.80q", pv.Name(), v.r.Manifest.Log.Origin)
	case len(v.pins.pqKeys) == 0:
		v.pqKey = pv
		c.Status, c.Code = NotEvaluated, CodeTrustNotPinned
		c.Detail = fmt.Sprintf("post-quantum (ML-DSA-44) checkpoint key %s+%08x taken from the bundle, not pinned: the other checks use it, but that it is the log's key is not established (%s)", pv.Name(), pv.KeyHash(), PinAdvice)
	case !v.pins.pqPinned(vkey):
		c.Status, c.Code = Broken, CodeTrustMismatch
		c.Detail = fmt.Sprintf("the bundle's post-quantum (ML-DSA-44) log key %s+%08x is not among the %d pinned key(s)", pv.Name(), pv.KeyHash(), len(v.pins.pqKeys))
	default:
		v.pqKey = pv
		c.Status = Verified
		c.Detail = fmt.Sprintf("post-quantum (ML-DSA-44) checkpoint key %s+%08x is the pinned key", pv.Name(), pv.KeyHash())
	}
	return []Check{c}
}

// checkPQ checks the log's ML-DSA-44 signature on every verified checkpoint note. A signature
// line of that key that does not verify is broken whatever the options (the note was altered
// after signing, or signed by someone else under the log's key name and hash). A checkpoint
// without one is not evaluated under Options.RequirePQ and otherwise only counted.
func (v *verifier) checkPQ() []Check {
	if v.pqKey == nil {
		if v.o.RequirePQ && v.listed(bundle.LogPQKeyFile) {
			// The key file is unusable (trust.log_pq_key says why): nothing is established.
			return []Check{{Name: CheckLogPQSignature, Status: NotEvaluated, Code: CodeTrust,
				Detail: "no usable post-quantum log key (see trust.log_pq_key): the checkpoints' post-quantum signatures are not evaluated"}}
		}
		return nil
	}
	var checks []Check
	var missing []string
	seen := map[[32]byte]bool{}
	signed := 0
	for _, n := range v.wit.notes {
		h := sha256.Sum256(n.raw)
		if seen[h] {
			continue
		}
		seen[h] = true
		_, err := note.Open(n.raw, note.VerifierList(v.pqVerifiers()...)) // current and retired ML-DSA-44 keys (additionalkeys.go)
		var invalid *note.InvalidSignatureError
		switch {
		case err == nil:
			signed++
		case errors.As(err, &invalid):
			checks = append(checks, Check{Name: CheckLogPQSignature, Status: Broken, Code: CodePQSigInvalid, Where: n.source,
				Detail:   fmt.Sprintf("the checkpoint of tree size %d carries a signature line of the log's ML-DSA-44 key that does not verify: the checkpoint was altered after signing", n.size),
				Evidence: []string{n.source}})
		default:
			missing = append(missing, fmt.Sprintf("tree size %d in %s", n.size, n.source))
		}
	}
	if len(missing) > 0 && v.o.RequirePQ {
		checks = append(checks, Check{Name: CheckLogPQSignature, Status: NotEvaluated, Code: CodePQSigMissing,
			Detail:   fmt.Sprintf("post-quantum signatures are required, but %d checkpoint(s) carry no ML-DSA-44 signature by the log: they are established by Ed25519 alone", len(missing)),
			Evidence: firstN(missing, maxEvidence)})
	}
	if len(checks) == 0 {
		c := Check{Name: CheckLogPQSignature, Status: Verified,
			Detail: fmt.Sprintf("%d checkpoint(s) carry a valid ML-DSA-44 signature by the log's post-quantum key", signed)}
		if len(missing) > 0 {
			c.Detail += fmt.Sprintf("; %d carry none (not required: --require-pq makes that not evaluated)", len(missing))
			c.Evidence = firstN(missing, maxEvidence)
		}
		checks = append(checks, c)
	}
	return checks
}

// checkPQQuorum evaluates, under Options.RequirePQ, the witness policy counting ML-DSA-44
// cosignatures only: a quorum met only with Ed25519 cosignatures is not a post-quantum one.
func (v *verifier) checkPQQuorum(p *tlogpolicy.Policy) []Check {
	if !v.o.RequirePQ {
		return nil
	}
	q := *p
	q.Witnesses = nil
	var names []string
	for _, w := range p.Witnesses {
		if trustfile.IsMLDSA44(w.VKey) {
			q.Witnesses = append(q.Witnesses, w)
			names = append(names, w.Name)
		}
	}
	fr := tlogpolicy.Freshness{Now: v.o.Now(), MaxAge: v.o.WitnessMaxAge}
	var checks []Check
	seen := map[[32]byte]bool{}
	met := 0
	for _, n := range v.wit.notes {
		h := sha256.Sum256(n.raw)
		if seen[h] {
			continue
		}
		seen[h] = true
		r := q.Evaluate(n.raw, fr)
		if r.Satisfied {
			met++
			continue
		}
		checks = append(checks, Check{Name: CheckWitnessPQQuorum, Status: NotEvaluated, Code: CodePQWitnessUnmet, Where: n.source,
			Detail:   fmt.Sprintf("post-quantum signatures are required, and the ML-DSA-44 cosignatures on the checkpoint of tree size %d do not meet the witness quorum (%s) by themselves (ML-DSA-44 witnesses in the policy: %s)", n.size, p.Describe(), orNone(names)),
			Evidence: []string{"ML-DSA-44 cosignatures by: " + orNone(r.Cosigned)}})
	}
	if met > 0 && met == len(seen) {
		checks = append(checks, Check{Name: CheckWitnessPQQuorum, Status: Verified,
			Detail: fmt.Sprintf("every checkpoint (%d) is cosigned by the witness quorum with ML-DSA-44 cosignatures alone: %s", met, p.Describe())})
	}
	return checks
}
