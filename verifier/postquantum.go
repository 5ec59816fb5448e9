package verifier

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"

	"filippo.io/mldsa"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/misbehaviour"
	"github.com/evident-log/evident/tlogpolicy"
	"github.com/evident-log/evident/trustfile"
)

const maxPQKeyFile = 8 << 10 // an ML-DSA-44 vkey is under 2 KiB of base64

// pqState is what the verifier checks the checkpoints' post-quantum signatures with.
type pqState struct {
	// keys are the pinned ML-DSA-44 log keys, or, when none is pinned, the bundle's
	// trust/log-mldsa.vkey; empty when there is neither.
	keys []note.Verifier
	// pinned says keys are the caller's pins, not the bundle's.
	pinned bool
	// bundleBad is set when the bundle's key file is unusable (CodeTrust) or not pinned
	// (CodeTrustMismatch): no post-quantum signature is then reported verified.
	bundleBad Code
	// bundleKey is the bundle's trust/log-mldsa.vkey when it parses, pinned or not.
	bundleKey note.Verifier
}

// loadPQKey reads trust/log-mldsa.vkey, the log's ML-DSA-44 checkpoint key, and chooses the
// keys the post-quantum signatures are checked with: the pinned ones whenever any is pinned
// (with or without the bundle's file), else the bundle's, unpinned. Without either there is
// no post-quantum check, unless Options.RequirePQ asks for one.
func (v *verifier) loadPQKey() []Check {
	if len(v.pins.pqVerify) > 0 {
		v.pq.keys, v.pq.pinned = v.pins.pqVerify, true
	}
	c := Check{Name: CheckTrustLogPQKey, Where: bundle.LogPQKeyFile}
	if !v.listed(bundle.LogPQKeyFile) {
		switch {
		case v.pq.pinned:
			c.Where, c.Status = "pinned trust", Verified
			c.Detail = fmt.Sprintf("the bundle names no post-quantum (ML-DSA-44) log key; the checkpoints' post-quantum signatures are checked with the pinned key(s) %s", keyNames(v.pq.keys))
		case v.o.RequirePQ:
			c.Status, c.Code = NotEvaluated, CodePQKeyMissing
			c.Detail = "post-quantum signatures are required, but the bundle names no ML-DSA-44 log key and none is pinned: no checkpoint's post-quantum signature can be evaluated"
		default:
			return nil
		}
		return []Check{c}
	}
	vkey, pv, problem := v.readPQKey()
	v.pq.bundleKey = pv
	switch {
	case problem != "":
		v.pq.bundleBad = CodeTrust
		c.Status, c.Code, c.Detail = Broken, CodeTrust, problem
	case !v.pq.pinned:
		v.pq.keys = []note.Verifier{pv}
		c.Status, c.Code = NotEvaluated, CodeTrustNotPinned
		c.Detail = fmt.Sprintf("post-quantum (ML-DSA-44) checkpoint key %s taken from the bundle, not pinned: the other checks use it, but that it is the log's key is not established (%s)", keyNames(v.pq.keys), PinAdvice)
	case !v.pins.pqPinned(vkey):
		v.pq.bundleBad = CodeTrustMismatch
		c.Status, c.Code = Broken, CodeTrustMismatch
		c.Detail = fmt.Sprintf("the bundle's post-quantum (ML-DSA-44) log key %s+%08x is not among the %d pinned key(s) %s: the checkpoints are checked with the pinned ones", pv.Name(), pv.KeyHash(), len(v.pq.keys), keyNames(v.pq.keys))
	default:
		c.Status = Verified
		c.Detail = fmt.Sprintf("post-quantum (ML-DSA-44) checkpoint key %s+%08x is the pinned key", pv.Name(), pv.KeyHash())
	}
	return []Check{c}
}

// readPQKey reads and parses trust/log-mldsa.vkey; problem says why it is unusable.
func (v *verifier) readPQKey() (vkey string, pv note.Verifier, problem string) {
	b, err := v.readSmall(bundle.LogPQKeyFile, maxPQKeyFile)
	if err != nil {
		return "", nil, err.Error()
	}
	vkey = strings.TrimSpace(string(b))
	pv, err = tlogpolicy.NewCosignatureVerifier(vkey)
	switch {
	case err != nil:
		return "", nil, "not a signed-note verifier key: " + err.Error()
	case !trustfile.IsMLDSA44(vkey):
		return "", nil, "not an ML-DSA-44 key (signed-note key type 0x06)"
	case pv.Name() != v.r.Manifest.Log.Origin:
		return "", nil, fmt.Sprintf("the key is named %.80q, not the log origin %.80q", pv.Name(), v.r.Manifest.Log.Origin)
	}
	return vkey, pv, ""
}

// keyNames lists verifiers as name+hash.
func keyNames(vs []note.Verifier) string {
	var s []string
	for _, k := range vs {
		s = append(s, fmt.Sprintf("%s+%08x", k.Name(), k.KeyHash()))
	}
	return strings.Join(s, ", ")
}

