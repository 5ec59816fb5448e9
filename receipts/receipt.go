package receipts

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"fmt"
	"math/bits"

	"github.com/fxamacker/cbor/v2"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/veraison/go-cose"
)

// InclusionProof is an RFC 9162 inclusion proof, encoded in a receipt as
// bstr .cbor [tree_size, leaf_index, [path...]].
type InclusionProof struct {
	TreeSize  uint64
	LeafIndex uint64
	Path      [][]byte // 32-byte hashes, leaf to root
}

// ConsistencyProof is an RFC 9162 consistency proof, encoded in a receipt as
// bstr .cbor [tree_size_1, tree_size_2, [path...]].
type ConsistencyProof struct {
	Size1, Size2 uint64
	Path         [][]byte // 32-byte hashes
}

// RootSignature is a receipt signature over one Merkle root. The signed
// content of an RFC9162_SHA256 receipt is only its protected header and the
// root (the detached payload), so one RootSignature per (signer, claims,
// root) serves every receipt, inclusion or consistency, cut from that tree.
type RootSignature struct {
	// Protected is the serialized protected header map (not bstr-wrapped):
	// {1: alg, 4: kid, 15: claims (if any), 395: 1}.
	Protected []byte
	// Signature is the COSE signature over Sig_structure(Protected, root).
	Signature []byte
}

