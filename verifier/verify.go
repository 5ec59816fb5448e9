package verifier

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/ledger/profile"

	"github.com/fxamacker/cbor/v2"
	tlog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/internal/buildinfo"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/trustfile"
)

// progressEvery is how many entries pass between two Progress calls.
const progressEvery = 4096

// Options tune Verify. The zero value is usable.
type Options struct {
	// Workers verifies record signatures in parallel; 0 means runtime.GOMAXPROCS(0).
	Workers int
	// Limits are the record limits (nesting and size) a record of the bundle may have; zero
	// fields take canonical.DefaultLimits, evidentd's defaults. A bundle from an evidentd whose
	// limits are wider verifies once these are as wide (the refusal names the value).
	Limits canonical.Limits
	// Progress, if set, is called now and then (every few thousand entries, never per entry)
	// from the goroutine that called Verify.
	Progress func(stage string, done, total uint64)
	// Now gives the report's generation time; nil means time.Now.
	Now func() time.Time
	// Checkpoints are extra checkpoints gathered elsewhere, cross-checked against the
	// bundle's (fork, consistency, witness quorum); see ExtraCheckpoint.
	Checkpoints []ExtraCheckpoint
	// WitnessMaxAge, when positive, counts only cosignatures dated within this long
	// before Now toward the witness quorum.
	WitnessMaxAge time.Duration
	// RequirePQ requires post-quantum signatures (postquantum.go): a checkpoint without the
	// log's ML-DSA-44 signature, a bundle without the log's ML-DSA-44 key, and a witness
	// quorum not met by ML-DSA-44 cosignatures alone are not evaluated. An invalid
	// post-quantum signature is broken with or without it.
	RequirePQ bool
	// TrustedLogKeys pins the log's checkpoint key: signed-note verifier keys obtained from the
	// operator out of band. When set, a bundle whose trust/log.vkey is not one of them is
	// broken, so a bundle re-signed end to end under other keys cannot verify. An ML-DSA-44
	// vkey (type 0x06) among them pins the post-quantum key: the checkpoints' ML-DSA-44
	// signatures are verified with the pinned keys, and without such a pin log.pq_signature is
	// at best not evaluated (trust_not_pinned).
	TrustedLogKeys []string
	// TrustedIssuers pins the service's statement and receipt keys (for example the COSE key
	// set of /.well-known/scitt-keys, retired keys included). When set, only bundle issuer keys
	// among them are used; a seal or receipt signed by any other key is broken.
	TrustedIssuers []crypto.PublicKey
	// Trust pins everything an operator's trust file names (docs/trust.md): its log keys and
	// issuer keys are added to TrustedLogKeys and TrustedIssuers, its ML-DSA-44 log keys pin
	// trust/log-mldsa.vkey, and its witness policy (or its lack of one) replaces the bundle's
	// for the witness quorum. Without any pin, the trust.* checks are not evaluated
	// (trust_not_pinned) and the verdict is at best not_evaluated.
	Trust *trustfile.File
	// Profiles is the registry of the profiles whose chains are replayed; nil is
	// profile.Default(), the profiles evidentd serves.
	Profiles *profile.Registry
}

type issuerKey struct {
	kid []byte
	pub crypto.PublicKey
}

// cpKey identifies a checkpoint by size and root.
type cpKey struct {
	size uint64
	root [32]byte
}

type verifier struct {
	ctx context.Context
	r   *bundle.Reader
	o   Options

	files map[string]*fileState

	logKey     note.Verifier // nil when trust/log.vkey is unusable
	issuers    []issuerKey   // empty when trust/issuers.cbor is unusable
	issuersErr bool
	history    *bundle.KeyHistory // trust/key-history.json, nil when absent (keyhistory.go)

	cpFiles  map[uint64][]byte   // log/checkpoints/<size>.checkpoint that verified, by size
	cps      map[cpKey][]string  // verified checkpoints → where they were found
	cpBroken map[string]struct{} // sources of checkpoints that did not verify

	wit witnessState // checkpoint notes and proofs for the witness checks

	pq    pqState   // the post-quantum checkpoint keys (postquantum.go)
	links linkState // consistency proofs that verified (consistency.go)
	// anchors are each chain's verified seals, by chain id: where the log holds them and the
	// checkpoints their receipts lead to (chainCheckpoints).
	anchors       map[string][]sealAnchor
	chainProofErr string // why the last chain consistency receipt did not verify (chainfork.go)

	prov provenanceState // cross-chain references (provenance.go)

	pins pins // what the caller pinned (pinning.go)

	forks []fork // checkpoints that contradict each other, for the proofs (misbehaviour.go)
}

