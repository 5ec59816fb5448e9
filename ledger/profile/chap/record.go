package chap

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/canonical"
)

// Profile is the profile name of CHAP 0.3 chains.
const Profile = "chap/0.3"

// Record is one CHAP evidence record, parsed and canonicalised.
type Record struct {
	Object    *canonical.Object // the hashed record: the envelope as received, or {outcome, request}
	Canonical []byte            // JCS bytes of Object: what the chain link hashes
	Refusal   bool              // a recorded refusal {outcome, request}

	ID        string       // envelope id ("" when absent); for refusals, the refused request's id
	Method    string       // JSON-RPC method
	From      string       // sender Participant URI (top-level `from`, else params.from)
	Workspace string       // workspace named by the record, "" when none
	TS        time.Time    // sender timestamp (zero when absent)
	PrevHash  *ledger.Link // evidence.prev_hash, or the audit entry's prev_hash, when present
	Sig       *Signature   // top-level sig, nil when unsigned

	// Meta is the canonical JSON of the metadata members of a Coordinator audit entry
	// ({seq, arrived, envelope, prev_hash?} or {seq, arrived, request, outcome, prev_hash?},
	// as audit.read returns them), outside the hash and the signature; nil when the record
	// did not come as an audit entry (Entry).
	Meta []byte
	Seq  *uint64 // the audit entry's seq, nil when absent

	// signingInput is JCS(Object − sig), cut from the same encoding as Canonical when the
	// record has a sig member (SigningInput); nil otherwise.
	signingInput []byte
}

// entryMeta are the members of a Coordinator audit entry that are metadata about the record,
// not part of it: neither hashed nor signed.
var entryMeta = []string{"seq", "arrived", "prev_hash"}

// strictBase64 is standard base64 with padding that refuses non-zero trailing bits. It is
// made once: Strict returns a new Encoding on every call.
var strictBase64 = base64.StdEncoding.Strict()

// Signature is a parsed CHAP signature tag "ed25519:<kid>:<base64>".
type Signature struct {
	Kid   string
	Value []byte

	raw [ed25519.SignatureSize]byte // Value's storage when ParseSignature made it
}

// sigB64Len is the length of a 64-byte signature in standard base64 with padding.
const sigB64Len = 88