// SignRoot signs a 32-byte Merkle root as the detached payload of a receipt.
// Claims with zero values are left out; by Evident's convention Subject is
// the log origin.
func SignRoot(s *Signer, c Claims, root []byte) (RootSignature, error) {
	if s == nil {
		return RootSignature{}, fmt.Errorf("%w: nil signer", ErrUnsupportedAlg)
	}
	if len(root) != HashSize {
		return RootSignature{}, fmt.Errorf("%w: root of %d bytes", ErrMalformed, len(root))
	}
	m := map[int64]any{
		cose.HeaderLabelAlgorithm: int64(s.alg),
		cose.HeaderLabelKeyID:     s.kid,
		HeaderVDS:                 VDSRFC9162SHA256,
	}
	if cm := c.claimsMap(); cm != nil {
		m[cose.HeaderLabelCWTClaims] = cm
	}
	protected, err := encMode.Marshal(m)
	if err != nil {
		return RootSignature{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	hdr := cose.ProtectedHeader{
		cose.HeaderLabelAlgorithm: s.alg,
	}
	sig, err := s.sign(protected, hdr, root)
	if err != nil {
		return RootSignature{}, err
	}
	return RootSignature{Protected: protected, Signature: sig}, nil
}

// NewInclusionReceipt assembles a receipt of inclusion from a root signature
// and an inclusion proof into the signed tree. checkpoint, if non-nil, is
// carried under HeaderCheckpoint. No signing happens here.
func NewInclusionReceipt(rs RootSignature, p InclusionProof, checkpoint []byte) ([]byte, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return encodeReceipt(rs, []InclusionProof{p}, nil, checkpoint)
}

// NewConsistencyReceipt assembles a receipt of consistency; rs must sign the
// root of the tree of size p.Size2. Equal sizes are refused with ErrEmptyPath:
// their path is empty, which RFC 9942 does not allow (compare the roots instead).
func NewConsistencyReceipt(rs RootSignature, p ConsistencyProof, checkpoint []byte) ([]byte, error) {
	if p.Size1 != 0 && p.Size1 == p.Size2 {
		return nil, fmt.Errorf("consistency proof %d -> %d: %w", p.Size1, p.Size2, ErrEmptyPath)
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	return encodeReceipt(rs, nil, []ConsistencyProof{p}, checkpoint)
}

func encodeProof(a, b uint64, path [][]byte) ([]byte, error) {
	if path == nil {
		path = [][]byte{}
	}
	enc, err := encMode.Marshal([]any{a, b, path})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return enc, nil
}

// encodeReceipt builds the tagged COSE_Sign1 of a receipt.
func encodeReceipt(rs RootSignature, incl []InclusionProof, cons []ConsistencyProof, checkpoint []byte) ([]byte, error) {
	if len(rs.Protected) == 0 || len(rs.Signature) == 0 {
		return nil, fmt.Errorf("%w: empty root signature", ErrMalformed)
	}
	if len(checkpoint) > MaxCheckpointSize {
		return nil, fmt.Errorf("%w: checkpoint of %d bytes exceeds limit %d", ErrMalformed, len(checkpoint), MaxCheckpointSize)
	}
	vdp := map[int64]any{}
	if len(incl) > 0 {
		list := make([][]byte, len(incl))
		for i, p := range incl {
			var err error
			if list[i], err = encodeProof(p.TreeSize, p.LeafIndex, p.Path); err != nil {
				return nil, err
			}
		}
		vdp[ProofInclusion] = list
	}
	if len(cons) > 0 {
		list := make([][]byte, len(cons))
		for i, p := range cons {
			var err error
			if list[i], err = encodeProof(p.Size1, p.Size2, p.Path); err != nil {
				return nil, err
			}
		}
		vdp[ProofConsistency] = list
	}
	u := map[int64]any{HeaderVDP: vdp}
	if checkpoint != nil {
		u[HeaderCheckpoint] = checkpoint
	}
	out, err := encodeSign1(rs.Protected, u, nil, rs.Signature)
	if err != nil {
		return nil, err
	}
	if len(out) > MaxReceiptSize {
		return nil, fmt.Errorf("%w: receipt of %d bytes exceeds limit %d", ErrMalformed, len(out), MaxReceiptSize)
	}
	// Never hand out a receipt our own parser would refuse (for example a
	// RootSignature whose Protected is not a receipt header).
	if _, err := ParseReceipt(out); err != nil {
		return nil, fmt.Errorf("receipts: assembled receipt does not parse: %w", err)
	}
	return out, nil
}

// inclusionPathLen is the RFC 9162 inclusion path length for (index, size).
func inclusionPathLen(index, size uint64) int {
	inner := bits.Len64(index ^ (size - 1))
	return inner + bits.OnesCount64(index>>uint(inner))
}

// consistencyPathLen is the RFC 9162 consistency path length, 0 < s1 <= s2.
func consistencyPathLen(s1, s2 uint64) int {
	if s1 == s2 {
		return 0
	}
	shift := bits.TrailingZeros64(s1)
	n := inclusionPathLen(s1-1, s2) - shift
	if s1 != 1<<uint(shift) {
		n++
	}
	return n
}

func checkPath(path [][]byte, want int) error {
	if len(path) != want {
		return fmt.Errorf("%w: path has %d hashes, RFC 9162 needs %d", ErrMalformed, len(path), want)
	}
	for i, h := range path {
		if len(h) != HashSize {
			return fmt.Errorf("%w: path element %d is %d bytes, not %d", ErrMalformed, i, len(h), HashSize)
		}
	}
	return nil
}

func (p InclusionProof) check() error {
	if p.LeafIndex >= p.TreeSize {
		return fmt.Errorf("%w: inclusion proof: leaf index %d not below tree size %d", ErrMalformed, p.LeafIndex, p.TreeSize)
	}
	if err := checkPath(p.Path, inclusionPathLen(p.LeafIndex, p.TreeSize)); err != nil {
		return fmt.Errorf("inclusion proof: %w", err)
	}
	return nil
}

func (p ConsistencyProof) check() error {
	if p.Size1 == 0 || p.Size1 > p.Size2 {
		return fmt.Errorf("%w: consistency proof: sizes %d, %d (need 0 < size1 <= size2)", ErrMalformed, p.Size1, p.Size2)
	}
	if err := checkPath(p.Path, consistencyPathLen(p.Size1, p.Size2)); err != nil {
		return fmt.Errorf("consistency proof: %w", err)
	}
	return nil
}

// Receipt is a parsed RFC9162_SHA256 receipt.
type Receipt struct {
	// Raw is the input, as given to ParseReceipt.
	Raw []byte
	// Alg is the signature algorithm (header 1).
	Alg cose.Algorithm
	// KeyID is the kid (header 4), nil if absent.
	KeyID []byte
	// Claims are the CWT claims of header 15, zero if absent.
	Claims Claims
	// Protected is the serialized protected header map.
	Protected []byte
	// Signature is the raw signature.
	Signature []byte
	// Inclusion and Consistency are the proofs under 396 / -1 and -2.
	Inclusion   []InclusionProof
	Consistency []ConsistencyProof
	// Checkpoint is the note under HeaderCheckpoint, nil if absent.
	Checkpoint []byte

	msg *cose.Sign1Message
}

// ParseReceipt parses a receipt of at most MaxReceiptSize bytes: a tagged
// COSE_Sign1 with a detached payload, protected alg (one of the verifiable
// algorithms) and vds = 1 (else ErrUnsupportedVDS), and an unprotected vdp
// map (396) holding only inclusion (-1) and/or consistency (-2) proofs.
// Each proof must be canonically encoded, with 32-byte path hashes and the
// path length RFC 9162 prescribes for its sizes. Other unprotected labels
// are allowed and ignored, except HeaderCheckpoint which must be a bstr.
func ParseReceipt(raw []byte) (*Receipt, error) {
	msg, parts, err := decodeSign1(raw, MaxReceiptSize, "receipt")
	if err != nil {
		return nil, err
	}
	p := msg.Headers.Protected
	v, ok := p[HeaderVDS]
	if !ok {
		return nil, fmt.Errorf("%w: receipt: missing vds (395)", ErrMalformed)
	}
	if vds, ok := v.(int64); !ok || vds != VDSRFC9162SHA256 {
		return nil, fmt.Errorf("%w: receipt: vds %v", ErrUnsupportedVDS, v)
	}
	alg, kid, claims, err := commonProtected(p)
	if err != nil {
		return nil, fmt.Errorf("receipt: %w", err)
	}
	if msg.Payload != nil {
		return nil, fmt.Errorf("%w: receipt: payload must be detached (nil)", ErrMalformed)
	}
	r := &Receipt{Raw: raw, Alg: alg, KeyID: kid, Claims: claims, Signature: msg.Signature, msg: msg}
	if r.Protected, err = unwrapBstr(parts.Protected); err != nil {
		return nil, err
	}
	u := msg.Headers.Unprotected
	if v, ok := u[HeaderCheckpoint]; ok {
		b, ok := v.([]byte)
		if !ok || len(b) > MaxCheckpointSize {
			return nil, fmt.Errorf("%w: receipt: checkpoint must be a bstr of at most %d bytes", ErrMalformed, MaxCheckpointSize)
		}
		r.Checkpoint = b
	}
	v, ok = u[HeaderVDP]
	if !ok {
		return nil, fmt.Errorf("%w: receipt: missing vdp (396)", ErrMalformed)
	}
	vdp, ok := v.(map[any]any)
	if !ok || len(vdp) == 0 {
		return nil, fmt.Errorf("%w: receipt: vdp (396) must be a non-empty map", ErrMalformed)
	}
	for k, val := range vdp {
		list, ok := val.([]any)
		if !ok || len(list) == 0 || len(list) > MaxProofs {
			return nil, fmt.Errorf("%w: receipt: vdp %v must be an array of 1..%d proofs", ErrMalformed, k, MaxProofs)
		}
		switch k {
		case ProofInclusion:
			for i, e := range list {
				a, b, path, err := decodeProof(e)
				if err != nil {
					return nil, fmt.Errorf("receipt: inclusion proof %d: %w", i, err)
				}
				ip := InclusionProof{TreeSize: a, LeafIndex: b, Path: path}
				if err := ip.check(); err != nil {
					return nil, fmt.Errorf("receipt: %w", err)
				}
				r.Inclusion = append(r.Inclusion, ip)
			}
		case ProofConsistency:
			for i, e := range list {
				a, b, path, err := decodeProof(e)
				if err != nil {
					return nil, fmt.Errorf("receipt: consistency proof %d: %w", i, err)
				}
				cp := ConsistencyProof{Size1: a, Size2: b, Path: path}
				if err := cp.check(); err != nil {
					return nil, fmt.Errorf("receipt: %w", err)
				}
				r.Consistency = append(r.Consistency, cp)
			}
		default:
			return nil, fmt.Errorf("%w: receipt: unknown vdp label %v for RFC9162_SHA256", ErrMalformed, k)
		}
	}
	return r, nil
}

// proofItem is the CBOR array inside an encoded proof.
type proofItem struct {
	_    struct{} `cbor:",toarray"`
	A, B uint64
	Path []cbor.RawMessage
}

// decodeProof decodes bstr .cbor [uint, uint, [bstr...]], which must be in
// preferred (canonical) encoding with 32-byte hashes.
func decodeProof(e any) (uint64, uint64, [][]byte, error) {
	enc, ok := e.([]byte)
	if !ok {
		return 0, 0, nil, fmt.Errorf("%w: proof must be a bstr", ErrMalformed)
	}
	if len(enc) == 0 || enc[0] != 0x83 {
		return 0, 0, nil, fmt.Errorf("%w: proof must be a CBOR array of 3 items", ErrMalformed)
	}
	var it proofItem
	if err := strictDec.Unmarshal(enc, &it); err != nil {
		return 0, 0, nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if len(it.Path) > MaxPathLength {
		return 0, 0, nil, fmt.Errorf("%w: path of %d hashes", ErrMalformed, len(it.Path))
	}
	path := make([][]byte, len(it.Path))
	for i, h := range it.Path {
		if len(h) != 2+HashSize || h[0] != 0x58 || h[1] != HashSize {
			return 0, 0, nil, fmt.Errorf("%w: path element %d is not a 32-byte bstr", ErrMalformed, i)
		}
		path[i] = h[2:]
	}
	canon, err := encodeProof(it.A, it.B, path)
	if err != nil {
		return 0, 0, nil, err
	}
	if !bytes.Equal(canon, enc) {
		return 0, 0, nil, fmt.Errorf("%w: proof is not in deterministic encoding", ErrMalformed)
	}
	return it.A, it.B, path, nil
}

// VerifyInclusion verifies a receipt of inclusion for the leaf with the
// given 32-byte Merkle leaf hash (LeafHash of the entry). The receipt must
// hold exactly one inclusion proof and no consistency proof. It computes the
// root from the leaf and proof (RFC 9162), then checks the COSE signature
// over that root with pub. It returns the root and the parsed receipt.
func VerifyInclusion(receipt []byte, leafHash []byte, pub crypto.PublicKey) (root []byte, r *Receipt, err error) {
	r, err = ParseReceipt(receipt)
	if err != nil {
		return nil, nil, err
	}
	if root, err = r.VerifyInclusion(leafHash, pub); err != nil {
		return nil, nil, err
	}
	return root, r, nil
}

// VerifyInclusion is the package's VerifyInclusion on a receipt already parsed, for a caller
// that read its kid first to choose pub.
func (r *Receipt) VerifyInclusion(leafHash []byte, pub crypto.PublicKey) (root []byte, err error) {
	if len(r.Inclusion) != 1 || len(r.Consistency) != 0 {
		return nil, fmt.Errorf("%w: receipt: want exactly one inclusion proof, have %d inclusion and %d consistency", ErrMalformed, len(r.Inclusion), len(r.Consistency))
	}
	if len(leafHash) != HashSize {
		return nil, fmt.Errorf("%w: leaf hash of %d bytes", ErrBadProof, len(leafHash))
	}
	p := r.Inclusion[0]
	root, err = proof.RootFromInclusionProof(rfc6962.DefaultHasher, p.LeafIndex, p.TreeSize, leafHash, p.Path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadProof, err)
	}
	if err := verifySign1(r.msg, r.Alg, root, pub); err != nil {
		return nil, fmt.Errorf("receipt: %w", err)
	}
	return root, nil
}

// Canonical reports whether the receipt is byte for byte what NewInclusionReceipt and
// NewConsistencyReceipt write from its signed parts, its proofs and its checkpoint: nothing
// unsigned rides along (another unprotected parameter, another encoding of the same items).
func (r *Receipt) Canonical() bool {
	re, err := encodeReceipt(RootSignature{Protected: r.Protected, Signature: r.Signature}, r.Inclusion, r.Consistency, r.Checkpoint)
	return err == nil && bytes.Equal(re, r.Raw)
}

// VerifyConsistency verifies a receipt of consistency against the 32-byte
// root of the older tree (size Size1). The receipt must hold exactly one
// consistency proof and no inclusion proof. It checks the proof leads from
// oldRoot to a new root (RFC 9162), then checks the COSE signature over the
// new root with pub. It returns the new root and the parsed receipt.
// A proof that does not reproduce oldRoot fails with ErrBadProof (when
// Size1 == Size2 the new root is oldRoot and a mismatch shows up as
// ErrBadSignature).
func VerifyConsistency(receipt []byte, oldRoot []byte, pub crypto.PublicKey) (newRoot []byte, r *Receipt, err error) {
	r, err = ParseReceipt(receipt)
	if err != nil {
		return nil, nil, err
	}
	if len(r.Consistency) != 1 || len(r.Inclusion) != 0 {
		return nil, nil, fmt.Errorf("%w: receipt: want exactly one consistency proof, have %d consistency and %d inclusion", ErrMalformed, len(r.Consistency), len(r.Inclusion))
	}
	if len(oldRoot) != HashSize {
		return nil, nil, fmt.Errorf("%w: old root of %d bytes", ErrBadProof, len(oldRoot))
	}
	p := r.Consistency[0]
	newRoot, err = rootFromConsistencyProof(p.Size1, p.Size2, p.Path, oldRoot)
	if err != nil {
		return nil, nil, err
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, p.Size1, p.Size2, p.Path, oldRoot, newRoot); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadProof, err)
	}
	if err := verifySign1(r.msg, r.Alg, newRoot, pub); err != nil {
		return nil, nil, fmt.Errorf("receipt: %w", err)
	}
	return newRoot, r, nil
}

// rootFromConsistencyProof runs the RFC 9162 section 2.1.4.2 verification
// and returns the root of the tree of size s2 after checking that the proof
// reproduces root1 for size s1 (0 < s1 <= s2, path length already checked).
func rootFromConsistencyProof(s1, s2 uint64, path [][]byte, root1 []byte) ([]byte, error) {
	if s1 == 0 || s1 > s2 || len(path) != consistencyPathLen(s1, s2) {
		return nil, fmt.Errorf("%w: consistency proof shape", ErrBadProof)
	}
	if s1 == s2 {
		return append([]byte(nil), root1...), nil
	}
	inner := bits.Len64((s1 - 1) ^ (s2 - 1))
	border := bits.OnesCount64((s1 - 1) >> uint(inner))
	shift := bits.TrailingZeros64(s1)
	inner -= shift
	seed, rest := root1, path
	if s1 != 1<<uint(shift) {
		seed, rest = path[0], path[1:]
	}
	if len(rest) != inner+border {
		return nil, fmt.Errorf("%w: consistency proof length", ErrBadProof)
	}
	mask := (s1 - 1) >> uint(shift)
	fr, sr := seed, seed
	for i, h := range rest[:inner] {
		if (mask>>uint(i))&1 == 1 {
			fr = hashChildren(h, fr)
			sr = hashChildren(h, sr)
		} else {
			sr = hashChildren(sr, h)
		}
	}
	for _, h := range rest[inner:] {
		fr = hashChildren(h, fr)
		sr = hashChildren(h, sr)
	}
	if !bytes.Equal(fr, root1) {
		return nil, fmt.Errorf("%w: consistency proof does not lead to the old root", ErrBadProof)
	}
	return sr, nil
}

func hashChildren(l, r []byte) []byte {
	h := sha256.New()
	h.Write([]byte{1})
	h.Write(l)
	h.Write(r)
	return h.Sum(nil)
}

func labels(u map[any]any) []any {
	out := make([]any, 0, len(u))
	for k := range u {
		out = append(out, k)
	}
	return out
}