// Verify checks a bundle offline and returns its report. It returns an error only when it
// cannot run (ctx ended, nil reader); everything wrong with the bundle is a broken check.
func Verify(ctx context.Context, r *bundle.Reader, o Options) (*Report, error) {
	if r == nil {
		return nil, errors.New("verifier: nil bundle reader")
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	v := &verifier{ctx: ctx, r: r, o: o, files: map[string]*fileState{},
		cpFiles: map[uint64][]byte{}, cps: map[cpKey][]string{}, cpBroken: map[string]struct{}{}}
	pn, err := collectPins(o)
	if err != nil {
		return nil, err
	}
	v.pins = pn
	m := &r.Manifest
	rep := &Report{Format: ReportFormat, Bundle: describe(m), Log: LogReport{Origin: m.Log.Origin, Checkpoints: []CheckpointReport{}},
		Checks: []Check{}, Chains: []ChainReport{}}

	manifestChecks := v.checkManifest()
	trustChecks := v.loadTrust(rep)
	trustChecks = append(trustChecks, v.loadKeyHistory()...)
	trustChecks = append(trustChecks, v.loadPQKey()...)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	logChecks := v.loadCheckpointFiles()
	logChecks = append(logChecks, v.loadExtraCheckpoints()...)
	var chainChecks []Check
	for _, ref := range m.Chains {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cr, checks, err := v.verifyChain(ref)
		if err != nil {
			return nil, err
		}
		rep.Chains = append(rep.Chains, cr)
		chainChecks = append(chainChecks, checks...)
	}
	chainChecks = append(chainChecks, v.provenanceChecks()...)
	chainChecks = append(chainChecks, v.verifySCITT()...) // SCITT registrations (scitt.go)
	logChecks = append(logChecks, v.checkLog(rep)...)
	logChecks = append(logChecks, v.checkWitnesses()...)
	logChecks = append(logChecks, v.checkLogProofs()...)
	logChecks = append(logChecks, v.checkLogConsistency()...)
	v.chainCheckpoints(rep)
	logChecks = append(logChecks, v.checkPQ()...)
	digestChecks := v.sweepDigests()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, part := range [][]Check{manifestChecks, digestChecks, trustChecks, chainChecks, logChecks} {
		rep.Checks = append(rep.Checks, part...)
	}
	rep.NotEvidence = notEvidence(m)
	rep.Misbehaviour = v.misbehaviourProofs()
	rep.Verdict = Fold(rep.Checks)
	rep.Hint = pinHint(rep.Checks)
	rep.Generated = o.Now().UTC().Format(time.RFC3339)
	rep.Verifier = buildinfo.Read().Program("evident")
	return rep, nil
}

func describe(m *bundle.Manifest) string {
	s := m.Format
	if m.Producer != "" {
		s += " from " + m.Producer
	}
	if m.Created != "" {
		s += ", created " + m.Created
	}
	if m.Scope.Chain != "" {
		s += ", scope chain " + m.Scope.Chain
	}
	if len(m.Scope.Chains) > 0 {
		s += ", scope chains " + strings.Join(m.Scope.Chains, ", ")
	}
	if m.Scope.Task != "" {
		s += ", scope task " + m.Scope.Task
	}
	return s
}

func (v *verifier) progress(stage string, done, total uint64) {
	if v.o.Progress != nil {
		v.o.Progress(stage, done, total)
	}
}

// checkManifest checks what bundle.Reader does not: the manifest's own consistency.
func (v *verifier) checkManifest() []Check {
	m := &v.r.Manifest
	var problems []string
	if m.Log.Origin == "" {
		problems = append(problems, "the manifest names no log origin")
	}
	seen := map[string]bool{}
	for _, c := range m.Chains {
		if seen[c.ID] {
			problems = append(problems, fmt.Sprintf("chain %q is listed twice", c.ID))
		}
		seen[c.ID] = true
	}
	problems = append(problems, scopeProblems(m)...)
	for name, d := range m.Files {
		if name == bundle.ManifestFile || !validDigest(d) {
			problems = append(problems, fmt.Sprintf("file entry %q has digest %.80q", name, d))
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		return []Check{{Name: CheckBundleManifest, Status: Broken, Code: CodeManifest, Where: bundle.ManifestFile,
			Detail: "the manifest contradicts itself", Evidence: firstN(problems, maxEvidence)}}
	}
	out := []Check{{Name: CheckBundleManifest, Status: Verified, Where: bundle.ManifestFile,
		Detail: fmt.Sprintf("%s manifest parsed: %d chain(s), %d listed file(s), log %s", m.Format, len(m.Chains), len(m.Files), m.Log.Origin)}}
	if len(m.Chains) == 0 && !v.listed(bundle.SCITTIndexFile) {
		out = append(out, Check{Name: CheckBundleChains, Status: NotEvaluated, Detail: "the bundle holds no chain"})
	}
	return out
}

// scopeProblems says where the manifest's scope and chain list disagree: the scope names the
// chain it holds, or all the chains it holds in order; a task or logical_id scope goes with a
// case slice; audit_count goes with the evidence_head it counts.
func scopeProblems(m *bundle.Manifest) []string {
	var problems []string
	ids := make([]string, len(m.Chains))
	for i, c := range m.Chains {
		ids[i] = c.ID
		if c.AuditCount != nil && c.EvidenceHead == nil {
			problems = append(problems, fmt.Sprintf("chain %.80q has an audit_count but no evidence_head", c.ID))
		}
	}
	s := &m.Scope
	switch {
	case s.Chain != "" && len(s.Chains) > 0:
		problems = append(problems, "the scope names both one chain and several")
	case len(s.Chains) > 0 && !slices.Equal(s.Chains, ids):
		problems = append(problems, fmt.Sprintf("the scope names chains %.200q, the bundle holds %.200q", s.Chains, ids))
	case s.Chain != "" && (len(ids) != 1 || ids[0] != s.Chain):
		problems = append(problems, fmt.Sprintf("the scope names chain %.80q, the bundle holds %.200q", s.Chain, ids))
	case s.Chain == "" && len(s.Chains) == 0 && len(ids) > 0:
		problems = append(problems, "the scope names none of the chains the bundle holds")
	}
	if (s.Task != "" || s.LogicalID != "") && (len(m.Chains) != 1 || m.Chains[0].Slice == nil) {
		problems = append(problems, "the scope names a task or logical_id, but the bundle holds no case slice")
	}
	return problems
}

func validDigest(d string) bool {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// maxIssuers bounds the keys trust/issuers.cbor may hold.
const maxIssuers = 256

var keySetDec = func() cbor.DecMode {
	dm, err := cbor.DecOptions{
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		IndefLength:      cbor.IndefLengthForbidden,
		TagsMd:           cbor.TagsForbidden,
		MaxNestedLevels:  4,
		MaxArrayElements: maxIssuers,
		MaxMapPairs:      64,
	}.DecMode()
	if err != nil {
		panic(err)
	}
	return dm
}()

// loadTrust reads the log's checkpoint key and the issuers' COSE keys.
func (v *verifier) loadTrust(rep *Report) []Check {
	var checks []Check
	c := Check{Name: CheckTrustLogKey, Where: bundle.LogKeyFile}
	if b, err := v.readSmall(bundle.LogKeyFile, 4<<10); err != nil {
		c.Status, c.Code, c.Detail = Broken, CodeTrust, err.Error()
	} else if lv, err := note.NewVerifier(strings.TrimSpace(string(b))); err != nil {
		c.Status, c.Code, c.Detail = Broken, CodeTrust, "not a signed-note verifier key: "+err.Error()
	} else {
		rep.Log.Key = fmt.Sprintf("%s+%08x", lv.Name(), lv.KeyHash())
		switch {
		case len(v.pins.logKeys) == 0:
			v.logKey = lv
			c.Status, c.Code = NotEvaluated, CodeTrustNotPinned
			c.Detail = fmt.Sprintf("log checkpoint key %s taken from the bundle, not pinned: the other checks use it, but that it is the log's key is not established (%s)", rep.Log.Key, PinAdvice)
		case slices.Contains(v.pins.logKeys, strings.TrimSpace(string(b))):
			v.logKey = lv
			c.Status = Verified
			c.Detail = fmt.Sprintf("log checkpoint key %s is the pinned key", rep.Log.Key)
		default:
			c.Status, c.Code = Broken, CodeTrustMismatch
			c.Detail = fmt.Sprintf("the bundle's log key %s is not among the %d pinned key(s): its checkpoints are not the pinned log's", rep.Log.Key, len(v.pins.logKeys))
		}
	}
	checks = append(checks, c)

	c = Check{Name: CheckTrustIssuers, Where: bundle.IssuersFile}
	keys, err := v.readIssuers()
	if err != nil {
		v.issuersErr = true
		c.Status, c.Code, c.Detail = Broken, CodeTrust, err.Error()
	} else if len(v.pins.issuers) == 0 {
		v.issuers = keys
		c.Status, c.Code = NotEvaluated, CodeTrustNotPinned
		c.Detail = fmt.Sprintf("%d issuer key(s) taken from the bundle, not pinned: the other checks use them, but that they are the service's keys is not established (%s)", len(keys), PinAdvice)
		for _, k := range keys {
			c.Evidence = append(c.Evidence, "kid "+hex.EncodeToString(k.kid))
		}
	} else {
		v.issuers, c = pinIssuers(keys, v.pins.issuers, c)
	}
	return append(checks, c)
}

// pinIssuers keeps the bundle's issuer keys that are pinned; the others are reported and unused.
func pinIssuers(keys []issuerKey, pinned []crypto.PublicKey, c Check) ([]issuerKey, Check) {
	trusted := map[string]bool{}
	for _, p := range pinned {
		if kid, err := receipts.KeyThumbprint(p); err == nil {
			trusted[string(kid)] = true
		}
	}
	var kept []issuerKey
	for _, k := range keys {
		if trusted[string(k.kid)] {
			kept = append(kept, k)
			c.Evidence = append(c.Evidence, "pinned kid "+hex.EncodeToString(k.kid))
		} else {
			c.Evidence = append(c.Evidence, "NOT pinned, not used: kid "+hex.EncodeToString(k.kid))
		}
	}
	if len(kept) == 0 {
		c.Status, c.Code = Broken, CodeTrustMismatch
		c.Detail = fmt.Sprintf("none of the bundle's %d issuer key(s) is among the %d pinned key(s)", len(keys), len(pinned))
		return nil, c
	}
	c.Status = Verified
	c.Detail = fmt.Sprintf("%d of the bundle's %d issuer key(s) are pinned; only those verify seals and receipts", len(kept), len(keys))
	return kept, c
}

func (v *verifier) readIssuers() ([]issuerKey, error) {
	b, err := v.readSmall(bundle.IssuersFile, 1<<20)
	if err != nil {
		return nil, err
	}
	var raw []cbor.RawMessage
	if err := keySetDec.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("not a CBOR array of COSE_Key: %v", err)
	}
	if len(raw) == 0 {
		return nil, errors.New("holds no key")
	}
	keys := make([]issuerKey, 0, len(raw))
	for i, kb := range raw {
		pub, label, err := receipts.ParseCOSEKeyKid(kb)
		if err != nil {
			return nil, fmt.Errorf("key %d: %v", i, err)
		}
		kid, err := receipts.KeyThumbprint(pub)
		if err != nil {
			return nil, fmt.Errorf("key %d: %v", i, err)
		}
		// The service labels each key with its thumbprint; another label would show a
		// reader who picks keys by kid another mapping from kids to keys than the one verified.
		if label != nil && !bytes.Equal(label, kid) {
			return nil, fmt.Errorf("key %d: kid %x is not the key's thumbprint %x", i, label, kid)
		}
		// One spelling per key: the form Evident writes (receipts.COSEKey), so that no byte of
		// the file is outside what is checked — an extra label, a missing kid or alg, another
		// CBOR encoding of the same key are refused.
		if canon, err := receipts.COSEKey(pub); err != nil || !bytes.Equal(canon, kb) {
			return nil, fmt.Errorf("key %d is not written as Evident writes a COSE_Key (kty, crv, x[, y], kid = its thumbprint, alg; deterministic CBOR)", i)
		}
		keys = append(keys, issuerKey{kid: kid, pub: pub})
	}
	return keys, nil
}

// keysFor returns the issuer keys to try for a kid: the one whose RFC 9679 thumbprint is the
// kid, or every key when the object carries no kid.
func (v *verifier) keysFor(kid []byte) []issuerKey {
	if len(kid) == 0 {
		return v.issuers
	}
	for _, k := range v.issuers {
		if string(k.kid) == string(kid) {
			return []issuerKey{k}
		}
	}
	return nil
}

// errNoLogKey is returned for checkpoints when trust/log.vkey is unusable.
var errNoLogKey = errors.New("no usable log key (see trust.log_key)")

// verifyCheckpoint checks a checkpoint note's log signature and origin and parses it. Signature
// lines must use canonical base64, so a checkpoint cannot be re-spelled and still pass.
func (v *verifier) verifyCheckpoint(raw []byte) (*tlog.Checkpoint, error) {
	if v.logKey == nil {
		return nil, errNoLogKey
	}
	if len(raw) > receipts.MaxCheckpointSize {
		return nil, fmt.Errorf("checkpoint of %d bytes is over %d", len(raw), receipts.MaxCheckpointSize)
	}
	cp, _, n, err := tlog.ParseCheckpoint(raw, v.r.Manifest.Log.Origin, v.logKey)
	if err != nil {
		return nil, err
	}
	for _, s := range append(append([]note.Signature(nil), n.Sigs...), n.UnverifiedSigs...) {
		if _, err := base64.StdEncoding.Strict().DecodeString(s.Base64); err != nil {
			return nil, fmt.Errorf("signature line of %q is not canonical base64", s.Name)
		}
	}
	if len(cp.Hash) != receipts.HashSize {
		return nil, fmt.Errorf("checkpoint root of %d bytes", len(cp.Hash))
	}
	return cp, nil
}

func (v *verifier) addCheckpoint(size uint64, root []byte, source string) {
	var k cpKey
	k.size = size
	copy(k.root[:], root)
	v.cps[k] = append(v.cps[k], source)
}

// loadCheckpointFiles verifies every log/checkpoints/<size>.checkpoint the manifest lists.
func (v *verifier) loadCheckpointFiles() []Check {
	var checks []Check
	names := v.r.List(bundle.CheckpointsDir)
	good := 0
	for _, name := range names {
		c := Check{Name: CheckLogCheckpoint, Status: Broken, Code: CodeCheckpoint, Where: name}
		raw, err := v.readSmall(name, receipts.MaxCheckpointSize)
		if err != nil {
			c.Detail = err.Error()
			checks = append(checks, c)
			v.cpBroken[name] = struct{}{}
			continue
		}
		cp, err := v.verifyCheckpoint(raw)
		if err != nil {
			c.Detail = "does not verify with the log key: " + err.Error()
			if errors.Is(err, errNoLogKey) {
				c.Status, c.Code = NotEvaluated, CodeTrust
			}
			checks = append(checks, c)
			v.cpBroken[name] = struct{}{}
			continue
		}
		if bundle.CheckpointFile(cp.Size) != name {
			c.Detail = fmt.Sprintf("holds a checkpoint of size %d, its name says otherwise", cp.Size)
			checks = append(checks, c)
			v.cpBroken[name] = struct{}{}
			continue
		}
		v.cpFiles[cp.Size] = raw
		v.addCheckpoint(cp.Size, cp.Hash, name)
		good++
	}
	if good > 0 {
		checks = append(checks, Check{Name: CheckLogCheckpoint, Status: Verified,
			Detail: fmt.Sprintf("%d checkpoint file(s) signed by the log key, origin %s", good, v.r.Manifest.Log.Origin)})
	}
	return checks
}

// checkLog looks at every verified checkpoint together: one size with two roots is a fork
// (different sizes are checkLogConsistency's).
func (v *verifier) checkLog(rep *Report) []Check {
	keys := make([]cpKey, 0, len(v.cps))
	for k := range v.cps {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].size != keys[j].size {
			return keys[i].size < keys[j].size
		}
		return string(keys[i].root[:]) < string(keys[j].root[:])
	})
	var checks []Check
	forked := false
	sizes := []uint64{}
	for i, k := range keys {
		src := append([]string(nil), v.cps[k]...)
		sort.Strings(src)
		rep.Log.Checkpoints = append(rep.Log.Checkpoints, CheckpointReport{Size: k.size, Root: ledger.RootString(k.root), Status: Verified, Sources: src})
		if i > 0 && keys[i-1].size == k.size {
			prev := keys[i-1]
			checks = append(checks, Check{Name: CheckLogFork, Status: Broken, Code: CodeFork, Where: fmt.Sprintf("tree size %d", k.size),
				Detail: fmt.Sprintf("two checkpoints signed by the log for tree size %d have different roots: the log forked", k.size),
				Evidence: []string{
					ledger.RootString(prev.root) + " in " + strings.Join(v.cps[prev], ", "),
					ledger.RootString(k.root) + " in " + strings.Join(src, ", "),
				}})
			forked = true
			v.recordForkKeys(prev, k, nil)
			rep.Log.Checkpoints[i].Status = Broken
			rep.Log.Checkpoints[i-1].Status = Broken
		}
		if len(sizes) == 0 || sizes[len(sizes)-1] != k.size {
			sizes = append(sizes, k.size)
		}
	}
	if len(keys) > 0 && !forked {
		checks = append(checks, Check{Name: CheckLogFork, Status: Verified,
			Detail: fmt.Sprintf("%d verified checkpoint(s); no two of one size disagree", len(keys))})
	}
	// Checkpoints of different sizes: checkLogConsistency (consistency.go).
	return checks
}

// registry returns the profiles the chains are replayed with (Options.Profiles).
func (v *verifier) registry() *profile.Registry {
	if v.o.Profiles == nil {
		return profile.Default()
	}
	return v.o.Profiles
}
