package misbehaviour

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	tlog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/ledger/strictjson"
	"github.com/evident-log/evident/tlogpolicy"
	"github.com/evident-log/evident/tlogwitness"
	"github.com/evident-log/evident/trustfile"
)

// Format is Proof.Format for this version of the file format.
const Format = "evident-misbehaviour/v1"

// Kinds of Proof.
const (
	// KindSameSize: two checkpoints of one tree size with different root hashes.
	KindSameSize = "same_size_other_root"
	// KindInconsistent: checkpoints of two sizes and a consistency proof between them that
	// leads to the larger root and implies another root for the smaller tree.
	KindInconsistent = "consistency_proof_failed"
)

// Limits of a proof file.
const (
	// MaxSize bounds a proof file, or a list of them, in bytes: a witness's list of
	// MaxList proofs whose notes carry ML-DSA-44 signatures (about 10 KB each) fits.
	MaxSize = 32 << 20
	// MaxCheckpoint bounds one checkpoint note.
	MaxCheckpoint = 16 << 10
	// MaxReferences bounds the reference checkpoints kept with a proof.
	MaxReferences = 16
	// MaxList bounds the proofs in a list (a witness's forks answer).
	MaxList  = 1000
	maxDepth = 8
)

// Errors of Parse, ParseAll and New.
var (
	// ErrFormat: the data is not a proof of misbehaviour of a version this package reads.
	ErrFormat = errors.New("misbehaviour: not a proof of misbehaviour")
	// ErrNoProof: the data is a record this package knows that carries no proof (a witness's
	// refusal without its cosigned checkpoint).
	ErrNoProof = errors.New("misbehaviour: the record carries no proof")
)

// Proof is a proof-of-misbehaviour file: two checkpoint notes signed by one log that
// cannot both be true, and what is needed to see it. Checkpoints[0] is the smaller (or
// equal) tree. ConsistencyProof, base64 SHA-256 hashes, leads from Checkpoints[0]'s tree
// size to Checkpoints[1]'s (RFC 9162 §2.1.4); it is empty for KindSameSize.
type Proof struct {
	Format string `json:"format"`
	Kind   string `json:"kind"`
	Origin string `json:"origin"`
	// Observer says who found it ("witness NAME", "evident verify", "evidentd").
	Observer string `json:"observer,omitempty"`
	// Observed is when, RFC 3339.
	Observed         string   `json:"observed,omitempty"`
	Checkpoints      []string `json:"checkpoints"`
	ConsistencyProof []string `json:"consistency_proof,omitempty"`
	// References are other checkpoints of the log with witnesses' cosignatures, kept for
	// context (what else the world was shown); they are not part of the proof.
	References []string `json:"references,omitempty"`
}

// New makes a proof from two signed checkpoint notes of one origin, in either order, and
// the consistency proof from the smaller tree to the larger (nil for equal sizes). It
// checks the shape only; Check says whether it proves anything.
func New(a, b []byte, consistency [][]byte, observer string, observed time.Time) (*Proof, error) {
	ca, err := body(a)
	if err != nil {
		return nil, err
	}
	cb, err := body(b)
	if err != nil {
		return nil, err
	}
	if ca.Origin != cb.Origin {
		return nil, fmt.Errorf("%w: checkpoints of two origins, %.80q and %.80q", ErrFormat, ca.Origin, cb.Origin)
	}
	if ca.Size > cb.Size {
		a, b = b, a
	}
	p := &Proof{Format: Format, Kind: KindInconsistent, Origin: ca.Origin, Observer: observer,
		Checkpoints: []string{string(a), string(b)}}
	if !observed.IsZero() {
		p.Observed = observed.UTC().Format(time.RFC3339)
	}
	if ca.Size == cb.Size {
		p.Kind = KindSameSize
		return p, nil
	}
	for _, h := range consistency {
		p.ConsistencyProof = append(p.ConsistencyProof, base64.StdEncoding.EncodeToString(h))
	}
	return p, nil
}

// AddReference keeps another checkpoint note of the log with the proof (at most
// MaxReferences, each once).
func (p *Proof) AddReference(n []byte) {
	if len(p.References) < MaxReferences && len(n) <= MaxCheckpoint && !slices.Contains(p.References, string(n)) && !slices.Contains(p.Checkpoints, string(n)) {
		p.References = append(p.References, string(n))
	}
}