// ParseSignature parses a CHAP signature tag.
func ParseSignature(tag string) (*Signature, error) {
	alg, rest, ok := strings.Cut(tag, ":")
	if !ok || alg != "ed25519" {
		return nil, errors.New(`signature tag must be "ed25519:<kid>:<base64>"`)
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 {
		return nil, errors.New(`signature tag must be "ed25519:<kid>:<base64>"`)
	}
	b64 := rest[i+1:]
	if len(b64) == sigB64Len {
		return parseSigValue(rest[:i], b64)
	}
	v, err := strictBase64.DecodeString(b64)
	// The decoder skips \r and \n even in strict mode: require the one canonical spelling,
	// so a signature tag cannot be varied without invalidating it.
	var spelled [sigB64Len]byte // room for a 64-byte signature in standard base64
	if err != nil || string(base64.StdEncoding.AppendEncode(spelled[:0], v)) != b64 {
		return nil, errors.New("signature value is not standard base64 with padding")
	}
	if len(v) != ed25519.SignatureSize {
		return nil, errors.New("ed25519 signature must be 64 bytes")
	}
	return &Signature{Kid: rest[:i], Value: v}, nil
}

// parseSigValue is ParseSignature's end for a value of the one length a 64-byte signature
// has in base64: decoded on the stack into the Signature's own array, so a signature costs
// one allocation. It refuses what the general path refuses, with the same errors.
func parseSigValue(kid, b64 string) (*Signature, error) {
	var src [sigB64Len]byte
	copy(src[:], b64)
	var dec [sigB64Len / 4 * 3]byte
	n, err := strictBase64.Decode(dec[:], src[:])
	var spelled [sigB64Len]byte
	if err != nil || string(base64.StdEncoding.AppendEncode(spelled[:0], dec[:n])) != b64 {
		return nil, errors.New("signature value is not standard base64 with padding")
	}
	if n != ed25519.SignatureSize {
		return nil, errors.New("ed25519 signature must be 64 bytes")
	}
	s := &Signature{Kid: kid}
	copy(s.raw[:], dec[:n])
	s.Value = s.raw[:]
	return s, nil
}

// Tag renders the signature as "ed25519:<kid>:<base64>".
func (s *Signature) Tag() string {
	return "ed25519:" + s.Kid + ":" + base64.StdEncoding.EncodeToString(s.Value)
}

// Parse parses one submitted record (an envelope or a refusal) under CHAP canonical JSON.
// Errors are *ledger.RecordError with a stable code.
func Parse(data []byte) (*Record, error) {
	v, c, ok, err := canonical.ParseCanonical(data, canonical.CHAP, "sig")
	if err != nil {
		return nil, ledger.CanonicalRefusal(err)
	}
	return fromValue(v, len(data), encoded(v, c, ok))
}

// encoded returns the parsed object v with its encodings when its input was already in
// canonical form (canonical.ParseCanonical), the zero preEncoded otherwise.
func encoded(v canonical.Value, c canonical.Canon, ok bool) preEncoded {
	o, isObj := v.(*canonical.Object)
	if !ok || !isObj {
		return preEncoded{}
	}
	return preEncoded{obj: o, Canon: c}
}

// preEncoded is an object's canonical encoding and its encoding without sig, known from the
// parse (canonical.Canon): when the record's hashed object is that object, they are its
// Canonical and signingInput without a second encoding. obj is nil when nothing is known.
type preEncoded struct {
	obj *canonical.Object
	canonical.Canon
}

// ParseStored parses a record as stored (the envelope, or a refusal's {outcome, request})
// together with the audit-entry metadata split off it at ingest (Record.Meta).
func ParseStored(record, meta []byte) (*Record, error) {
	v, c, canon, err := canonical.ParseCanonical(record, canonical.CHAP, "sig")
	if err != nil {
		return nil, ledger.CanonicalRefusal(err)
	}
	obj, ok := v.(*canonical.Object)
	if !ok {
		return nil, ledger.Refuse(ledger.CodeMalformed, "a CHAP record is a JSON object")
	}
	mv, err := canonical.Parse(meta, canonical.CHAP)
	if err != nil {
		return nil, ledger.CanonicalRefusal(err)
	}
	mo, ok := mv.(*canonical.Object)
	if !ok {
		return nil, ledger.Refuse(ledger.CodeMalformed, "audit entry metadata is a JSON object")
	}
	entry := &canonical.Object{}
	for _, m := range mo.Members {
		if !slices.Contains(entryMeta, m.Key) {
			return nil, ledger.Refuse(ledger.CodeMalformed, "audit entry metadata has only seq, arrived, prev_hash, not %.40q", m.Key)
		}
		entry.Members = append(entry.Members, m)
	}
	if _, refusal := obj.Get("outcome"); refusal {
		entry.Members = append(entry.Members, obj.Members...)
	} else {
		entry.Members = append(entry.Members, canonical.Member{Key: "envelope", Value: obj})
	}
	return fromValue(entry, len(record), encoded(obj, c, canon))
}

// FromValue builds a record from an already parsed value (e.g. one element of a JSON array batch).
func FromValue(v canonical.Value) (*Record, error) { return fromValue(v, 0, preEncoded{}) }

// fromValue is FromValue for a value parsed from about size bytes: the canonical encoding
// is sized from it, or taken from pre when the record hashes the object pre was parsed as.
func fromValue(v canonical.Value, size int, pre preEncoded) (*Record, error) {
	obj, ok := v.(*canonical.Object)
	if !ok {
		return nil, ledger.Refuse(ledger.CodeMalformed, "a CHAP record is a JSON object")
	}
	r := &Record{}
	// A bare envelope's own members are all hashed (the paper's form may carry a seq of its
	// own); only an audit entry or a refusal wraps the record in metadata.
	_, hasOutcome := obj.Get("outcome")
	env, isEntry := obj.Get("envelope")
	if hasOutcome || isEntry {
		if err := r.parseMeta(obj); err != nil {
			return nil, err
		}
	}
	switch {
	case hasOutcome:
		if err := r.parseRefusal(obj); err != nil {
			return nil, err
		}
	case isEntry:
		if err := r.parseEntry(obj, env); err != nil {
			return nil, err
		}
	default:
		if err := r.parseEnvelope(obj); err != nil {
			return nil, err
		}
	}
	if pre.obj != nil && r.Object == pre.obj {
		// The stored bytes are already the object's canonical encoding: the parser proved
		// them equal to what EncodeSplit below would write.
		r.Canonical, r.signingInput = pre.Full, pre.Without
		return r, nil
	}
	// One encoding gives both what the link hashes and, for a signed envelope, what the
	// signature covers (SigningInput).
	c, si, err := canonical.EncodeSplit(make([]byte, 0, max(size, 256)), r.Object, "sig")
	if err != nil {
		return nil, ledger.Refuse(ledger.CodeMalformed, "canonical encoding: %v", err)
	}
	r.Canonical, r.signingInput = c, si
	return r, nil
}

// parseMeta reads the audit-entry metadata members (seq, arrived, prev_hash) of obj; any of
// them makes the record an audit entry.
func (r *Record) parseMeta(obj *canonical.Object) error {
	meta := &canonical.Object{}
	for _, m := range obj.Members {
		switch m.Key {
		case "seq":
			n, ok := m.Value.(canonical.Number)
			if !ok {
				return ledger.Refuse(ledger.CodeMalformed, "audit entry seq must be an integer")
			}
			v, err := strconv.ParseUint(string(n), 10, 64)
			if err != nil {
				return ledger.Refuse(ledger.CodeMalformed, "audit entry seq must be a non-negative integer, not %.40s", n)
			}
			r.Seq = &v
		case "arrived":
			s, ok := m.Value.(string)
			if !ok {
				return ledger.Refuse(ledger.CodeBadTimestamp, "audit entry arrived must be an RFC 3339 string")
			}
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				return ledger.Refuse(ledger.CodeBadTimestamp, "audit entry arrived %.40q is not RFC 3339", s)
			}
		case "prev_hash":
			s, ok := m.Value.(string)
			if !ok {
				return ledger.Refuse(ledger.CodeMalformed, "prev_hash must be a string")
			}
			l, err := ledger.ParseLink(s)
			if err != nil {
				return ledger.Refuse(ledger.CodeMalformed, "prev_hash: %v", err)
			}
			r.PrevHash = &l
		default:
			continue
		}
		meta.Members = append(meta.Members, m)
	}
	if len(meta.Members) == 0 {
		return nil
	}
	c, err := canonical.Encode(meta)
	if err != nil {
		return ledger.Refuse(ledger.CodeMalformed, "audit entry metadata: %v", err)
	}
	r.Meta = c
	return nil
}

