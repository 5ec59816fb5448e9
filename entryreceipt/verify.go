package entryreceipt

import (
	"bytes"
	"crypto"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"

	tlog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/tlogpolicy"
	"github.com/evident-log/evident/trustfile"
)

// Errors of Verify, one per step of docs/entry-receipt.md, "Verifying"; each wraps the reason.
var (
	ErrUntrustedKey  = errors.New("signed by a key the trust file does not pin")
	ErrStatement     = errors.New("entry statement does not verify")
	ErrChainReceipt  = errors.New("chain receipt does not verify")
	ErrSeal          = errors.New("seal does not verify")
	ErrLogReceipt    = errors.New("log receipt does not verify")
	ErrCheckpoint    = errors.New("checkpoint does not verify")
	ErrWitnessQuorum = errors.New("checkpoint lacks the witness quorum")
)

// Trust is what a receipt is verified against: the pinned keys of a trust file.
type Trust struct {
	Origin  string
	LogKeys []note.Verifier
	Issuers map[string]crypto.PublicKey // by hex kid
	Policy  *tlogpolicy.Policy          // nil: no witnesses
}

// TrustFrom pins the keys of a trust file.
func TrustFrom(f *trustfile.File) (*Trust, error) {
	pubs, pol, err := f.Checked()
	if err != nil {
		return nil, err
	}
	t := &Trust{Origin: f.Origin, Issuers: map[string]crypto.PublicKey{}, Policy: pol}
	for _, k := range f.LogKeys {
		v, err := note.NewVerifier(k)
		if err != nil {
			return nil, fmt.Errorf("trust file: log key: %w", err)
		}
		t.LogKeys = append(t.LogKeys, v)
	}
	for i, pub := range pubs {
		t.Issuers[f.IssuerKeys[i].KID] = pub // Checked: the kid is the key's thumbprint in hex
	}
	return t, nil
}

func (t *Trust) issuer(kid []byte, what string) (crypto.PublicKey, error) {
	pub, ok := t.Issuers[hex.EncodeToString(kid)]
	if !ok {
		return nil, fmt.Errorf("%w: %s names kid %x", ErrUntrustedKey, what, kid)
	}
	return pub, nil
}

// Verified is what a valid receipt proves.
type Verified struct {
	Chain       string
	Seq         uint64
	ContentType string      // the entry statement's content type
	Record      []byte      // the record's canonical bytes (the entry statement's payload)
	Link        ledger.Link // link(seq)
	Seal        ledger.Seal // the seal whose root places the entry
	LogIndex    uint64      // the seal's index in the log
	TreeSize    uint64      // the checkpoint's size
	Witnesses   []string    // the witnesses whose cosignature counted
}

