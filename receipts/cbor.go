package receipts

import (
	"bytes"
	"fmt"

	"github.com/fxamacker/cbor/v2"
	"github.com/veraison/go-cose"
)

// COSE header labels used by this package.
const (
	// HeaderReceipts (394) carries the receipts of a transparent statement
	// in its unprotected header: an array of bstr-wrapped receipts.
	HeaderReceipts int64 = 394
	// HeaderVDS (395) is the verifiable data structure identifier in a
	// receipt's protected header.
	HeaderVDS int64 = 395
	// HeaderVDP (396) is the verifiable data structure proofs map in a
	// receipt's unprotected header.
	HeaderVDP int64 = 396

	// HeaderSeq (private, protected, uint) is a record's sequence number.
	HeaderSeq int64 = -70001
	// HeaderPrev (private, protected, tstr) links a record to its
	// predecessor.
	HeaderPrev int64 = -70002
	// HeaderCheckpoint (private, unprotected, bstr) carries the witnessed
	// checkpoint note (text bytes) in a receipt.
	HeaderCheckpoint int64 = -70010
)

// Verifiable data structure identifiers and proof labels (RFC 9942).
const (
	// VDSRFC9162SHA256 is the RFC9162_SHA256 verifiable data structure.
	VDSRFC9162SHA256 int64 = 1
	// ProofInclusion labels inclusion proofs in the vdp map.
	ProofInclusion int64 = -1
	// ProofConsistency labels consistency proofs in the vdp map.
	ProofConsistency int64 = -2
)

// CWT claim keys (RFC 8392) used in header 15.
const (
	claimIss int64 = 1
	claimSub int64 = 2
	claimIat int64 = 6
)

// Size bounds enforced by the parsers and builders.
const (
	// MaxStatementSize bounds an encoded statement, receipts included.
	MaxStatementSize = 4 << 20
	// MaxEntryStatementSize bounds an entry statement of the service (docs/scitt.md, "Entry
	// statements"), receipts included: its payload is a whole record, up to the largest
	// record limit evidentd accepts (32 MiB by default, 64 MiB at most) and its headers.
	MaxEntryStatementSize = 64<<20 + 1<<20
	// MaxReceiptSize bounds one encoded receipt.
	MaxReceiptSize = 64 << 10
	// MaxCheckpointSize bounds the checkpoint note carried in a receipt.
	MaxCheckpointSize = 16 << 10
	// MaxReceipts bounds the receipts a transparent statement may carry.
	MaxReceipts = 64
	// MaxProofs bounds the proofs of one kind in one receipt.
	MaxProofs = 64
	// MaxPathLength bounds a proof path (RFC 9162 paths for 64-bit tree
	// sizes are shorter).
	MaxPathLength = 130
	// HashSize is the size of RFC9162_SHA256 hashes.
	HashSize = 32
)

var (
	// encMode is RFC 8949 core deterministic encoding.
	encMode cbor.EncMode
	// strictDec decodes structures this package defines (proofs, keys):
	// no tags, no indefinite lengths, no duplicate keys, small bounds.
	strictDec cbor.DecMode
	// headerDec decodes header maps carried through unchanged.
	headerDec cbor.DecMode
)

func init() {
	var err error
	eo := cbor.CoreDetEncOptions()
	eo.IndefLength = cbor.IndefLengthForbidden
	if encMode, err = eo.EncMode(); err != nil {
		panic(err)
	}
	do := cbor.DecOptions{
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		IndefLength:      cbor.IndefLengthForbidden,
		TagsMd:           cbor.TagsForbidden,
		IntDec:           cbor.IntDecConvertSignedOrFail,
		MaxNestedLevels:  8,
		MaxArrayElements: 1024,
		MaxMapPairs:      256,
		UTF8:             cbor.UTF8RejectInvalid,
	}
	if strictDec, err = do.DecMode(); err != nil {
		panic(err)
	}
	do.TagsMd = cbor.TagsAllowed
	do.MaxNestedLevels = 32
	do.MaxArrayElements = 64 << 10
	do.MaxMapPairs = 4096
	if headerDec, err = do.DecMode(); err != nil {
		panic(err)
	}
}

// sign1Parts holds the four raw items of a COSE_Sign1 array.
type sign1Parts struct {
	_           struct{} `cbor:",toarray"`
	Protected   cbor.RawMessage
	Unprotected cbor.RawMessage
	Payload     cbor.RawMessage
	Signature   cbor.RawMessage
}

// encode re-assembles the tagged message from its raw items.
func (p *sign1Parts) encode(unprotected []byte) []byte {
	out := make([]byte, 0, 2+len(p.Protected)+len(unprotected)+len(p.Payload)+len(p.Signature))
	out = append(out, 0xd2, 0x84)
	out = append(out, p.Protected...)
	out = append(out, unprotected...)
	out = append(out, p.Payload...)
	out = append(out, p.Signature...)
	return out
}