// checkPQ checks the log's ML-DSA-44 signature on every verified checkpoint note. A signature
// line of a key checked with that does not verify is broken whatever the options (the note was
// altered after signing, or signed by someone else under the log's key name and hash). A
// checkpoint without one is not evaluated under Options.RequirePQ and otherwise only counted.
// Signatures are verified only under a pinned key: with the bundle's own key they are at best
// not evaluated (trust_not_pinned), and with a bundle key that is unusable or not pinned they
// are not evaluated either.
func (v *verifier) checkPQ() []Check {
	vs := v.pqVerifiers()
	if len(vs) == 0 {
		if c, ok := v.unnamedPQSignatures(); ok {
			return []Check{c}
		}
		if v.o.RequirePQ && v.listed(bundle.LogPQKeyFile) {
			// The key file is unusable (trust.log_pq_key says why): nothing is established.
			return []Check{{Name: CheckLogPQSignature, Status: NotEvaluated, Code: CodeTrust,
				Detail: "no usable post-quantum log key (see trust.log_pq_key): the checkpoints' post-quantum signatures are not evaluated"}}
		}
		return nil
	}
	checks, signed, missing := v.pqSignatures(vs)
	if len(missing) > 0 && v.o.RequirePQ {
		checks = append(checks, Check{Name: CheckLogPQSignature, Status: NotEvaluated, Code: CodePQSigMissing,
			Detail:   fmt.Sprintf("post-quantum signatures are required, but %d checkpoint(s) carry no ML-DSA-44 signature by the log: they are established by Ed25519 alone", len(missing)),
			Evidence: firstN(missing, maxEvidence)})
	}
	if len(checks) > 0 {
		return checks
	}
	return []Check{v.pqSummary(signed, missing)}
}

// unnamedPQSignatures reports, when neither a pin nor the bundle names the log's post-quantum
// key, the checkpoints that carry an ML-DSA-44 signature under the log's name all the same:
// their key is pinned by nothing, so log.pq_signature is not evaluated (trust_not_pinned) —
// as it is when the bundle names that key — rather than absent.
func (v *verifier) unnamedPQSignatures() (Check, bool) {
	if v.listed(bundle.LogPQKeyFile) {
		return Check{}, false
	}
	known := v.knownKeyHashes()
	var evidence []string
	for _, n := range v.distinctNotes() {
		for _, k := range v.foreignPQKeys(n.raw, known) {
			evidence = append(evidence, fmt.Sprintf("%s on tree size %d in %s", k, n.size, n.source))
		}
	}
	if len(evidence) == 0 {
		return Check{}, false
	}
	return Check{Name: CheckLogPQSignature, Status: NotEvaluated, Code: CodeTrustNotPinned,
		Detail:   fmt.Sprintf("%d ML-DSA-44 signature(s) under the log's name, but no post-quantum log key is pinned and the bundle names none: that the log made them is not established (%s)", len(evidence), PinAdvice),
		Evidence: firstN(evidence, maxEvidence)}, true
}

// pqSignatures verifies the post-quantum signature of every distinct checkpoint note with vs:
// broken checks for invalid ones and for ML-DSA-44 signatures under the log's name by a key the
// log is not known by, the count of valid ones and where none is.
func (v *verifier) pqSignatures(vs []note.Verifier) (broken []Check, signed int, missing []string) {
	notes := v.distinctNotes()
	known := v.knownKeyHashes()
	for _, n := range notes {
		if keys := v.foreignPQKeys(n.raw, known); len(keys) > 0 {
			broken = append(broken, Check{Name: CheckLogPQSignature, Status: Broken, Code: CodeTrustMismatch, Where: n.source,
				Detail:   fmt.Sprintf("the checkpoint of tree size %d carries an ML-DSA-44 signature under the log's name by a key that is none of the log's known keys (pinned, in the bundle, or in its key history): a post-quantum signature by a key that is not pinned", n.size),
				Evidence: keys})
		}
		_, err := note.Open(n.raw, note.VerifierList(vs...))
		var invalid *note.InvalidSignatureError
		switch {
		case err == nil:
			signed++
		case errors.As(err, &invalid):
			broken = append(broken, Check{Name: CheckLogPQSignature, Status: Broken, Code: CodePQSigInvalid, Where: n.source,
				Detail:   fmt.Sprintf("the checkpoint of tree size %d carries a signature line of the log's ML-DSA-44 key that does not verify: the checkpoint was altered after signing", n.size),
				Evidence: []string{n.source}})
		default:
			missing = append(missing, fmt.Sprintf("tree size %d in %s", n.size, n.source))
		}
	}
	return broken, signed, missing
}