// Verify checks r against t as docs/entry-receipt.md says, with no network. The error wraps
// the sentinel of the step that failed.
func Verify(r *Receipt, t *Trust) (*Verified, error) {
	if r.Format != Format {
		return nil, fmt.Errorf("%w: format %.60q", ErrMalformed, r.Format)
	}
	// 2. The entry statement.
	st, err := receipts.ParseStatementLimit(r.Statement, receipts.MaxEntryStatementSize)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStatement, err)
	}
	pub, err := t.issuer(st.KeyID, "entry statement")
	if err != nil {
		return nil, err
	}
	if err := st.Verify(pub); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStatement, err)
	}
	if st.Claims.Subject != r.Chain {
		return nil, fmt.Errorf("%w: its subject is %.80q, the receipt names chain %.80q", ErrStatement, st.Claims.Subject, r.Chain)
	}
	if seq, ok := st.Seq(); !ok || seq != r.Seq {
		return nil, fmt.Errorf("%w: its seq header does not say %d", ErrStatement, r.Seq)
	}
	prevText, _ := st.Prev()
	var prev ledger.Link
	if err := prev.UnmarshalText([]byte(prevText)); err != nil {
		return nil, fmt.Errorf("%w: prev header: %w", ErrStatement, err)
	}
	link := ledger.NextLink(st.Payload, prev)
	if err := onlyReceipts(st); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStatement, err)
	}
	if len(st.Receipts) != 1 {
		return nil, fmt.Errorf("%w: header 394 holds %d receipts, want 1", ErrChainReceipt, len(st.Receipts))
	}
	// 3. The chain receipt.
	leaf := receipts.LeafHash(link[:])
	cr, err := receipts.ParseReceipt(st.Receipts[0])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrChainReceipt, err)
	}
	if pub, err = t.issuer(cr.KeyID, "chain receipt"); err != nil {
		return nil, err
	}
	rootC, err := cr.VerifyInclusion(leaf[:], pub)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrChainReceipt, err)
	}
	if !cr.Canonical() || cr.Checkpoint != nil {
		return nil, fmt.Errorf("%w: not in the encoding the service writes (another encoding, or unsigned parameters ride along)", ErrChainReceipt)
	}
	if cr.Inclusion[0].LeafIndex != r.Seq {
		return nil, fmt.Errorf("%w: it proves leaf %d, not %d", ErrChainReceipt, cr.Inclusion[0].LeafIndex, r.Seq)
	}
	if cr.Claims.Subject != r.Chain {
		return nil, fmt.Errorf("%w: its subject is %.80q, not the chain", ErrChainReceipt, cr.Claims.Subject)
	}
	size := cr.Inclusion[0].TreeSize
	// 4. The seal.
	ss, err := receipts.ParseStatement(r.Seal)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSeal, err)
	}
	if pub, err = t.issuer(ss.KeyID, "seal"); err != nil {
		return nil, err
	}
	if err := ss.Verify(pub); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSeal, err)
	}
	if ss.ContentType != ledger.SealContentType {
		return nil, fmt.Errorf("%w: content type %.80q", ErrSeal, ss.ContentType)
	}
	seal, err := ledger.ParseSeal(ss.Payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSeal, err)
	}
	switch {
	case seal.Chain != r.Chain:
		return nil, fmt.Errorf("%w: it seals chain %.80q", ErrSeal, seal.Chain)
	case seal.Size != size:
		return nil, fmt.Errorf("%w: it seals size %d, the chain receipt is cut from size %d", ErrSeal, seal.Size, size)
	case seal.Root != ledger.RootString([32]byte(rootC)):
		return nil, fmt.Errorf("%w: its root %s is not the chain receipt's %s", ErrSeal, seal.Root, ledger.RootString([32]byte(rootC)))
	case r.Seq == size-1 && seal.Head != link:
		return nil, fmt.Errorf("%w: its head %s is not the entry's link %s", ErrSeal, seal.Head, link)
	}
	if err := onlyReceipts(ss); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSeal, err)
	}
	if len(ss.Receipts) != 1 {
		return nil, fmt.Errorf("%w: the seal's header 394 holds %d receipts, want 1", ErrLogReceipt, len(ss.Receipts))
	}
	// 5. The log receipt.
	entry, err := receipts.EntryHash(r.Seal)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLogReceipt, err)
	}
	lr, err := receipts.ParseReceipt(ss.Receipts[0])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLogReceipt, err)
	}
	if pub, err = t.issuer(lr.KeyID, "log receipt"); err != nil {
		return nil, err
	}
	lleaf := receipts.LeafHash(entry[:])
	rootL, err := lr.VerifyInclusion(lleaf[:], pub)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLogReceipt, err)
	}
	if !lr.Canonical() {
		return nil, fmt.Errorf("%w: not in the encoding the service writes (another encoding, or unsigned parameters ride along)", ErrLogReceipt)
	}
	// 6. The checkpoint.
	cp, err := t.checkpoint([]byte(r.Checkpoint))
	if err != nil {
		return nil, err
	}
	if lr.Checkpoint != nil && !bytes.Equal(lr.Checkpoint, []byte(r.Checkpoint)) {
		return nil, fmt.Errorf("%w: the log receipt carries another checkpoint (header -70010) than the receipt's", ErrLogReceipt)
	}
	if cp.Size != lr.Inclusion[0].TreeSize || !bytes.Equal(cp.Hash, rootL) {
		return nil, fmt.Errorf("%w: it says size %d root %x, the log receipt proves size %d root %x", ErrCheckpoint, cp.Size, cp.Hash, lr.Inclusion[0].TreeSize, rootL)
	}
	v := &Verified{Chain: r.Chain, Seq: r.Seq, ContentType: st.ContentType, Record: st.Payload, Link: link,
		Seal: seal, LogIndex: lr.Inclusion[0].LeafIndex, TreeSize: cp.Size}
	if t.Policy != nil {
		res := t.Policy.Evaluate([]byte(r.Checkpoint), tlogpolicy.Freshness{})
		if len(res.Invalid) > 0 {
			return nil, fmt.Errorf("%w: the cosignature of %v does not verify", ErrWitnessQuorum, res.Invalid)
		}
		if !res.Satisfied {
			return nil, fmt.Errorf("%w: cosigned by %v; the policy wants %s", ErrWitnessQuorum, res.Cosigned, t.Policy.Describe())
		}
		v.Witnesses = res.Cosigned
	}
	return v, nil
}

// checkpoint parses a checkpoint signed by one of the pinned log keys for the pinned origin.
func (t *Trust) checkpoint(raw []byte) (*tlog.Checkpoint, error) {
	if len(t.LogKeys) == 0 {
		return nil, fmt.Errorf("%w: the trust pins no log key", ErrCheckpoint)
	}
	if err := canonicalSignatures(raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	var first error
	for _, k := range t.LogKeys {
		cp, _, _, err := tlog.ParseCheckpoint(raw, t.Origin, k)
		if err == nil {
			return cp, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, fmt.Errorf("%w: %w", ErrCheckpoint, first)
}

// canonicalSignatures refuses a note whose signature lines are not in canonical base64 (a
// lenient decoder ignores the padding bits of the last character, so two texts would carry
// one signature): every byte of a receipt is then either signed or checked.
func canonicalSignatures(raw []byte) error {
	_, sigs, ok := bytes.Cut(raw, []byte("\n\n"))
	if !ok {
		return errors.New("no signature lines")
	}
	for _, line := range bytes.Split(bytes.TrimSuffix(sigs, []byte("\n")), []byte("\n")) {
		i := bytes.LastIndexByte(line, ' ')
		if i < 0 {
			return fmt.Errorf("signature line %.80q malformed", line)
		}
		b64 := line[i+1:]
		sig, err := base64.StdEncoding.Strict().DecodeString(string(b64))
		if err != nil || base64.StdEncoding.EncodeToString(sig) != string(b64) {
			return fmt.Errorf("signature line %.80q is not in canonical base64", line)
		}
	}
	return nil
}

// onlyReceipts refuses a statement whose unprotected header holds anything but its receipts
// (394): no signature covers that header, so anything else there is a byte nothing checks.
func onlyReceipts(st *receipts.Statement) error {
	for _, l := range st.UnprotectedLabels() {
		if n, ok := l.(int64); !ok || n != receipts.HeaderReceipts {
			return fmt.Errorf("unprotected header label %v besides the receipts (394)", l)
		}
	}
	return nil
}