// parseEntry reads an accepted call's audit entry {seq, arrived, envelope, prev_hash?}: the
// record is the envelope.
func (r *Record) parseEntry(obj *canonical.Object, env canonical.Value) error {
	for _, m := range obj.Members {
		if m.Key != "envelope" && !slices.Contains(entryMeta, m.Key) {
			return ledger.Refuse(ledger.CodeMalformed, "an audit entry has only envelope and the metadata seq, arrived, prev_hash, not %.40q", m.Key)
		}
	}
	eo, ok := env.(*canonical.Object)
	if !ok {
		return ledger.Refuse(ledger.CodeMalformed, "an audit entry's envelope is a JSON object")
	}
	if r.Seq == nil {
		return ledger.Refuse(ledger.CodeMalformed, "an audit entry needs its seq")
	}
	if _, ok := eo.Object("evidence"); ok {
		return ledger.Refuse(ledger.CodeMalformed, "an audit entry's envelope carries no evidence member: its prev_hash is the entry's")
	}
	return r.parseEnvelope(eo)
}

func (r *Record) parseRefusal(obj *canonical.Object) error {
	r.Refusal = true
	req, ok := obj.Object("request")
	if !ok {
		return ledger.Refuse(ledger.CodeMalformed, "a refusal record needs an object `request`")
	}
	if _, ok := obj.Object("outcome"); !ok {
		return ledger.Refuse(ledger.CodeMalformed, "a refusal record needs an object `outcome`")
	}
	for _, m := range obj.Members {
		if m.Key != "outcome" && m.Key != "request" && !slices.Contains(entryMeta, m.Key) {
			return ledger.Refuse(ledger.CodeMalformed, "a refusal record has only outcome and request (and metadata seq, arrived, prev_hash), not %.40q", m.Key)
		}
	}
	r.Object = obj.Without(entryMeta...)
	r.Method, _ = req.String("method")
	r.ID, _ = req.String("id")
	params, _ := req.Object("params")
	r.From = member(req, params, "from")
	r.Workspace = workspaceOf(req, params)
	return nil
}

