// Package trustfile reads and writes Evident trust files (format evident-trust/v1): the one
// JSON document a log operator publishes (evidentd serves it at /.well-known/evident-trust)
// and a verifier keeps to pin what it trusts. It names the log origin, the log's checkpoint
// verifier keys (Ed25519, and ML-DSA-44 when the log signs with one), the service's statement
// and receipt keys (current and retired, with their kids) and the witness policy.
//
// The parser is strict: strict JSON (no duplicate member, valid UTF-8), known members only,
// every key parsed and named for the origin, every kid the thumbprint of its key. It imports
// no network or server code, so the offline verifier can use it.
package trustfile

import (
	"bytes"
	"crypto"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/ledger/canonical"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/tlogpolicy"
)

// Format is File.Format for this version.
const Format = "evident-trust/v1"

// MaxSize bounds a trust file the parser accepts.
const MaxSize = 1 << 20

// Limits on the lists a trust file holds.
const (
	maxLogKeys    = 64
	maxIssuerKeys = 256
)

// The kinds of error Parse and Check return, each wrapped in an *Error.
var (
	ErrSyntax        = errors.New("not strict JSON of a trust file")
	ErrFormat        = errors.New("unknown format")
	ErrOrigin        = errors.New("bad origin")
	ErrLogKey        = errors.New("bad log key")
	ErrIssuerKey     = errors.New("bad issuer key")
	ErrWitnessPolicy = errors.New("bad witness policy")
)

// Error is what Parse and Check return: the member at fault, the kind of error (one of the
// Err values above, for errors.Is) and what is wrong.
type Error struct {
	Member string // JSON member, e.g. "issuer_keys[1].kid"; empty for the document as a whole
	Kind   error
	Detail string
}

func (e *Error) Error() string {
	if e.Member == "" {
		return fmt.Sprintf("trust file: %v: %s", e.Kind, e.Detail)
	}
	return fmt.Sprintf("trust file: %s: %v: %s", e.Member, e.Kind, e.Detail)
}

// Unwrap returns the error's kind.
func (e *Error) Unwrap() error { return e.Kind }