// decodeSign1 checks raw is a well-formed tagged COSE_Sign1 of at most max
// bytes and returns go-cose's view of it together with its raw items.
func decodeSign1(raw []byte, max int, what string) (*cose.Sign1Message, *sign1Parts, error) {
	if len(raw) == 0 {
		return nil, nil, fmt.Errorf("%w: %s: empty", ErrMalformed, what)
	}
	if len(raw) > max {
		return nil, nil, fmt.Errorf("%w: %s: %d bytes exceeds limit %d", ErrMalformed, what, len(raw), max)
	}
	if len(raw) < 2 || raw[0] != 0xd2 {
		return nil, nil, fmt.Errorf("%w: %s: not a COSE_Sign1 with tag 18", ErrMalformed, what)
	}
	if raw[1] != 0x84 {
		return nil, nil, fmt.Errorf("%w: %s: COSE_Sign1 must be an array of 4 items", ErrMalformed, what)
	}
	var msg cose.Sign1Message
	if err := msg.UnmarshalCBOR(raw); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrMalformed, what, err)
	}
	var parts sign1Parts
	if err := headerDec.Unmarshal(raw[1:], &parts); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrMalformed, what, err)
	}
	if !bytes.Equal(parts.encode(parts.Unprotected), raw) {
		// Cannot happen for input go-cose accepted; keep the invariant
		// explicit since EntryHash depends on it.
		return nil, nil, fmt.Errorf("%w: %s: non-canonical framing", ErrMalformed, what)
	}
	if msg.Headers.Protected == nil {
		msg.Headers.Protected = cose.ProtectedHeader{}
	}
	if err := checkBuckets(msg.Headers.Protected, msg.Headers.Unprotected); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrMalformed, what, err)
	}
	return &msg, &parts, nil
}

// checkBuckets enforces RFC 9052 section 3: a label must not appear in both
// the protected and the unprotected bucket.
func checkBuckets(p cose.ProtectedHeader, u cose.UnprotectedHeader) error {
	for k := range u {
		if _, ok := p[k]; ok {
			return fmt.Errorf("header label %v in both buckets", k)
		}
	}
	return nil
}

// knownCrit lists the protected labels this package (and Evident) processes;
// crit may only name these.
var knownCrit = map[any]bool{
	cose.HeaderLabelAlgorithm:   true,
	cose.HeaderLabelContentType: true,
	cose.HeaderLabelKeyID:       true,
	cose.HeaderLabelCWTClaims:   true,
	cose.HeaderLabelType:        true,
	HeaderVDS:                   true,
	HeaderSeq:                   true,
	HeaderPrev:                  true,
}

// commonProtected extracts alg, kid, claims and checks crit.
func commonProtected(p cose.ProtectedHeader) (cose.Algorithm, []byte, Claims, error) {
	var c Claims
	v, ok := p[cose.HeaderLabelAlgorithm]
	if !ok {
		return 0, nil, c, fmt.Errorf("%w: protected header: missing alg (1)", ErrMalformed)
	}
	alg, ok := v.(cose.Algorithm)
	if !ok {
		return 0, nil, c, fmt.Errorf("%w: protected header: alg (1) %v is not an integer", ErrUnsupportedAlg, v)
	}
	if !verifyAlgs[alg] {
		return 0, nil, c, fmt.Errorf("%w: %v", ErrUnsupportedAlg, alg)
	}
	var kid []byte
	if v, ok := p[cose.HeaderLabelKeyID]; ok {
		kid, ok = v.([]byte)
		if !ok || len(kid) == 0 {
			return 0, nil, c, fmt.Errorf("%w: protected header: kid (4) must be a non-empty bstr", ErrMalformed)
		}
	}
	if v, ok := p[cose.HeaderLabelCritical]; ok {
		labels, _ := v.([]any)
		for _, l := range labels {
			switch l.(type) {
			case int64, string:
			default:
				return 0, nil, c, fmt.Errorf("%w: protected header: bad crit label", ErrMalformed)
			}
			if !knownCrit[l] {
				return 0, nil, c, fmt.Errorf("%w: protected header: crit names unknown label %v", ErrMalformed, l)
			}
		}
	}
	if v, ok := p[cose.HeaderLabelCWTClaims]; ok {
		var err error
		if c, err = parseClaims(v); err != nil {
			return 0, nil, c, err
		}
	}
	return alg, kid, c, nil
}

func parseClaims(v any) (Claims, error) {
	var c Claims
	m, ok := v.(map[any]any)
	if !ok {
		return c, fmt.Errorf("%w: CWT claims (15) must be a map", ErrMalformed)
	}
	for k, val := range m {
		switch k {
		case claimIss, claimSub:
			s, ok := val.(string)
			if !ok {
				return c, fmt.Errorf("%w: CWT claim %v must be a tstr", ErrMalformed, k)
			}
			if k == claimIss {
				c.Issuer = s
			} else {
				c.Subject = s
			}
		case claimIat:
			n, ok := val.(int64)
			if !ok {
				return c, fmt.Errorf("%w: CWT claim iat (6) must be an integer", ErrMalformed)
			}
			c.IssuedAt = n
		}
	}
	return c, nil
}

// claimsMap encodes non-zero claims; nil if all are zero.
func (c Claims) claimsMap() map[int64]any {
	m := map[int64]any{}
	if c.Issuer != "" {
		m[claimIss] = c.Issuer
	}
	if c.Subject != "" {
		m[claimSub] = c.Subject
	}
	if c.IssuedAt != 0 {
		m[claimIat] = c.IssuedAt
	}
	if len(m) == 0 {
		return nil
	}
	return m
}