func (r *Record) parseEnvelope(obj *canonical.Object) error {
	r.Object = obj
	if v, ok := obj.String("jsonrpc"); !ok || v != "2.0" {
		if _, isChap := obj.Get("chap"); !isChap {
			return ledger.Refuse(ledger.CodeMalformed, `a CHAP envelope carries "jsonrpc": "2.0"`)
		}
	}
	if idv, ok := obj.Get("id"); ok {
		switch id := idv.(type) {
		case string:
			r.ID = id
		case canonical.Number:
			r.ID = string(id)
		case nil:
		default:
			return ledger.Refuse(ledger.CodeMalformed, "envelope id must be a string or an integer")
		}
	}
	if mv, ok := obj.Get("method"); ok {
		m, ok := mv.(string)
		if !ok || m == "" {
			return ledger.Refuse(ledger.CodeMalformed, "method must be a non-empty string")
		}
		r.Method = m
	} else {
		_, hasResult := obj.Get("result")
		_, hasError := obj.Get("error")
		if !hasResult && !hasError {
			return ledger.Refuse(ledger.CodeMalformed, "an envelope needs a method (request, notification) or a result/error (response)")
		}
	}
	params, _ := obj.Object("params")
	r.From = member(obj, params, "from")
	r.Workspace = workspaceOf(obj, params)
	if ts := member(obj, params, "ts"); ts != "" {
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return ledger.Refuse(ledger.CodeBadTimestamp, "ts %.40q is not RFC 3339", ts)
		}
		r.TS = t
	}
	if ev, ok := obj.Object("evidence"); ok && !r.Entry() {
		if s, ok := ev.String("prev_hash"); ok {
			l, err := ledger.ParseLink(s)
			if err != nil {
				return ledger.Refuse(ledger.CodeMalformed, "evidence.prev_hash: %v", err)
			}
			r.PrevHash = &l
		}
	}
	if sv, ok := obj.Get("sig"); ok {
		tag, ok := sv.(string)
		if !ok {
			return ledger.Refuse(ledger.CodeSignatureFormat, "sig must be a string")
		}
		sig, err := ParseSignature(tag)
		if err != nil {
			return ledger.Refuse(ledger.CodeSignatureFormat, "%v", err)
		}
		r.Sig = sig
	}
	return nil
}

// Entry reports whether the record came as a Coordinator audit entry (Meta).
func (r *Record) Entry() bool { return r.Meta != nil }

// SigningInput returns JCS(envelope − top-level sig): the bytes a CHAP signature covers. For
// a record from Parse, ParseStored or FromValue it was cut from the encoding of Canonical
// (canonical.EncodeSplit) and is shared: the caller must not modify it.
func (r *Record) SigningInput() ([]byte, error) {
	if r.signingInput != nil {
		return r.signingInput, nil
	}
	return canonical.Encode(r.Object.Without("sig"))
}

// Params returns the envelope's params object (nil when absent or for a refusal).
func (r *Record) Params() *canonical.Object {
	if r.Refusal {
		return nil
	}
	p, _ := r.Object.Object("params")
	return p
}

// member returns a string member from the envelope, falling back to params (CHAP 0.3
// reference coordinators put from/ts/workspace in params; the paper's listing puts them on top).
func member(top, params *canonical.Object, key string) string {
	if s, ok := top.String(key); ok {
		return s
	}
	if params != nil {
		if s, ok := params.String(key); ok {
			return s
		}
	}
	return ""
}

func workspaceOf(top, params *canonical.Object) string {
	if w := member(top, params, "workspace"); w != "" {
		return w
	}
	if params != nil {
		if s, ok := params.String("workspace_id"); ok {
			return s
		}
	}
	return ""
}