func errorf(member string, kind error, format string, args ...any) *Error {
	return &Error{Member: member, Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

// File is a trust file. Its JSON form is documented in docs/trust.md.
type File struct {
	// Format is always Format.
	Format string `json:"format"`
	// Origin is the log's origin line, the name every log key carries.
	Origin string `json:"origin"`
	// LogKeys are the log's Ed25519 checkpoint verifier keys (C2SP signed-note vkeys), the
	// current one first; earlier ones stay so that older bundles keep verifying.
	LogKeys []string `json:"log_keys"`
	// LogMLDSAKeys are the log's ML-DSA-44 checkpoint verifier keys (signed-note key type
	// 0x06), when the log also signs with one.
	LogMLDSAKeys []string `json:"log_mldsa_keys,omitempty"`
	// IssuerKeys is the service's statement and receipt key set, retired keys included: the
	// keys of /.well-known/scitt-keys.
	IssuerKeys []IssuerKey `json:"issuer_keys"`
	// WitnessPolicy is the log's witness policy in the C2SP tlog-policy text format; empty
	// when the log has no witnesses.
	WitnessPolicy string `json:"witness_policy,omitempty"`
}

// IssuerKey is one statement or receipt key of the service.
type IssuerKey struct {
	// KID is the hex RFC 9679 thumbprint (SHA-256) of the key.
	KID string `json:"kid"`
	// COSEKey is the public COSE_Key (RFC 9052 section 7), base64 in JSON.
	COSEKey []byte `json:"cose_key"`
	// NotBefore and NotAfter (RFC 3339) say when the key signed; NotAfter is empty while
	// the key is current. Both are informative: the verifier does not read them.
	NotBefore string `json:"not_before,omitempty"`
	NotAfter  string `json:"not_after,omitempty"`
}

// Parse reads a trust file strictly and checks it (Check).
func Parse(b []byte) (*File, error) {
	if len(b) > MaxSize {
		return nil, errorf("", ErrSyntax, "%d bytes, over the limit of %d", len(b), MaxSize)
	}
	if _, err := canonical.Parse(b, canonical.Options{MaxDepth: 8, MaxSize: MaxSize}); err != nil {
		return nil, errorf("", ErrSyntax, "%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, errorf("", ErrSyntax, "%v", err)
	}
	if err := f.Check(); err != nil {
		return nil, err
	}
	return &f, nil
}

// Check validates the file: the format, an origin, at least one Ed25519 log key, every key
// named for the origin and listed once (no two with one name and key hash), at least one
// issuer key whose kid is its thumbprint, and a witness policy that parses.
func (f *File) Check() error {
	_, _, err := f.Checked()
	return err
}

// Checked is Check returning what it parsed on the way: the issuer keys (in file order, as
// IssuerPublicKeys) and the witness policy (nil when none, as Policy), so a caller that
// needs them does not parse the file's keys twice.
func (f *File) Checked() ([]crypto.PublicKey, *tlogpolicy.Policy, error) {
	if f.Format != Format {
		return nil, nil, errorf("format", ErrFormat, "%.80q, want %q", f.Format, Format)
	}
	if f.Origin == "" || len(f.Origin) > 256 || strings.ContainsAny(f.Origin, "\n+ ") {
		return nil, nil, errorf("origin", ErrOrigin, "%.80q is not a log origin line", f.Origin)
	}
	if len(f.LogKeys) == 0 {
		return nil, nil, errorf("log_keys", ErrLogKey, "no log key")
	}
	if len(f.LogKeys)+len(f.LogMLDSAKeys) > maxLogKeys {
		return nil, nil, errorf("log_keys", ErrLogKey, "over %d keys", maxLogKeys)
	}
	seen := map[string]string{} // vkey and name+hash → the member that lists it
	for i, vk := range f.LogKeys {
		m := fmt.Sprintf("log_keys[%d]", i)
		v, err := note.NewVerifier(vk)
		if err != nil {
			return nil, nil, errorf(m, ErrLogKey, "%.80q is not an Ed25519 signed-note verifier key: %v", vk, err)
		}
		if err := f.checkKey(m, vk, v, seen); err != nil {
			return nil, nil, err
		}
	}
	for i, vk := range f.LogMLDSAKeys {
		m := fmt.Sprintf("log_mldsa_keys[%d]", i)
		v, err := tlogpolicy.NewCosignatureVerifier(vk)
		if err != nil || !IsMLDSA44(vk) {
			return nil, nil, errorf(m, ErrLogKey, "%.80q is not an ML-DSA-44 signed-note verifier key (type 0x06)", vk)
		}
		if err := f.checkKey(m, vk, v, seen); err != nil {
			return nil, nil, err
		}
	}
	if len(f.IssuerKeys) == 0 {
		return nil, nil, errorf("issuer_keys", ErrIssuerKey, "no issuer key")
	}
	if len(f.IssuerKeys) > maxIssuerKeys {
		return nil, nil, errorf("issuer_keys", ErrIssuerKey, "over %d keys", maxIssuerKeys)
	}
	kids := map[string]bool{}
	issuers := make([]crypto.PublicKey, 0, len(f.IssuerKeys))
	for i, k := range f.IssuerKeys {
		m := fmt.Sprintf("issuer_keys[%d]", i)
		pub, err := k.PublicKey()
		if err != nil {
			return nil, nil, errorf(m, ErrIssuerKey, "%v", err)
		}
		if kids[k.KID] {
			return nil, nil, errorf(m+".kid", ErrIssuerKey, "kid %s listed twice", k.KID)
		}
		kids[k.KID] = true
		issuers = append(issuers, pub)
		if err := checkWindow(k.NotBefore, k.NotAfter); err != nil {
			return nil, nil, errorf(m, ErrIssuerKey, "%v", err)
		}
	}
	policy, err := f.Policy()
	if err != nil {
		return nil, nil, err
	}
	return issuers, policy, nil
}

// checkKey checks that a log key is named for the origin and that no other key of the file
// is the same or has the same name and key hash: a signature line names its key by those
// alone, so two such keys would make every signature under them ambiguous.
func (f *File) checkKey(member, vkey string, v note.Verifier, seen map[string]string) error {
	if v.Name() != f.Origin {
		return errorf(member, ErrLogKey, "the key is named %.80q, not the origin %.80q", v.Name(), f.Origin)
	}
	if _, ok := seen[vkey]; ok {
		return errorf(member, ErrLogKey, "listed twice")
	}
	id := fmt.Sprintf("%s+%08x", v.Name(), v.KeyHash())
	if prev, ok := seen[id]; ok {
		return errorf(member, ErrLogKey, "another key than %s with the same name and key hash %s", prev, id)
	}
	seen[vkey], seen[id] = member, member
	return nil
}

func checkWindow(nb, na string) error {
	var from, to time.Time
	var err error
	if nb != "" {
		if from, err = time.Parse(time.RFC3339Nano, nb); err != nil {
			return fmt.Errorf("not_before: %v", err)
		}
	}
	if na != "" {
		if to, err = time.Parse(time.RFC3339Nano, na); err != nil {
			return fmt.Errorf("not_after: %v", err)
		}
		if nb != "" && to.Before(from) {
			return fmt.Errorf("not_after %s is before not_before %s", na, nb)
		}
	}
	return nil
}

// PublicKey parses the COSE key and checks that the kid is its RFC 9679 thumbprint.
func (k IssuerKey) PublicKey() (crypto.PublicKey, error) {
	pub, err := receipts.ParseCOSEKey(k.COSEKey)
	if err != nil {
		return nil, fmt.Errorf("cose_key: %w", err)
	}
	tp, err := receipts.KeyThumbprint(pub)
	if err != nil {
		return nil, fmt.Errorf("cose_key: %w", err)
	}
	if k.KID != hex.EncodeToString(tp) {
		return nil, fmt.Errorf("kid %.80q is not the key's thumbprint %x", k.KID, tp)
	}
	return pub, nil
}

// IssuerPublicKeys returns the issuer keys, parsed. The file must have passed Check.
func (f *File) IssuerPublicKeys() ([]crypto.PublicKey, error) {
	out := make([]crypto.PublicKey, 0, len(f.IssuerKeys))
	for i, k := range f.IssuerKeys {
		pub, err := k.PublicKey()
		if err != nil {
			return nil, errorf(fmt.Sprintf("issuer_keys[%d]", i), ErrIssuerKey, "%v", err)
		}
		out = append(out, pub)
	}
	return out, nil
}

// Policy returns the witness policy, parsed, or nil when the file has none.
func (f *File) Policy() (*tlogpolicy.Policy, error) {
	if f.WitnessPolicy == "" {
		return nil, nil
	}
	p, err := tlogpolicy.Parse([]byte(f.WitnessPolicy))
	if err != nil {
		return nil, errorf("witness_policy", ErrWitnessPolicy, "%v", err)
	}
	return p, nil
}

// Marshal checks the file and returns its JSON form: indented, members in a fixed order,
// ending with a newline.
func (f *File) Marshal() ([]byte, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("trust file: %w", err)
	}
	return append(b, '\n'), nil
}

// IssuerKeyOf returns the IssuerKey of a public key with its kid, for writers of trust files.
func IssuerKeyOf(pub crypto.PublicKey, notBefore, notAfter string) (IssuerKey, error) {
	ck, err := receipts.COSEKey(pub)
	if err != nil {
		return IssuerKey{}, fmt.Errorf("trust file: issuer key: %w", err)
	}
	tp, err := receipts.KeyThumbprint(pub)
	if err != nil {
		return IssuerKey{}, fmt.Errorf("trust file: issuer key: %w", err)
	}
	return IssuerKey{KID: hex.EncodeToString(tp), COSEKey: ck, NotBefore: notBefore, NotAfter: notAfter}, nil
}

// IsMLDSA44 says whether a signed-note verifier key is of key type 0x06 (ML-DSA-44).
func IsMLDSA44(vkey string) bool {
	_, rest, _ := strings.Cut(vkey, "+")
	_, key64, _ := strings.Cut(rest, "+")
	k, err := base64.StdEncoding.DecodeString(key64)
	return err == nil && len(k) > 1 && k[0] == 0x06
}

// Summary describes the file in lines a person compares with what the operator says out of
// band: the origin, every key's name and hash (and, for issuer keys, kid and window), and
// the witnesses with the quorum.
func (f *File) Summary() []string {
	out := []string{"origin " + f.Origin}
	for i, vk := range f.LogKeys {
		out = append(out, "log key "+keyID(vk)+current(i == 0))
	}
	for _, vk := range f.LogMLDSAKeys {
		out = append(out, "log ML-DSA-44 key "+keyID(vk))
	}
	for _, k := range f.IssuerKeys {
		s := "issuer key kid " + k.KID
		switch {
		case k.NotAfter != "":
			s += fmt.Sprintf(" (retired, %s to %s)", orDash(k.NotBefore), k.NotAfter)
		case k.NotBefore != "":
			s += fmt.Sprintf(" (current, since %s)", k.NotBefore)
		}
		out = append(out, s)
	}
	p, err := f.Policy()
	switch {
	case err != nil:
		out = append(out, "witness policy: "+err.Error())
	case p == nil:
		out = append(out, "witnesses: none")
	default:
		names := make([]string, 0, len(p.Witnesses))
		for _, w := range p.Witnesses {
			names = append(names, "witness "+w.Name+" "+keyID(w.VKey))
		}
		slices.Sort(names)
		out = append(out, names...)
		out = append(out, "witness quorum "+p.Describe())
	}
	return out
}

func current(b bool) string {
	if b {
		return " (current)"
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// keyID is a vkey's name+hash, the part people compare.
func keyID(vkey string) string {
	name, rest, _ := strings.Cut(vkey, "+")
	hash, _, _ := strings.Cut(rest, "+")
	return name + "+" + hash
}