// knownKeyHashes returns the key hashes of every checkpoint key the log is known by: the
// pinned Ed25519 and ML-DSA-44 keys, the bundle's current ones, and those its key history
// lists (current or retired).
func (v *verifier) knownKeyHashes() map[uint32]bool {
	known := map[uint32]bool{}
	add := func(vkey string) {
		if vs, err := misbehaviour.Verifiers([]string{vkey}); err == nil { // Ed25519 or ML-DSA-44
			known[vs[0].KeyHash()] = true
		}
	}
	for _, k := range append(slices.Clone(v.pins.logKeys), v.pins.pqKeys...) {
		add(k)
	}
	for _, k := range []note.Verifier{v.logKey, v.pq.bundleKey} {
		if k != nil {
			known[k.KeyHash()] = true
		}
	}
	if v.history != nil {
		for _, c := range v.history.CheckpointKeys {
			add(c.VKey)
		}
	}
	return known
}

// pqSignatureSize is the decoded size of an ML-DSA-44 cosignature/v1 signature line: the key
// hash, the timestamp and the signature (C2SP tlog-cosignature).
const pqSignatureSize = 4 + 8 + mldsa.MLDSA44SignatureSize

// foreignPQKeys returns, as name+hash, the keys of the note's signature lines that are named
// for the log's origin, have the size of an ML-DSA-44 cosignature and whose key hash is not in
// known: post-quantum signatures that claim to be the log's by a key the log is not known by.
func (v *verifier) foreignPQKeys(raw []byte, known map[uint32]bool) []string {
	_, err := note.Open(raw, note.VerifierList())
	var unverified *note.UnverifiedNoteError
	if !errors.As(err, &unverified) {
		return nil
	}
	var out []string
	for _, s := range unverified.Note.UnverifiedSigs {
		if s.Name != v.r.Manifest.Log.Origin || known[s.Hash] {
			continue
		}
		if b, err := base64.StdEncoding.DecodeString(s.Base64); err == nil && len(b) == pqSignatureSize {
			out = append(out, fmt.Sprintf("ML-DSA-44 signature by key %s+%08x", s.Name, s.Hash))
		}
	}
	return out
}

// pqSummary is the log.pq_signature check when no signature was invalid: verified only when
// some checkpoint carries a valid signature by a pinned key that the bundle does not contradict.
func (v *verifier) pqSummary(signed int, missing []string) Check {
	c := Check{Name: CheckLogPQSignature, Status: Verified,
		Detail: fmt.Sprintf("%d checkpoint(s) carry a valid ML-DSA-44 signature by the log's pinned post-quantum key", signed)}
	switch {
	case v.pq.bundleBad != "":
		c.Status, c.Code = NotEvaluated, v.pq.bundleBad
		c.Detail = fmt.Sprintf("%d checkpoint(s) carry a valid ML-DSA-44 signature by a pinned post-quantum key, but the bundle's trust/log-mldsa.vkey is unusable or not pinned (see trust.log_pq_key): the post-quantum signatures are not established", signed)
	case signed == 0:
		c.Status, c.Code = NotEvaluated, CodePQSigMissing
		c.Detail = fmt.Sprintf("no checkpoint carries a valid ML-DSA-44 signature by the log's post-quantum key %s: %d checkpoint(s) carry none, so no post-quantum signature is established", keyNames(v.pq.keys), len(missing))
		c.Evidence = firstN(missing, maxEvidence)
		return c
	case !v.pq.pinned:
		c.Status, c.Code = NotEvaluated, CodeTrustNotPinned
		c.Detail = fmt.Sprintf("%d checkpoint(s) carry a valid ML-DSA-44 signature by the bundle's post-quantum key, which is not pinned: that the log signed them is not established (%s)", signed, PinAdvice)
	}
	if len(missing) > 0 {
		c.Detail += fmt.Sprintf("; %d carry none (not required: --require-pq makes that not evaluated)", len(missing))
		c.Evidence = firstN(missing, maxEvidence)
	}
	return c
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
	met := 0
	notes := v.distinctNotes()
	for _, n := range notes {
		r := q.Evaluate(n.raw, fr)
		if r.Satisfied {
			met++
			continue
		}
		checks = append(checks, Check{Name: CheckWitnessPQQuorum, Status: NotEvaluated, Code: CodePQWitnessUnmet, Where: n.source,
			Detail:   fmt.Sprintf("post-quantum signatures are required, and the ML-DSA-44 cosignatures on the checkpoint of tree size %d do not meet the witness quorum (%s) by themselves (ML-DSA-44 witnesses in the policy: %s)", n.size, p.Describe(), orNone(names)),
			Evidence: []string{"ML-DSA-44 cosignatures by: " + orNone(r.Cosigned)}})
	}
	if met > 0 && met == len(notes) {
		checks = append(checks, Check{Name: CheckWitnessPQQuorum, Status: Verified,
			Detail: fmt.Sprintf("every checkpoint (%d) is cosigned by the witness quorum with ML-DSA-44 cosignatures alone: %s", met, p.Describe())})
	}
	return checks
}