// Marshal writes the proof as indented JSON ending in a newline.
func (p *Proof) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("misbehaviour: %w", err)
	}
	return append(b, '\n'), nil
}

// Parse reads one proof file strictly: one JSON object of this Format, no unknown or
// duplicate members, two checkpoints, well-formed hashes. Errors wrap ErrFormat.
func Parse(data []byte) (*Proof, error) {
	var p Proof
	if err := strictjson.Decode(data, &p, maxDepth, MaxSize); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

func (p *Proof) validate() error {
	switch {
	case p.Format != Format:
		return fmt.Errorf("%w: format %.80q, want %q", ErrFormat, p.Format, Format)
	case p.Kind != KindSameSize && p.Kind != KindInconsistent:
		return fmt.Errorf("%w: unknown kind %.80q", ErrFormat, p.Kind)
	case p.Origin == "":
		return fmt.Errorf("%w: no origin", ErrFormat)
	case len(p.Checkpoints) != 2:
		return fmt.Errorf("%w: %d checkpoints, want 2", ErrFormat, len(p.Checkpoints))
	case len(p.ConsistencyProof) > tlogwitness.MaxProofLines:
		return fmt.Errorf("%w: consistency proof of %d hashes (at most %d)", ErrFormat, len(p.ConsistencyProof), tlogwitness.MaxProofLines)
	case len(p.References) > MaxReferences:
		return fmt.Errorf("%w: %d references (at most %d)", ErrFormat, len(p.References), MaxReferences)
	}
	if p.Observed != "" {
		if _, err := time.Parse(time.RFC3339, p.Observed); err != nil {
			return fmt.Errorf("%w: observed: %v", ErrFormat, err)
		}
	}
	for i, c := range append(slices.Clone(p.Checkpoints), p.References...) {
		if len(c) > MaxCheckpoint {
			return fmt.Errorf("%w: checkpoint %d is over %d bytes", ErrFormat, i+1, MaxCheckpoint)
		}
	}
	if _, err := p.Hashes(); err != nil {
		return err
	}
	return nil
}

// Hashes returns ConsistencyProof decoded: 32-byte SHA-256 hashes, smaller tree first as
// in the file. Errors wrap ErrFormat.
func (p *Proof) Hashes() ([][]byte, error) {
	var out [][]byte
	for i, s := range p.ConsistencyProof {
		h, err := base64.StdEncoding.Strict().DecodeString(s)
		if err != nil || len(h) != 32 {
			return nil, fmt.Errorf("%w: consistency proof hash %d is not a base64 SHA-256 hash", ErrFormat, i+1)
		}
		out = append(out, h)
	}
	return out, nil
}

// CheckpointSize returns the origin and tree size a checkpoint note's body states, without
// verifying any signature: for naming and ordering notes, never for trusting them. Errors
// wrap ErrFormat.
func CheckpointSize(note []byte) (origin string, size uint64, err error) {
	cp, err := body(note)
	if err != nil {
		return "", 0, err
	}
	return cp.Origin, cp.Size, nil
}

// body parses a checkpoint note's body without verifying any signature.
func body(n []byte) (*tlog.Checkpoint, error) {
	if len(n) > MaxCheckpoint {
		return nil, fmt.Errorf("%w: checkpoint over %d bytes", ErrFormat, MaxCheckpoint)
	}
	text, _, ok := bytes.Cut(n, []byte("\n\n"))
	if !ok {
		return nil, fmt.Errorf("%w: a checkpoint note has no signature block", ErrFormat)
	}
	var cp tlog.Checkpoint
	if _, err := cp.Unmarshal(append(text, '\n')); err != nil {
		return nil, fmt.Errorf("%w: checkpoint: %v", ErrFormat, err)
	}
	return &cp, nil
}

// legacyEvidence is the fork record evident-witness wrote before it wrote proofs.
type legacyEvidence struct {
	Kind     string `json:"kind"`
	Origin   string `json:"origin"`
	Observed string `json:"observed"`
	Held     string `json:"held"`
	Request  string `json:"request"`
}

// ParseAll reads whatever the project's tools write that holds proofs: a proof file, a JSON
// list of them (a witness's GET /<origin id>/forks), a witness fork record of the earlier
// form ({"kind","origin","observed","held","request"}) or a list of those, and a witness
// refusal kept by evidentd (Refusal) that carries a proof. An empty list (a witness that
// found no fork answers []) gives no proof and no error: a caller that needs one checks
// len. Errors wrap ErrFormat or ErrNoProof.
func ParseAll(data []byte) ([]*Proof, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%w: over %d bytes", ErrFormat, MaxSize)
	}
	t := bytes.TrimSpace(data)
	if len(t) > 0 && t[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(t, &items); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFormat, err)
		}
		if len(items) > MaxList {
			return nil, fmt.Errorf("%w: a list of %d records (at most %d)", ErrFormat, len(items), MaxList)
		}
		var out []*Proof
		for i, it := range items {
			p, err := parseOne(it)
			if err != nil {
				return nil, fmt.Errorf("record %d: %w", i+1, err)
			}
			out = append(out, p)
		}
		return out, nil
	}
	p, err := parseOne(data)
	if err != nil {
		return nil, err
	}
	return []*Proof{p}, nil
}

func parseOne(data []byte) (*Proof, error) {
	var probe struct {
		Format string `json:"format"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	switch probe.Format {
	case Format:
		return Parse(data)
	case RefusalFormat:
		r, err := ParseRefusal(data)
		if err != nil {
			return nil, err
		}
		if r.Proof == nil {
			return nil, fmt.Errorf("%w: witness %.80q refused the log's checkpoint (HTTP %d) without sending the checkpoint it holds", ErrNoProof, r.Witness, r.Status)
		}
		return r.Proof, nil
	case "":
		var e legacyEvidence
		if err := strictjson.Decode(data, &e, maxDepth, MaxSize); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrFormat, err)
		}
		if !e.complete() {
			return nil, fmt.Errorf("%w, a witness fork record or a refusal (no format member, and an earlier witness record has a known kind, held and request)", ErrFormat)
		}
		return fromLegacy(&e)
	}
	return nil, fmt.Errorf("%w: format %.80q", ErrFormat, probe.Format)
}

// complete says whether e has the members every earlier witness record has, so that JSON
// without them ({}, null) is not taken for one.
func (e *legacyEvidence) complete() bool {
	return (e.Kind == KindSameSize || e.Kind == KindInconsistent) && e.Held != "" && e.Request != ""
}

// fromLegacy turns an earlier witness fork record into a proof: the held checkpoint, and the
// submitted one with the request's proof when it starts from the held size.
func fromLegacy(e *legacyEvidence) (*Proof, error) {
	r, err := tlogwitness.ParseRequest([]byte(e.Request))
	if err != nil {
		return nil, fmt.Errorf("%w: the record's request: %w", ErrFormat, err)
	}
	held, err := body([]byte(e.Held))
	if err != nil {
		return nil, err
	}
	var cons [][]byte
	if r.OldSize == held.Size {
		cons = r.Proof
	}
	var at time.Time
	if e.Observed != "" {
		if at, err = time.Parse(time.RFC3339Nano, e.Observed); err != nil {
			return nil, fmt.Errorf("%w: the record's observed: %w", ErrFormat, err)
		}
	}
	p, err := New([]byte(e.Held), r.Checkpoint, cons, "witness", at)
	if err != nil {
		return nil, err
	}
	return p, p.validate()
}

// Keys is what a proof is checked against: the log's pinned checkpoint keys and, optionally,
// the witness policy whose cosignatures are reported.
type Keys struct {
	// LogKeys are the log's signed-note verifier keys: Ed25519 (type 0x01) and ML-DSA-44
	// (type 0x06, C2SP tlog-cosignature).
	LogKeys []string
	// Witnesses, when set, names the witnesses whose cosignatures on the checkpoints are
	// verified and listed.
	Witnesses *tlogpolicy.Policy
}

// Verifiers turns signed-note vkeys into verifiers: Ed25519 note keys, and ML-DSA-44
// cosignature keys (as the log signs its post-quantum checkpoint signature). A key given
// twice is one verifier; two different keys of one name and key hash are refused, since a
// signature line names its key by those alone.
func Verifiers(vkeys []string) ([]note.Verifier, error) {
	var out []note.Verifier
	byID := map[string]string{} // name+hash → vkey
	for _, k := range vkeys {
		k = strings.TrimSpace(k)
		v, err := verifier(k)
		if err != nil {
			return nil, err
		}
		id := keyName(v)
		switch prev, ok := byID[id]; {
		case ok && prev == k:
			continue
		case ok:
			return nil, fmt.Errorf("misbehaviour: log keys %.80q and %.80q are two keys of one name and key hash (%s): a signature line could be either's", prev, k, id)
		}
		byID[id] = k
		out = append(out, v)
	}
	return out, nil
}

// verifier parses one vkey: an Ed25519 note key or an ML-DSA-44 cosignature key.
func verifier(k string) (note.Verifier, error) {
	v, err := note.NewVerifier(k)
	if err != nil {
		if cv, cerr := tlogpolicy.NewCosignatureVerifier(k); cerr == nil && trustfile.IsMLDSA44(k) {
			v, err = cv, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("misbehaviour: log key %.80q: %w", k, err)
	}
	return v, nil
}

// keyName is a verifier's name+hash, as signature lines name their key.
func keyName(v note.Verifier) string { return fmt.Sprintf("%s+%08x", v.Name(), v.KeyHash()) }

// openPinned returns the text of note msg and the first pinned verifier (in the order given)
// one of whose signature lines verifies over it (see Signed).
func openPinned(msg []byte, vs []note.Verifier) (string, note.Verifier, error) {
	signed, v, err := Signed(msg, vs)
	if err != nil {
		return "", nil, err
	}
	n, err := note.Open(signed, note.VerifierList(v))
	if err != nil { // cannot happen: Signed checked the line
		return "", nil, err
	}
	return n.Text, v, nil
}

// Signed returns note msg without the signature lines that name a key of vs but do not
// verify, and the first key of vs (in the order given) one of whose lines verifies; it fails
// when none does. Each line is checked alone against the one key it names, so a line that
// names a key but does not verify (anyone can append one) never unsigns a note that key
// signed. Lines of other keys, witnesses' cosignatures among them, are kept as they are.
func Signed(msg []byte, vs []note.Verifier) ([]byte, note.Verifier, error) {
	split := bytes.LastIndex(msg, []byte("\n\n"))
	if split < 0 || !bytes.HasSuffix(msg, []byte("\n")) {
		return nil, nil, errors.New("not a signed note")
	}
	text := msg[:split+1]
	lines := strings.Split(strings.TrimSuffix(string(msg[split+2:]), "\n"), "\n")
	var signer note.Verifier
	var kept, invalid []string
	for _, line := range lines {
		named := false
		for _, v := range vs {
			if !namesKey(line, v) {
				continue
			}
			named = true
			one := append(append(bytes.Clone(text), '\n'), line+"\n"...)
			if _, err := note.Open(one, note.VerifierList(v)); err == nil {
				kept = append(kept, line)
				if signer == nil || slices.Index(vs, v) < slices.Index(vs, signer) {
					signer = v
				}
			} else {
				invalid = append(invalid, keyName(v))
			}
			break
		}
		if !named {
			kept = append(kept, line)
		}
	}
	switch {
	case signer != nil:
		out := append(append(bytes.Clone(text), '\n'), strings.Join(kept, "\n")+"\n"...)
		return out, signer, nil
	case len(invalid) > 0:
		return nil, nil, fmt.Errorf("the signature lines of %s do not verify", strings.Join(slices.Compact(invalid), ", "))
	}
	return nil, nil, errors.New("no signature line of a pinned key")
}

// namesKey says whether a signature line ("— name base64(hash || signature)") names v.
func namesKey(line string, v note.Verifier) bool {
	rest, ok := strings.CutPrefix(line, "— ")
	if !ok {
		return false
	}
	name, b64, _ := strings.Cut(rest, " ")
	sig, err := base64.StdEncoding.DecodeString(b64)
	return err == nil && len(sig) >= 5 && name == v.Name() && binary.BigEndian.Uint32(sig) == v.KeyHash()
}

// Side is what Check established about one checkpoint.
type Side struct {
	Size      uint64
	Root      []byte
	Signer    string   // the first pinned key (in the order given) that verified it, name+hash
	Cosigners []string // witnesses of Keys.Witnesses whose cosignature verified
}

// Result is the outcome of Check.
type Result struct {
	// Proven says the log signed two histories.
	Proven bool
	// Reason says why, or why not, in one sentence.
	Reason string
	Origin string
	Kind   string
	// Sides are the two checkpoints, smaller first, when both verified.
	Sides []Side
	// References counts the reference checkpoints that verified with the log key.
	References int
}

// Check says whether p proves that the log holding keys signed two histories: both
// checkpoints verify with a pinned log key and are of one origin, and either they are of one
// size with different roots, or the consistency proof leads from the smaller to the larger
// root's tree and implies another root for the smaller one. Anything else is not proven, with
// the reason.
func Check(p *Proof, keys Keys) Result {
	res := Result{Origin: p.Origin, Kind: p.Kind}
	notProven := func(format string, a ...any) Result {
		res.Reason = fmt.Sprintf(format, a...)
		return res
	}
	if err := p.validate(); err != nil {
		return notProven("the file is not a well-formed proof: %v", err)
	}
	vs, err := Verifiers(keys.LogKeys)
	if err != nil {
		return notProven("%v", err)
	}
	if len(vs) == 0 {
		return notProven("no log key was given to check the checkpoints' signatures with")
	}
	for i, raw := range p.Checkpoints {
		text, signer, err := openPinned([]byte(raw), vs)
		if err != nil {
			return notProven("checkpoint %d is not signed by the pinned log key (%v): the file proves nothing about this log", i+1, err)
		}
		var cp tlog.Checkpoint
		if _, err := cp.Unmarshal([]byte(text)); err != nil {
			return notProven("checkpoint %d: %v", i+1, err)
		}
		if cp.Origin != p.Origin {
			return notProven("checkpoint %d is of origin %.80q, not %.80q", i+1, cp.Origin, p.Origin)
		}
		s := Side{Size: cp.Size, Root: cp.Hash, Signer: keyName(signer)}
		if keys.Witnesses != nil {
			s.Cosigners = keys.Witnesses.Evaluate([]byte(raw), tlogpolicy.Freshness{}).Cosigned
		}
		res.Sides = append(res.Sides, s)
	}
	for _, r := range p.References {
		if _, _, err := openPinned([]byte(r), vs); err == nil {
			res.References++
		}
	}
	a, b := res.Sides[0], res.Sides[1]
	if a.Size > b.Size {
		a, b = b, a
		res.Sides[0], res.Sides[1] = a, b
	}
	if a.Size == b.Size {
		if p.Kind != KindSameSize {
			return notProven("the file says %s, but both checkpoints are of tree size %d", p.Kind, a.Size)
		}
		if bytes.Equal(a.Root, b.Root) {
			return notProven("both checkpoints are of tree size %d with the same root: they agree", a.Size)
		}
		res.Proven = true
		res.Reason = fmt.Sprintf("the log signed two checkpoints of tree size %d with different roots (%s and %s)", a.Size, b64(a.Root), b64(b.Root))
		return res
	}
	if p.Kind != KindInconsistent {
		return notProven("the file says %s, but the checkpoints are of tree sizes %d and %d", p.Kind, a.Size, b.Size)
	}
	if a.Size == 0 {
		return notProven("checkpoint 1 is of the empty tree, which every tree extends: the checkpoints are one history")
	}
	hashes, _ := p.Hashes()
	switch Consistency(a.Size, b.Size, hashes, a.Root, b.Root) {
	case Consistent:
		return notProven("the consistency proof shows tree %d extends tree %d: the checkpoints are one history", b.Size, a.Size)
	case Inconsistent:
		res.Proven = true
		res.Reason = fmt.Sprintf("the consistency proof leads to the log-signed root of tree %d and implies another root for tree %d than the log signed (%s): the two checkpoints are not one append-only history", b.Size, a.Size, b64(a.Root))
		return res
	}
	if a.Size&(a.Size-1) == 0 {
		return notProven("the consistency proof does not lead from tree %d to the log-signed root of tree %d; tree %d is a power of two, so its root is not part of such a proof and a failing proof cannot show a fork (it shows a faulty proof)", a.Size, b.Size, a.Size)
	}
	return notProven("the consistency proof does not lead to the log-signed root of tree %d, so it shows nothing about tree %d (a faulty or unrelated proof, not two histories)", b.Size, a.Size)
}

func b64(h []byte) string { return base64.StdEncoding.EncodeToString(h) }
